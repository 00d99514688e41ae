package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/migrate"
)

type stored struct {
	subj, data string
	hdr        nats.Header
	t          time.Time
	// orig is the original time: t, or what jetctl's copy kept in a header.
	orig time.Time
}

// storedMsgs reads every message of stream name by sequence, headers as
// stored (mapped back from a copy when copied).
func storedMsgs(t *testing.T, js jetstream.JetStream, name string, copied bool) (map[uint64]stored, *jetstream.StreamInfo) {
	t.Helper()
	s, err := js.Stream(ctx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	si, err := s.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]stored{}
	for seq := si.State.FirstSeq; seq <= si.State.LastSeq && si.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx(t), seq)
		if err != nil {
			continue
		}
		orig := origTime(t, m)
		h := m.Header
		for _, k := range []string{"Nats-Stream", "Nats-Subject", "Nats-Sequence", "Nats-Time-Stamp"} {
			delete(h, k) // a direct get's (none is stored here)
		}
		if copied {
			h = migrate.DecodeHeader(h)
		}
		for k := range h {
			if strings.HasPrefix(k, "Nats-Expected-") {
				delete(h, k) // a publish's expectations: no copy keeps them
			}
		}
		if len(h) == 0 {
			h = nil
		}
		out[seq] = stored{m.Subject, string(m.Data), h, m.Time, orig}
	}
	return out, si
}

func sameStored(t *testing.T, want, got map[uint64]stored) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%d messages, want %d", len(got), len(want))
	}
	for seq, w := range want {
		g, ok := got[seq]
		if !ok {
			t.Errorf("seq %d missing", seq)
			continue
		}
		if g.subj != w.subj || g.data != w.data || !maps.EqualFunc(g.hdr, w.hdr, func(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			t.Errorf("seq %d: got %q %q %v, want %q %q %v", seq, g.subj, g.data, g.hdr, w.subj, w.data, w.hdr)
		}
	}
}

