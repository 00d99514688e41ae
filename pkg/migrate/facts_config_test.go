package migrate_test

// What the 2.15 server accepts in a mirror's config and in the update
// that promotes it, what a mirror does with per-message TTLs, how a
// counter stream can be copied, and the consumers through which a stream
// sources another: the facts the mirror's config (mirrorConfig), the
// counter way (counter.go), jetctl's copy of TTLs and the downstream
// sourcing streams (downstream.go) are built on.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// apiCode is err's JetStream API error code, 0 for none.
func apiCode(err error) jetstream.ErrorCode {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode
	}
	return 0
}

// A mirror refuses allow_msg_counter (10173), allow_atomic (10198),
// allow_batched (10209), allow_msg_schedules (10186) and
// subject_delete_marker_ttl (10052, "subject delete markers forbidden on
// mirrors"); it takes allow_msg_ttl and persist_mode async. The update that
// promotes it (mirror removed, subjects added) may turn on allow_atomic,
// allow_batched, allow_msg_schedules and subject_delete_marker_ttl, but not
// allow_msg_counter (10052: the counter setting cannot change) nor
// persist_mode (10052): those two must be right when the target is created.
func TestFactMirrorConfigRefusals(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	publish(t, js, "s.a", 3)
	for _, f := range []struct {
		flag string
		set  func(*jetstream.StreamConfig)
		// mirror is the code a mirror with the flag is refused with, 0
		// when it is taken; promotion is the code of a promotion that
		// turns the flag on, 0 when it is taken.
		mirror, promotion jetstream.ErrorCode
	}{
		{"allow_msg_counter", func(c *jetstream.StreamConfig) { c.AllowMsgCounter = true }, 10173, 10052},
		{"allow_atomic", func(c *jetstream.StreamConfig) { c.AllowAtomicPublish = true }, 10198, 0},
		{"allow_batched", func(c *jetstream.StreamConfig) { c.AllowBatchPublish = true }, 10209, 0},
		{"allow_msg_schedules", func(c *jetstream.StreamConfig) { c.AllowMsgSchedules = true }, 10186, 0},
		{"subject_delete_marker_ttl", func(c *jetstream.StreamConfig) { c.SubjectDeleteMarkerTTL = time.Minute }, 10052, 0},
		{"allow_msg_ttl", func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true }, 0, 0},
		{"persist_mode", func(c *jetstream.StreamConfig) { c.PersistMode = jetstream.AsyncPersistMode }, 0, 10052},
	} {
		t.Run(f.flag, func(t *testing.T) {
			name := "M_" + strings.ToUpper(f.flag)
			mc := jetstream.StreamConfig{Name: name, Mirror: &jetstream.StreamSource{Name: "SRC"}}
			f.set(&mc)
			m, err := js.CreateStream(ctx(t), mc)
			if got := apiCode(err); got != f.mirror || (f.mirror == 0 && err != nil) {
				t.Fatalf("a mirror with %s: %v, want error %d", f.flag, err, f.mirror)
			}
			if err == nil {
				waitMirror(t, m, 3)
				if err := js.DeleteStream(ctx(t), name); err != nil {
					t.Fatal(err)
				}
			}
			// Without the flag, then promoted with it, onto subjects of
			// its own.
			m, err = js.CreateStream(ctx(t), jetstream.StreamConfig{Name: name, Mirror: &jetstream.StreamSource{Name: "SRC"}})
			if err != nil {
				t.Fatal(err)
			}
			waitMirror(t, m, 3)
			pc := m.CachedInfo().Config
			pc.Mirror, pc.Subjects = nil, []string{"p." + name + ".>"}
			f.set(&pc)
			si, err := js.UpdateStream(ctx(t), pc)
			if got := apiCode(err); got != f.promotion || (f.promotion == 0 && err != nil) {
				t.Fatalf("a promotion turning %s on: %v, want error %d", f.flag, err, f.promotion)
			}
			if err == nil {
				got := si.CachedInfo().Config
				want := got
				f.set(&want)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("promoted with %s: config %+v does not have it", f.flag, got)
				}
				if n := si.CachedInfo().State.Msgs; n != 3 {
					t.Fatalf("promoted: %d messages, want 3", n)
				}
			}
		})
	}
}

