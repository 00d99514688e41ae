package harness

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// every-header STREAM
//
// Makes stream STREAM (subjects STREAM.>) carry every kind of header the
// 2.11–2.15 server acts on or writes (docs/headers.md), each on its own
// subject, stored the way the server stores it:
//
//	STREAM.id      Nats-Msg-Id and Nats-Expected-Stream
//	STREAM.roll    a Nats-Rollup: sub after two plain messages (which it purges)
//	STREAM.ttl     Nats-TTL: 1h
//	STREAM.marker  Nats-Marker-Reason: Remove, as a client sends it
//	STREAM.batch   an atomic batch of two, committed
//	STREAM_SCHED.sched  a schedule (@every 1h), sourced from STREAM_SCHED
//	STREAM_SCHED.fired  what a one-off schedule generated (Nats-Scheduler,
//	               Nats-Schedule-Next: purge), sourced from STREAM_SCHED
//	STREAM.trace   Nats-Trace-Dest (the server stores it disabled)
//	STREAM.level   Nats-Required-Api-Level: 2
//	STREAM.plain   App-Trace only, a header no server reads
//	STREAM_SRC.a   sourced from stream STREAM_SRC: Nats-Stream-Source
//
// The stream allows rollups, TTLs, atomic batches and direct gets, and
// sources STREAM_SRC and STREAM_SCHED (which allows schedules: the server
// refuses them on a stream that sources, 10187). A sourced message carries
// Nats-Stream-Source too. It waits until every message is stored
// and prints each subject with its sequence and header names. Counters
// (Nats-Incr, Nats-Counter-Sources) need a stream of their own; see
// counter-stream.
func cmdEveryHeader(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: every-header STREAM")
	}
	name := args[0]
	nc, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	_, err := js.CreateStream(c, jetstream.StreamConfig{Name: name + "_SRC", Subjects: []string{name + "_SRC.>"}})
	ts.Check(err)
	// The server refuses schedules on a stream that sources (10187): the
	// schedules are made in a stream of their own and sourced.
	_, err = js.CreateStream(c, jetstream.StreamConfig{Name: name + "_SCHED", Subjects: []string{name + "_SCHED.>"}, AllowMsgSchedules: true})
	ts.Check(err)
	s, err := js.CreateStream(c, jetstream.StreamConfig{
		Name: name, Subjects: []string{name + ".>"},
		AllowRollup: true, AllowMsgTTL: true, AllowAtomicPublish: true, AllowDirect: true,
		Sources: []*jetstream.StreamSource{{Name: name + "_SRC"}, {Name: name + "_SCHED"}},
	})
	ts.Check(err)
	pub := func(subject string, h nats.Header, data string) {
		_, err := js.PublishMsg(c, &nats.Msg{Subject: subject, Header: h, Data: []byte(data)})
		if err != nil {
			ts.Fatalf("every-header: publish %s %v: %v", subject, h, err)
		}
	}
	pub(name+".id", nats.Header{"Nats-Msg-Id": {"id-1"}, "Nats-Expected-Stream": {name}}, "with an id")
	pub(name+".roll", nil, "rolled up 1")
	pub(name+".roll", nil, "rolled up 2")
	pub(name+".roll", nats.Header{"Nats-Rollup": {"sub"}}, "the rollup")
	pub(name+".ttl", nats.Header{"Nats-TTL": {"1h"}}, "expires in an hour")
	pub(name+".marker", nats.Header{"Nats-Marker-Reason": {"Remove"}}, "")
	// An atomic batch: the server answers the commit only.
	ts.Check(nc.PublishMsg(&nats.Msg{Subject: name + ".batch", Header: nats.Header{"Nats-Batch-Id": {"b1"}, "Nats-Batch-Sequence": {"1"}}, Data: []byte("batch 1")}))
	reply, err := nc.RequestMsg(&nats.Msg{Subject: name + ".batch", Header: nats.Header{"Nats-Batch-Id": {"b1"}, "Nats-Batch-Sequence": {"2"}, "Nats-Batch-Commit": {"1"}}, Data: []byte("batch 2")}, 10*time.Second)
	ts.Check(err)
	var ack struct {
		Seq   uint64 `json:"seq"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	ts.Check(json.Unmarshal(reply.Data, &ack))
	if ack.Error != nil || ack.Seq == 0 {
		ts.Fatalf("every-header: batch commit: %s", reply.Data)
	}
	pub(name+"_SCHED.sched", nats.Header{"Nats-Schedule": {"@every 1h"}, "Nats-Schedule-Target": {name + "_SCHED.tick"}}, "every hour")
	at := time.Now().Add(time.Second).UTC().Format(time.RFC3339)
	pub(name+"_SCHED.once", nats.Header{"Nats-Schedule": {"@at " + at}, "Nats-Schedule-Target": {name + "_SCHED.fired"}}, "once")
	pub(name+".trace", nats.Header{"Nats-Trace-Dest": {"trace.out"}}, "traced")
	pub(name+".level", nats.Header{"Nats-Required-Api-Level": {"2"}}, "needs level 2")
	pub(name+".plain", nats.Header{"App-Trace": {"t-1"}}, "plain")
	pub(name+"_SRC.a", nil, "sourced")
	// The one-off schedule fires (and purges itself), the source is read.
	want := []string{name + "_SCHED.sched", name + "_SCHED.fired", name + "_SRC.a"}
	deadline := time.Now().Add(30 * time.Second)
	for _, subject := range want {
		for {
			if _, err := s.GetLastMsgForSubject(c, subject); err == nil {
				break
			}
			if time.Now().After(deadline) {
				ts.Fatalf("every-header: %s not stored after 30s", subject)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	info, err := s.Info(c)
	ts.Check(err)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(c, seq)
		if err != nil {
			continue
		}
		var names []string
		for k := range m.Header {
			switch k {
			case "Nats-Stream", "Nats-Sequence", "Nats-Subject", "Nats-Time-Stamp":
				// Direct get's own (allow_direct), not stored.
				continue
			}
			names = append(names, k)
		}
		slices.Sort(names)
		fmt.Fprintf(ts.Stdout(), "%d %s %v\n", seq, m.Subject, names)
	}
}

// counter-stream STREAM
//
// Makes counter stream STREAM (allow_msg_counter, subjects STREAM.>) with
// two subjects: STREAM.a incremented by 2 and 3 (total 5), STREAM.b by 7;
// and STREAM_SUM, a counter stream sourcing it, which stores each of the
// three increments again with Nats-Counter-Sources (the source's totals).
func cmdCounterStream(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: counter-stream STREAM")
	}
	name := args[0]
	_, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	_, err := js.CreateStream(c, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, AllowMsgCounter: true, AllowDirect: true})
	ts.Check(err)
	for _, inc := range []struct{ subject, by string }{{".a", "2"}, {".a", "3"}, {".b", "7"}} {
		if _, err := js.PublishMsg(c, &nats.Msg{Subject: name + inc.subject, Header: nats.Header{"Nats-Incr": {inc.by}}}); err != nil {
			ts.Fatalf("counter-stream: increment %s: %v", inc.subject, err)
		}
	}
	sum, err := js.CreateStream(c, jetstream.StreamConfig{Name: name + "_SUM", AllowMsgCounter: true, AllowDirect: true,
		Sources: []*jetstream.StreamSource{{Name: name}}})
	ts.Check(err)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if info, err := sum.Info(c); err == nil && info.State.Msgs == 3 {
			break
		}
		if time.Now().After(deadline) {
			info, err := sum.Info(c)
			b, _ := json.Marshal(info)
			ts.Fatalf("counter-stream: %s_SUM did not source the 3 increments in 30s: %s %v", name, b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