func TestClientCopyBetweenUnconnectedServers(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	src, err := sjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, AllowRollup: true, Duplicates: 100 * time.Millisecond, AllowDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	pub := func(subj, data string, h nats.Header) {
		t.Helper()
		if _, err := sjs.PublishMsg(ctx(t), &nats.Msg{Subject: subj, Data: []byte(data), Header: h}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 60; i++ {
		pub(fmt.Sprintf("orders.%d", i%5), fmt.Sprintf("order %d", i), nats.Header{"Trace": []string{fmt.Sprint("t", i)}})
	}
	// The same message ID twice, outside the duplicate window: both stored.
	pub("orders.id", "first", nats.Header{"Nats-Msg-Id": []string{"dup"}})
	time.Sleep(200 * time.Millisecond)
	pub("orders.id", "second", nats.Header{"Nats-Msg-Id": []string{"dup"}, "Jetctl-Orig-Nats-Msg-Id": []string{"earlier"}})
	// A rollup: orders.r's earlier messages go (gaps).
	pub("orders.r", "r1", nil)
	pub("orders.r", "r2", nil)
	pub("orders.r", "rolled", nats.Header{"Nats-Rollup": []string{"sub"}, "Nats-Expected-Stream": []string{"ORDERS"}})
	// Headers that look like the copy's own (a message copied before).
	pub("orders.x", "copied before", nats.Header{"Jetctl-Migrate-Time": []string{"2001-01-01T00:00:00Z"}, "Jetctl-Migrate-Renamed": []string{"Jetctl-Orig-Nats-TTL"}, "Jetctl-Orig-Nats-TTL": []string{"5s"}})
	for i := 1; i <= 20; i++ {
		pub("orders.tail", fmt.Sprintf("tail %d", i), nil)
	}
	for _, seq := range []uint64{1, 2, 10, 11, 12, 30, 84, 85, 86} { // 86: the last
		if err := src.DeleteMsg(ctx(t), seq); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := sjs.CreateOrUpdateConsumer(ctx(t), "ORDERS", jetstream.ConsumerConfig{Durable: "proj", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sjs.CreateOrUpdateConsumer(ctx(t), "ORDERS", jetstream.ConsumerConfig{Durable: "tail", FilterSubject: "orders.tail", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	b, err := cons.Fetch(40)
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if md, _ := m.Metadata(); md.Sequence.Stream <= 40 {
			if err := m.DoubleAck(ctx(t)); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, sinfo := storedMsgs(t, sjs, "ORDERS", false)
	srcTimes := map[uint64]time.Time{}
	for seq, m := range want {
		srcTimes[seq] = m.t
	}

	// Dry run: the summary, nothing made.
	sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Mechanism != "copy" || !sum.DryRun || sum.Messages != sinfo.State.Msgs || len(sum.Consumers) != 2 {
		t.Fatalf("dry run: %+v", sum)
	}
	if _, err := djs.Stream(ctx(t), "ORDERS"); err == nil {
		t.Fatal("the dry run made the target")
	}

	// The copy, verified, without a cutover; then the cutover.
	sum, err = migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS"})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Mechanism != "copy" || !sum.Verified || sum.Cutover {
		t.Fatalf("copy: %+v", sum)
	}
	pub("orders.tail", "late", nil)
	want, sinfo = storedMsgs(t, sjs, "ORDERS", false)
	sum, err = migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Verified || !sum.Cutover || sum.Digest == "" || sum.Messages != sinfo.State.Msgs || sum.LastSeq != sinfo.State.LastSeq {
		t.Fatalf("cutover: %+v", sum)
	}
	if _, err := sjs.Stream(ctx(t), "ORDERS"); err == nil {
		t.Fatal("the source is still there")
	}
	got, tinfo := storedMsgs(t, djs, "ORDERS", true)
	sameStored(t, want, got)
	if tinfo.State.FirstSeq != sinfo.State.FirstSeq || tinfo.State.LastSeq != sinfo.State.LastSeq {
		t.Fatalf("target seq %d..%d, source %d..%d", tinfo.State.FirstSeq, tinfo.State.LastSeq, sinfo.State.FirstSeq, sinfo.State.LastSeq)
	}
	if _, ok := tinfo.Config.Metadata["jetctl.migrate"]; ok || fmt.Sprint(tinfo.Config.Subjects) != "[orders.>]" || !tinfo.Config.AllowRollup || tinfo.Config.Duplicates != 100*time.Millisecond {
		t.Fatalf("target config: %+v", tinfo.Config)
	}
	// The original time is kept in a header.
	t1, err := djs.Stream(ctx(t), "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	m, err := t1.GetMsg(ctx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	// The server stores the copy's own expectation (docs/migrate.md).
	if v := m.Header["Nats-Expected-Last-Sequence"]; fmt.Sprint(v) != "[2]" {
		t.Fatalf("seq 3: Nats-Expected-Last-Sequence %v, want [2] (stored by the server)", v)
	}
	if ts, _ := time.Parse(time.RFC3339Nano, m.Header.Get(migrate.HeaderTime)); !ts.Equal(srcTimes[3]) {
		t.Fatalf("seq 3: %s %q, want %s", migrate.HeaderTime, m.Header.Get(migrate.HeaderTime), srcTimes[3])
	}
	// The consumers where they were; a publish continues the sequence.
	next := func(name string) uint64 {
		t.Helper()
		c, err := djs.Consumer(ctx(t), "ORDERS", name)
		if err != nil {
			t.Fatal(err)
		}
		ms := fetch(t, c, 1, 5*time.Second)
		if len(ms) != 1 {
			t.Fatalf("%s: no message", name)
		}
		return seqOf(t, ms[0])
	}
	if n := next("proj"); n != 41 {
		t.Fatalf("proj delivers seq %d next, want 41", n)
	}
	if n := next("tail"); n != 67 {
		t.Fatalf("tail delivers seq %d next, want 67", n)
	}
	ack, err := djs.Publish(ctx(t), "orders.new", []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Sequence != sinfo.State.LastSeq+1 {
		t.Fatalf("next publish at seq %d, want %d", ack.Sequence, sinfo.State.LastSeq+1)
	}
	// The message ID deduplicates on the target as usual.
	if _, err := djs.Publish(ctx(t), "orders.new", []byte("x"), jetstream.WithMsgID("n1")); err != nil {
		t.Fatal(err)
	}
	if a, err := djs.Publish(ctx(t), "orders.new", []byte("x"), jetstream.WithMsgID("n1")); err != nil || !a.Duplicate {
		t.Fatalf("dedup: %+v %v", a, err)
	}
}

func TestClientCopyKilledAndRunAgain(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	src, err := sjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 30000
	for i := 1; i <= n; i++ {
		if _, err := sjs.PublishAsync(fmt.Sprintf("orders.%d", i%100), []byte(fmt.Sprint("order ", i)), jetstream.WithMsgID(fmt.Sprint("id", i)), jetstream.WithStallWait(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		if i%2000 == 0 {
			<-sjs.PublishAsyncComplete()
		}
	}
	<-sjs.PublishAsyncComplete()
	for seq := uint64(5000); seq < 5100; seq++ {
		if err := src.DeleteMsg(ctx(t), seq); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sjs.CreateOrUpdateConsumer(ctx(t), "ORDERS", jetstream.ConsumerConfig{Durable: "proj", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	want, sinfo := storedMsgs(t, sjs, "ORDERS", false)

	// Killed (its context cancelled) in the middle of the copy.
	kctx, cancel := context.WithCancel(ctx(t))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for kctx.Err() == nil {
			if s, err := djs.Stream(kctx, "ORDERS"); err == nil && s.CachedInfo().State.Msgs > 8000 {
				cancel()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	_, err = migrate.Stream(kctx, migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true})
	cancel()
	<-done
	if err == nil {
		t.Fatal("the killed run finished")
	}
	mid := streamInfo(t, djs, "ORDERS")
	if mid.State.Msgs == 0 || mid.State.Msgs >= sinfo.State.Msgs {
		t.Fatalf("killed with %d of %d messages copied", mid.State.Msgs, sinfo.State.Msgs)
	}
	t.Logf("killed with %d messages copied", mid.State.Msgs)
	// A lease held by this host's dead run is taken over at once.
	sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Resumed || !sum.Verified || sum.Messages != sinfo.State.Msgs {
		t.Fatalf("rerun: %+v", sum)
	}
	got, tinfo := storedMsgs(t, djs, "ORDERS", true)
	sameStored(t, want, got)
	if tinfo.State.LastSeq != n || tinfo.State.NumDeleted != 100 {
		t.Fatalf("target: %+v", tinfo.State)
	}
}

func TestClientCopyRefusesAnExistingTarget(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	if _, err := sjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := djs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	_, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true})
	if err == nil || !errors.Is(err, migrate.ErrTargetExists) {
		t.Fatalf("err = %v, want ErrTargetExists", err)
	}
}

func TestClientCopyRetentionsAndPositions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention jetstream.RetentionPolicy
		to        jetstream.RetentionPolicy
	}{
		{"limits-to-workqueue", jetstream.LimitsPolicy, jetstream.WorkQueuePolicy},
		{"workqueue-to-limits", jetstream.WorkQueuePolicy, jetstream.LimitsPolicy},
		{"interest-to-interest", jetstream.InterestPolicy, jetstream.InterestPolicy},
		{"limits-to-interest", jetstream.LimitsPolicy, jetstream.InterestPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sjs := embeddedtest.JetStream(t)
			djs := embeddedtest.JetStream(t)
			src, err := sjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Retention: tc.retention, MaxMsgs: 1000})
			if err != nil {
				t.Fatal(err)
			}
			c, err := sjs.CreateOrUpdateConsumer(ctx(t), "ORDERS", jetstream.ConsumerConfig{Durable: "proj", AckPolicy: jetstream.AckExplicitPolicy})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 100; i++ {
				if _, err := sjs.Publish(ctx(t), fmt.Sprintf("orders.%d", i%7), []byte(fmt.Sprintf("order %d", i))); err != nil {
					t.Fatal(err)
				}
			}
			if tc.retention == jetstream.LimitsPolicy {
				_ = src.DeleteMsg(ctx(t), 50)
				_ = src.DeleteMsg(ctx(t), 100)
			}
			b, err := c.Fetch(45)
			if err != nil {
				t.Fatal(err)
			}
			for m := range b.Messages() {
				if md, _ := m.Metadata(); md.Sequence.Stream <= 40 {
					if err := m.DoubleAck(ctx(t)); err != nil {
						t.Fatal(err)
					}
				}
			}
			want, sinfo := storedMsgs(t, sjs, "ORDERS", false)
			tcfg := src.CachedInfo().Config
			tcfg.Retention = tc.to
			tcfg.Storage = jetstream.MemoryStorage
			sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", TargetConfig: &tcfg, Cutover: true})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Mechanism != "copy" || !sum.Verified {
				t.Fatalf("summary %+v", sum)
			}
			got, tinfo := storedMsgs(t, djs, "ORDERS", true)
			if tc.to == jetstream.InterestPolicy {
				for seq := range want {
					if seq <= 40 {
						delete(want, seq)
					}
				}
			}
			sameStored(t, want, got)
			if tinfo.Config.Retention != tc.to || tinfo.Config.Storage != jetstream.MemoryStorage || tinfo.Config.MaxMsgs != 1000 {
				t.Errorf("config %+v", tinfo.Config)
			}
			ms := fetch(t, mustConsumer(t, djs, "ORDERS", "proj"), 1, 5*time.Second)
			if len(ms) != 1 || seqOf(t, ms[0]) != 41 {
				t.Fatalf("proj next: %v", seqs(t, ms))
			}
			ack, err := djs.Publish(ctx(t), "orders.x", []byte("after"))
			if err != nil {
				t.Fatal(err)
			}
			if ack.Sequence != sinfo.State.LastSeq+1 {
				t.Errorf("publish after at seq %d, want %d", ack.Sequence, sinfo.State.LastSeq+1)
			}
		})
	}
}

func mustConsumer(t *testing.T, js jetstream.JetStream, stream, name string) jetstream.Consumer {
	t.Helper()
	c, err := js.Consumer(ctx(t), stream, name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A target that differs at the cutover (a message lost from it): exit 4,
// the source gets its subjects and consumers back.
func TestClientCopyVerifyFailureGivesTheSourceBack(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	if _, err := sjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sjs.CreateOrUpdateConsumer(ctx(t), "ORDERS", jetstream.ConsumerConfig{Durable: "proj", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	publish(t, sjs, "orders.new", 50)
	_, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true, AtStep: func(step string) {
		if step == "held" {
			s, err := djs.Stream(ctx(t), "ORDERS")
			if err != nil {
				t.Error(err)
				return
			}
			if err := s.DeleteMsg(ctx(t), 10); err != nil {
				t.Error(err)
			}
		}
	}})
	var ve *migrate.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a VerifyError", err)
	}
	// The first difference by its sequence, the counts after it.
	if want := "seq 10 is missing (49 messages, the source 50)"; ve.What != want {
		t.Errorf("verify error says %q, want %q", ve.What, want)
	}
	// The same name on two servers: each side named with its server.
	if want := "ORDERS on " + sjs.Conn().ConnectedUrlRedacted(); ve.Source != want || !strings.HasPrefix(ve.Target, "ORDERS on ") || ve.Source == ve.Target {
		t.Errorf("verify error names %q and %q, want %q and the target's server", ve.Source, ve.Target, want)
	}
	si := streamInfo(t, sjs, "ORDERS")
	if fmt.Sprint(si.Config.Subjects) != "[orders.>]" || si.State.Msgs != 50 {
		t.Fatalf("source: %v, %d messages", si.Config.Subjects, si.State.Msgs)
	}
	if ci := consumerInfo(t, sjs, "ORDERS", "proj"); ci.Paused {
		t.Fatal("the source's consumer is still paused")
	}
}

// A copy begun while the servers had no route is not continued as a
// mirror once they have one: refused, nothing changed.
func TestMirrorMoveRefusesACopyTarget(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS2", Subjects: []string{"o2.>"},
		Metadata: map[string]string{"jetctl.migrate": `{"source":"ORDERS","phase":"copying","mechanism":"copy"}`}}); err != nil {
		t.Fatal(err)
	}
	_, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: js}, migrate.Endpoint{JS: js}, migrate.Config{Stream: "ORDERS", Target: "ORDERS2", Cutover: true})
	if !errors.Is(err, migrate.ErrTargetExists) {
		t.Fatalf("err = %v, want ErrTargetExists", err)
	}
}

// A publisher keeps writing to the source through the copy and the
// cutover (retrying while the subjects are held) and moves to the
// target's server once the move is done: every message acknowledged is on
// the target, at the sequence it was acknowledged with.
func TestClientCopyWhilePublishing(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	if _, err := sjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, sjs, "orders.old", 3000)
	type acked struct {
		seq  uint64
		data string
	}
	var got []acked
	moved := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		js := sjs
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			case <-moved:
				js, moved = djs, nil
			default:
			}
			data := fmt.Sprint("live ", i)
			pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			ack, err := js.Publish(pctx, "orders.live", []byte(data))
			cancel()
			if err != nil {
				time.Sleep(2 * time.Millisecond) // no stream while held: retry
				i--
				continue
			}
			got = append(got, acked{ack.Sequence, data})
		}
	}()
	time.Sleep(50 * time.Millisecond)
	sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true})
	if err != nil {
		close(stop)
		<-done
		t.Fatal(err)
	}
	close(moved)
	time.Sleep(50 * time.Millisecond)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("summary: %d messages, outage %s; %d acknowledged live", sum.Messages, sum.WriteOutage, len(got))
	s, err := djs.Stream(ctx(t), "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	if si, _ := s.Info(ctx(t)); si.State.Msgs != uint64(3000+len(got)) {
		t.Fatalf("target holds %d messages, want %d", si.State.Msgs, 3000+len(got))
	}
	for _, a := range got {
		m, err := s.GetMsg(ctx(t), a.seq)
		if err != nil || string(m.Data) != a.data {
			t.Fatalf("seq %d: %v %q, want %q", a.seq, err, dataOf(m), a.data)
		}
	}
}