// A mirror copies a message's Nats-TTL as it is stored. With allow_msg_ttl
// it honours it (the copy goes once its TTL is up, as the origin's does);
// without, it keeps the header and the message for good.
func TestFactMirrorKeepsAndHonoursTTL(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "SRC", Subjects: []string{"s.>"}, AllowMsgTTL: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "s.short", Header: nats.Header{"Nats-TTL": {"2s"}}, Data: []byte("short")}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "s.long", Header: nats.Header{"Nats-TTL": {"1h"}}, Data: []byte("long")}); err != nil {
		t.Fatal(err)
	}
	honours, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "TTL_ON", AllowMsgTTL: true, Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatalf("a mirror with allow_msg_ttl: %v", err)
	}
	keeps, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "TTL_OFF", Mirror: &jetstream.StreamSource{Name: "SRC"}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, honours, 2)
	waitMirror(t, keeps, 2)
	for _, s := range []jetstream.Stream{honours, keeps} {
		m, err := s.GetMsg(ctx(t), 1)
		if err != nil {
			t.Fatalf("%s seq 1: %v", s.CachedInfo().Config.Name, err)
		}
		if got := m.Header.Get("Nats-TTL"); got != "2s" {
			t.Fatalf("%s: Nats-TTL %q, want 2s as stored", s.CachedInfo().Config.Name, got)
		}
	}
	gone := func(s jetstream.Stream) bool {
		_, err := s.GetMsg(ctx(t), 1)
		return errors.Is(err, jetstream.ErrMsgNotFound)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !gone(src) || !gone(honours) {
		if time.Now().After(deadline) {
			t.Fatalf("seq 1 (Nats-TTL 2s) still in the origin (%v) or the mirror with allow_msg_ttl (%v) after 20 s", !gone(src), !gone(honours))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if gone(keeps) {
		t.Fatal("the mirror without allow_msg_ttl removed seq 1: it honours Nats-TTL")
	}
	for _, s := range []jetstream.Stream{src, honours, keeps} {
		if _, err := s.GetMsg(ctx(t), 2); err != nil {
			t.Fatalf("%s: seq 2 (Nats-TTL 1h): %v", s.CachedInfo().Config.Name, err)
		}
	}
}

// fastBatch publishes msgs to subject as one fast batch (allow_batched):
// the batch is in the reply subject, <inbox>.<id>.<flow>.<gap>.<seq>.<op>.$FI,
// not in headers. It returns the commit's acknowledgement.
func fastBatch(t *testing.T, nc *nats.Conn, subject, id string, msgs ...string) (seq uint64) {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox + ".>")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	for i, data := range msgs {
		op := 1 // append
		switch {
		case i == len(msgs)-1:
			op = 2 // commit
		case i == 0:
			op = 0 // start
		}
		reply := fmt.Sprintf("%s.%s.%d.fail.%d.%d.$FI", inbox, id, 100, i+1, op)
		if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("fast batch %s: no acknowledgement of its commit: %v", id, err)
		}
		var ack struct {
			Seq   uint64          `json:"seq"`
			Batch string          `json:"batch"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(m.Data, &ack) != nil {
			continue
		}
		if len(ack.Error) > 0 {
			t.Fatalf("fast batch %s: %s", id, m.Data)
		}
		if ack.Seq > 0 {
			return ack.Seq
		}
	}
	t.Fatalf("fast batch %s: no acknowledgement of its commit", id)
	return 0
}

// A fast batch (allow_batched) is stored as plain messages: no Nats-Batch-*
// header (the batch travels in the reply subject). A mirror without
// allow_batched copies them, and its promotion turns allow_batched on.
func TestFactFastBatchStoredPlain(t *testing.T) {
	js := embeddedtest.JetStream(t)
	s, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "FB", Subjects: []string{"fb.>"}, AllowBatchPublish: true})
	if err != nil {
		t.Fatal(err)
	}
	if seq := fastBatch(t, js.Conn(), "fb.a", "b1", "one", "two", "three"); seq != 3 {
		t.Fatalf("commit acknowledged at seq %d, want 3", seq)
	}
	for seq := uint64(1); seq <= 3; seq++ {
		m, err := s.GetMsg(ctx(t), seq)
		if err != nil {
			t.Fatal(err)
		}
		for k := range m.Header {
			if strings.HasPrefix(k, "Nats-Batch") {
				t.Fatalf("seq %d stored with %s: %v", seq, k, m.Header)
			}
		}
	}
}

// A counter stream (allow_msg_counter) cannot be mirrored (10173), but a
// counter stream can source one: it stores each message it sources again,
// under its own sequences, with the origin's payload (the subject's total:
// it applies the difference from the last total it had from that origin,
// so with one source its total is the origin's), Nats-Incr set to that
// difference, Nats-Counter-Sources {"<origin>":{"<subject>":"<total>"}}
// and Nats-Stream-Source "<origin> <origin seq> ...". A gap in the origin is
// a gap in nothing: the sourced stream renumbers (created with the
// origin's first sequence as first_seq, it keeps the sequences only where
// the origin has no gaps). A message of the sourced stream deleted does not
// change what the next sourced message stores. Promoted (the source
// removed, subjects added), it takes increments on from the totals. A
// stream that is not a counter stores what it sources as it is (Nats-Incr
// and the total), and can never become a counter stream (10052).
func TestFactCounterSourced(t *testing.T) {
	js := embeddedtest.JetStream(t)
	src, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "C", Subjects: []string{"c.>"}, AllowMsgCounter: true})
	if err != nil {
		t.Fatal(err)
	}
	incr := func(subject, by string) uint64 {
		t.Helper()
		ack, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: subject, Header: nats.Header{"Nats-Incr": {by}}})
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	incr("c.a", "2")
	incr("c.a", "+3")
	incr("c.b", "7")
	incr("c.a", "-1")
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "CM", AllowMsgCounter: true, Mirror: &jetstream.StreamSource{Name: "C"}}); apiCode(err) != 10173 {
		t.Fatalf("a counter mirror of a counter stream: %v, want error 10173", err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "PM", Mirror: &jetstream.StreamSource{Name: "C"}}); err != nil {
		t.Fatalf("a plain mirror of a counter stream: %v", err)
	}
	// A gap: seq 2 deleted before it is sourced.
	if err := src.DeleteMsg(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	cs, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "CS", AllowMsgCounter: true, Sources: []*jetstream.StreamSource{{Name: "C"}}})
	if err != nil {
		t.Fatalf("a counter stream sourcing a counter stream: %v", err)
	}
	waitMirror(t, cs, 3)
	type sourced struct {
		subject, val, incr, counterSources, from string
	}
	read := func(s jetstream.Stream, seq uint64) sourced {
		t.Helper()
		m, err := s.GetMsg(ctx(t), seq)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		return sourced{m.Subject, string(m.Data), m.Header.Get("Nats-Incr"), m.Header.Get("Nats-Counter-Sources"), m.Header.Get("Nats-Stream-Source")}
	}
	for i, want := range []struct {
		seq                    uint64
		subject, val, incr, cs string
		from                   string
	}{
		{1, "c.a", `{"val":"2"}`, "2", `{"C":{"c.a":"2"}}`, "C 1 "},
		{2, "c.b", `{"val":"7"}`, "7", `{"C":{"c.b":"7"}}`, "C 3 "},
		{3, "c.a", `{"val":"4"}`, "2", `{"C":{"c.a":"4"}}`, "C 4 "},
	} {
		got := read(cs, want.seq)
		if got.subject != want.subject || got.val != want.val || got.incr != want.incr || got.counterSources != want.cs || !strings.HasPrefix(got.from, want.from) {
			t.Errorf("sourced #%d: %+v, want %+v", i, got, want)
		}
		// The origin's payload, message by message.
		seq, _ := strconv.ParseUint(strings.Fields(got.from)[1], 10, 64)
		if o := read(src, seq); o.val != got.val || o.subject != got.subject {
			t.Errorf("sourced #%d: %s %s, the origin's seq %d %s %s", i, got.subject, got.val, seq, o.subject, o.val)
		}
	}
	// The sourced stream's last message on c.a deleted: the next one
	// sourced still stores the origin's total.
	if err := cs.DeleteMsg(ctx(t), 3); err != nil {
		t.Fatal(err)
	}
	incr("c.a", "10")
	waitMirror(t, cs, 4)
	if got := read(cs, 4); got.val != `{"val":"14"}` || got.incr != "12" {
		t.Fatalf("after deleting the sourced stream's last c.a: %+v, want the origin's total 14 (Nats-Incr 12 from the total 2 it still holds)", got)
	}
	// Sequences kept where the origin has no gaps: first_seq.
	cf, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "CF", AllowMsgCounter: true, FirstSeq: 3, Sources: []*jetstream.StreamSource{{Name: "C", OptStartSeq: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, cf, 5)
	for _, seq := range []uint64{3, 4, 5} {
		if got := read(cf, seq); !strings.HasPrefix(got.from, fmt.Sprintf("C %d ", seq)) {
			t.Errorf("first_seq 3, no gaps from 3: seq %d sourced from %q", seq, got.from)
		}
	}
	// Promoted: the source removed, the subjects added; increments go on
	// from the totals.
	if err := js.DeleteStream(ctx(t), "C"); err != nil {
		t.Fatal(err)
	}
	pc := cs.CachedInfo().Config
	pc.Sources, pc.Subjects = nil, []string{"c.>"}
	if _, err := js.UpdateStream(ctx(t), pc); err != nil {
		t.Fatalf("promoting the sourced counter stream: %v", err)
	}
	ack, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "c.b", Header: nats.Header{"Nats-Incr": {"1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(cs, ack.Sequence); got.val != `{"val":"8"}` {
		t.Fatalf("an increment after the promotion: %+v, want the total 8", got)
	}
	// A plain stream sourcing a counter stream stores what it sources as
	// it is, and cannot become a counter stream.
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "C2", Subjects: []string{"c2.>"}, AllowMsgCounter: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "c2.a", Header: nats.Header{"Nats-Incr": {"5"}}}); err != nil {
		t.Fatal(err)
	}
	ps, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "PS", Sources: []*jetstream.StreamSource{{Name: "C2"}}})
	if err != nil {
		t.Fatal(err)
	}
	waitMirror(t, ps, 1)
	if got := read(ps, 1); got.val != `{"val":"5"}` || got.incr != "5" {
		t.Fatalf("a plain stream sourcing a counter: %+v", got)
	}
	pcfg := ps.CachedInfo().Config
	pcfg.AllowMsgCounter = true
	if _, err := js.UpdateStream(ctx(t), pcfg); apiCode(err) != 10052 {
		t.Fatalf("turning a plain stream into a counter: %v, want error 10052", err)
	}
}

// A stream that sources a workqueue or an interest stream reads it, on a
// single server, through a durable consumer the server creates on it:
// named JS_SRC_<hash>, with the metadata _nats.src.stream (the sourcing
// stream), _nats.src.acc, and never _nats.source.*; jsapi.ReplicationConsumer
// says it is replication. Its reads take the messages out of a workqueue
// origin; an interest origin keeps a message until it, too, has read it.
// A stream sourcing a limits stream reads it through a consumer that is not
// listed.
func TestFactSourceDurableMetadata(t *testing.T) {
	js := embeddedtest.JetStream(t)
	for _, o := range []struct {
		name      string
		retention jetstream.RetentionPolicy
		durable   bool
		keeps     uint64 // what the origin holds once the downstream read it
	}{
		{"WQ", jetstream.WorkQueuePolicy, true, 0},
		{"INT", jetstream.InterestPolicy, true, 0},
		{"LIM", jetstream.LimitsPolicy, false, 5},
	} {
		t.Run(o.name, func(t *testing.T) {
			if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: o.name, Subjects: []string{o.name + ".>"}, Retention: o.retention}); err != nil {
				t.Fatal(err)
			}
			down := o.name + "_DOWN"
			d, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: down, Sources: []*jetstream.StreamSource{{Name: o.name}}})
			if err != nil {
				t.Fatal(err)
			}
			// An interest stream keeps only what is published once a
			// consumer exists: the downstream's, here.
			rc := sourcingConsumer(t, js, o.name, o.durable)
			publish(t, js, o.name+".a", 5)
			waitMirror(t, d, 5)
			if rc == nil {
				// The downstream has read them all: its consumer exists.
				rc = sourcingConsumer(t, js, o.name, false)
			}
			if !o.durable {
				if rc != nil {
					t.Fatalf("%s: the consumer of a stream sourcing a limits stream is listed: %+v", o.name, rc)
				}
				return
			}
			if rc == nil {
				t.Fatalf("%s: no consumer listed", o.name)
			}
			t.Logf("%s: consumer %s durable %q metadata %v", o.name, rc.Name, rc.Config.Durable, rc.Config.Metadata)
			if got := rc.Config.Durable != ""; got != o.durable {
				t.Fatalf("%s: the sourcing consumer %q is durable %v, want %v", o.name, rc.Name, got, o.durable)
			}
			if !strings.HasPrefix(rc.Name, "JS_SRC_") {
				t.Errorf("%s: the sourcing consumer is named %q, want JS_SRC_<hash>", o.name, rc.Name)
			}
			if rc.Config.Metadata["_nats.src.stream"] != down || rc.Config.Metadata["_nats.src.acc"] == "" {
				t.Errorf("%s: metadata %v, want _nats.src.stream %s and _nats.src.acc", o.name, rc.Config.Metadata, down)
			}
			for k := range rc.Config.Metadata {
				if strings.HasPrefix(k, "_nats.source.") {
					t.Errorf("%s: the server wrote %s", o.name, k)
				}
			}
			if !jsapi.ReplicationConsumer(rc.Config.Metadata) {
				t.Errorf("%s: jsapi.ReplicationConsumer(%v) is false", o.name, rc.Config.Metadata)
			}
			if got, _ := jsapi.ReplicationTarget(rc.Config.Metadata); got != down {
				t.Errorf("%s: jsapi.ReplicationTarget says %q, want %s", o.name, got, down)
			}
			deadline := time.Now().Add(20 * time.Second)
			for {
				si := streamInfo(t, js, o.name)
				if si.State.Msgs == o.keeps {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s holds %d messages once %s read them, want %d", o.name, si.State.Msgs, down, o.keeps)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// sourcingConsumer is the consumer listed on stream origin, waiting for
// one (20 s at most) when wait, nil when there is none.
func sourcingConsumer(t *testing.T, js jetstream.JetStream, origin string, wait bool) *jetstream.ConsumerInfo {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := js.Stream(ctx(t), origin)
		if err != nil {
			t.Fatal(err)
		}
		for ci := range s.ListConsumers(ctx(t)).Info() {
			return ci
		}
		if !wait {
			return nil
		}
		if time.Now().After(deadline) {
			t.Fatalf("no consumer on %s after 20 s", origin)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