func dataOf(m *jetstream.RawStreamMsg) string {
	if m == nil {
		return ""
	}
	return string(m.Data)
}

// A client that publishes to the target before the cutover takes a
// sequence of the source's: the move stops with a verification error and
// the source keeps its subjects.
func TestClientCopyStrayWriterOnTheTarget(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	if _, err := sjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, sjs, "orders.a", 20)
	if _, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS"}); err != nil {
		t.Fatal(err)
	}
	if _, err := djs.Publish(ctx(t), "orders.a", []byte("stray")); err != nil {
		t.Fatal(err)
	}
	publish(t, sjs, "orders.a", 5)
	_, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true})
	var ve *migrate.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a VerifyError", err)
	}
	t.Log(err)
	if si := streamInfo(t, sjs, "ORDERS"); fmt.Sprint(si.Config.Subjects) != "[orders.>]" || si.State.Msgs != 25 {
		t.Fatalf("source: %v, %d messages", si.Config.Subjects, si.State.Msgs)
	}
}

// A KV bucket's stream copied to a server with no route works there
// through the KV API: values, deleted and purged keys, history, new puts.
func TestClientCopyKVBucket(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	kv, err := sjs.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "cfg", History: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		for _, k := range []string{"a", "b", "c"} {
			if _, err := kv.PutString(ctx(t), k, fmt.Sprint(k, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := kv.Delete(ctx(t), "b"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx(t), "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "KV_cfg", Cutover: true}); err != nil {
		t.Fatal(err)
	}
	dkv, err := djs.KeyValue(ctx(t), "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := dkv.Get(ctx(t), "a"); err != nil || string(e.Value()) != "a3" || e.Revision() != 7 {
		t.Fatalf("a: %v %v", e, err)
	}
	for _, k := range []string{"b", "c"} {
		if _, err := dkv.Get(ctx(t), k); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Fatalf("%s: %v, want not found", k, err)
		}
	}
	if h, err := dkv.History(ctx(t), "a"); err != nil || len(h) != 3 {
		t.Fatalf("history of a: %d entries, %v", len(h), err)
	}
	if h, err := dkv.History(ctx(t), "c"); err != nil || len(h) != 1 || h[0].Operation() != jetstream.KeyValuePurge {
		t.Fatalf("history of c: %v %v", h, err)
	}
	if rev, err := dkv.Update(ctx(t), "a", []byte("a4"), 7); err != nil || rev != 12 {
		t.Fatalf("update at revision 7: %d %v", rev, err)
	}
	if si := streamInfo(t, djs, "KV_cfg"); !si.Config.DenyDelete || si.Config.MaxMsgsPerSubject != 5 || !si.Config.AllowRollup {
		t.Fatalf("config %+v", si.Config)
	}
}

// The settings held back while copying (limits, subject delete markers)
// come with the cutover.
func TestClientCopyRestoresLimitsAndMarkers(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	cfg := jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, AllowMsgTTL: true, SubjectDeleteMarkerTTL: time.Minute,
		MaxAge: time.Hour, MaxMsgs: 100, MaxMsgsPerSubject: 10, MaxBytes: 1 << 20, MaxMsgSize: 1024, Discard: jetstream.DiscardNew}
	if _, err := sjs.CreateStream(ctx(t), cfg); err != nil {
		t.Fatal(err)
	}
	publish(t, sjs, "orders.a", 10)
	if _, err := sjs.Publish(ctx(t), "orders.b", []byte("ttl"), jetstream.WithMsgTTL(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true}); err != nil {
		t.Fatal(err)
	}
	c := streamInfo(t, djs, "ORDERS").Config
	if !c.AllowMsgTTL || c.SubjectDeleteMarkerTTL != time.Minute || c.MaxAge != time.Hour || c.MaxMsgs != 100 || c.MaxMsgsPerSubject != 10 ||
		c.MaxBytes != 1<<20 || c.MaxMsgSize != 1024 || c.Discard != jetstream.DiscardNew || fmt.Sprint(c.Subjects) != "[orders.>]" {
		t.Fatalf("config %+v", c)
	}
}

// A publish's expectations (Nats-Expected-*) are checked when the source
// stores the message: jetctl's copy drops them, as a mirror does, under no
// name (not renamed Jetctl-Orig-Nats-Expected-*), and the verification
// leaves them out on both sides.
func TestClientCopyDropsExpectations(t *testing.T) {
	sjs := embeddedtest.JetStream(t)
	djs := embeddedtest.JetStream(t)
	if _, err := sjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sjs.PublishMsg(ctx(t), &nats.Msg{Subject: "orders.a", Data: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := sjs.PublishMsg(ctx(t), &nats.Msg{Subject: "orders.a", Data: []byte("2"), Header: nats.Header{"Trace": []string{"t"}}}, jetstream.WithExpectLastSequencePerSubject(1)); err != nil {
		t.Fatal(err)
	}
	s, err := sjs.Stream(ctx(t), "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.GetMsg(ctx(t), 2); err != nil || m.Header.Get("Nats-Expected-Last-Subject-Sequence") != "1" {
		t.Fatalf("the source stores the expectation: %v %v", m, err)
	}
	sum, err := migrate.Stream(ctx(t), migrate.Endpoint{JS: sjs}, migrate.Endpoint{JS: djs}, migrate.Config{Stream: "ORDERS", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Mechanism != "copy" || !sum.Verified {
		t.Fatalf("move: %+v", sum)
	}
	d, err := djs.Stream(ctx(t), "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.GetMsg(ctx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	for k := range m.Header {
		if strings.Contains(k, "Expected-Last-Subject-Sequence") {
			t.Errorf("the copy keeps %s: %v", k, m.Header)
		}
	}
	if m.Header.Get("Trace") != "t" || m.Header.Get(migrate.HeaderRenamed) != "" {
		t.Errorf("copy's headers: %v", m.Header)
	}
}

// The summary's bytes are one figure: what the source stores (its stream
// state's bytes), the same for the run that copies and the run that cuts
// over, although jetctl's copy stores more (its headers).
func TestSummaryBytesAreTheSources(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if _, err := js.Publish(ctx(t), fmt.Sprintf("jobs.%d", i%3), []byte("job")); err != nil {
			t.Fatal(err)
		}
	}
	s, err := js.Stream(ctx(t), "JOBS")
	if err != nil {
		t.Fatal(err)
	}
	si, err := s.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	ep := migrate.Endpoint{JS: js}
	dry, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "JOBS", Target: "JOBS2", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	copied, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "JOBS", Target: "JOBS2"})
	if err != nil {
		t.Fatal(err)
	}
	moved, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "JOBS", Target: "JOBS2", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	again, err := migrate.Stream(ctx(t), ep, ep, migrate.Config{Stream: "JOBS", Target: "JOBS2", Cutover: true})
	if err != nil {
		t.Fatal(err)
	}
	if copied.Mechanism != "copy" || !again.AlreadyDone {
		t.Fatalf("copy %+v, again %+v", copied, again)
	}
	for what, sum := range map[string]*migrate.Summary{"dry run": dry, "copy": copied, "cutover": moved, "rerun": again} {
		if sum.Bytes != si.State.Bytes || sum.Messages != si.State.Msgs {
			t.Errorf("%s: %d messages, %d bytes; the source stores %d, %d bytes", what, sum.Messages, sum.Bytes, si.State.Msgs, si.State.Bytes)
		}
	}
	t2, err := js.Stream(ctx(t), "JOBS2")
	if err != nil {
		t.Fatal(err)
	}
	if ti, err := t2.Info(ctx(t)); err != nil || ti.State.Bytes == si.State.Bytes {
		t.Fatalf("the copy stores as many bytes as the source (%v): the test shows nothing", err)
	}
}
