package replay

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/envelope"
)

func messages(n int, subject string) []*envelope.Message {
	out := make([]*envelope.Message, n)
	for i := range out {
		out[i] = &envelope.Message{Stream: "SRC", Seq: uint64(i + 1), Subject: subject, Time: time.Now(), Data: []byte(fmt.Sprint("m", i))}
	}
	return out
}

// republish writes msgs through a publisher to js and closes it.
func republish(t *testing.T, js jetstream.JetStream, cfg PublishConfig, msgs []*envelope.Message) (*Publisher, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := NewPublisher(js, cfg)
	for _, m := range msgs {
		if err := p.Write(ctx, m); err != nil {
			return p, errors.Join(err, p.Close(ctx))
		}
	}
	return p, p.Close(ctx)
}

// Every copy is counted as stored, once, in order, and the floor is the
// last one.
func TestPublisherStores(t *testing.T) {
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "COPY", Subjects: []string{"copy.>"}}); err != nil {
		t.Fatal(err)
	}
	p, err := republish(t, js, PublishConfig{To: "copy.>", MaxInFlight: 64}, messages(3000, "a.b"))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c.Stored != 3000 || c.Duplicates != 0 || c.Unconfirmed != 0 || len(p.Failed()) != 0 {
		t.Fatalf("counts %+v, failed %v", c, p.Failed())
	}
	if f := p.Floor(3000); f != 3000 {
		t.Fatalf("floor %d", f)
	}
	again, err := republish(t, js, PublishConfig{To: "copy.>"}, messages(3000, "a.b"))
	if err != nil {
		t.Fatal(err)
	}
	if c := again.Counts(); c.Stored != 0 || c.Duplicates != 3000 {
		t.Fatalf("again: counts %+v", c)
	}
}

// A target stream that appears a moment after the first copies were
// refused (as one being restored after a restart): the refused copies are
// retried after their pause, while the others go on, and all are stored.
func TestPublisherRetriesRideOutAMissingStream(t *testing.T) {
	js := embeddedtest.JetStream(t)
	go func() {
		time.Sleep(400 * time.Millisecond)
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "COPY", Subjects: []string{"copy.>"}}); err != nil {
			t.Error(err)
		}
	}()
	p, err := republish(t, js, PublishConfig{To: "copy.>"}, messages(200, "a.b"))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c.Stored != 200 || len(p.Failed()) != 0 {
		t.Fatalf("counts %+v, failed %v (%v)", c, p.Failed(), p.LastError())
	}
}

// No stream captures the target: every copy is retried at the same time,
// so the run stops after about the retry pauses (1.75 s), not half a
// second a copy, and every copy is listed as failed.
func TestPublisherNoStreamFailsFast(t *testing.T) {
	js := embeddedtest.JetStream(t)
	start := time.Now()
	p, err := republish(t, js, PublishConfig{To: "none.>"}, messages(64, "a.b"))
	if !errors.Is(err, ErrTargetFailing) {
		t.Fatalf("error %v", err)
	}
	var noStream *NoStreamError
	if !errors.As(p.LastError(), &noStream) || noStream.Subject != "none.a.b" {
		t.Fatalf("last error %v", p.LastError())
	}
	if c := p.Counts(); c.Stored != 0 || len(p.Failed()) != 64 {
		t.Fatalf("counts %+v, %d failed", c, len(p.Failed()))
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("took %s", took)
	}
	if f := p.Floor(64); f != 0 {
		t.Fatalf("floor %d", f)
	}
}

// Copies settled in order are used again for later ones (their header
// maps too): each stored copy carries its own message's headers, id and
// provenance, and nothing of an earlier copy's, whichever messages had
// headers.
func TestPublisherReusedCopiesCarryOnlyTheirOwn(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx := context.Background()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "COPY", Subjects: []string{"copy.>"}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := messages(600, "")
	for i, m := range msgs {
		m.Subject = fmt.Sprintf("a.%d", i%5)
		m.Time = time.Unix(1_700_000_000+int64(i), int64(i))
		if i%3 == 0 {
			m.Header = nats.Header{"Trace": {fmt.Sprint("t", i)}, jetstream.MsgIDHeader: {fmt.Sprint("orig", i)}}
		}
	}
	// A window of 4: every copy is used again about 150 times.
	p, err := republish(t, js, PublishConfig{To: "copy.>", MaxInFlight: 4}, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c.Stored != 600 {
		t.Fatalf("counts %+v", c)
	}
	for i, m := range msgs {
		stored, err := s.GetMsg(ctx, uint64(i+1))
		if err != nil {
			t.Fatal(err)
		}
		want := envelope.CopyHeader(envelope.CmdRepublish, m.Header, 5)
		envelope.SetProvenance(want, m)
		want.Set(jetstream.MsgIDHeader, fmt.Sprintf("replay:SRC:%d:copy.%s", m.Seq, m.Subject))
		if stored.Subject != "copy."+m.Subject || string(stored.Data) != string(m.Data) || !reflect.DeepEqual(stored.Header, want) {
			t.Fatalf("copy of %d: %s %q %v\nwant %s %q %v", m.Seq, stored.Subject, stored.Data, stored.Header, "copy."+m.Subject, m.Data, want)
		}
	}
}

// With a window of 2, Write waits for room while the copies in the window
// wait for their retry: the retry stage sends them (Write does not), in
// the order the settle stage settles them, and every copy is stored once.
func TestPublisherRetriesWhileWriteWaits(t *testing.T) {
	js := embeddedtest.JetStream(t)
	go func() {
		time.Sleep(400 * time.Millisecond)
		if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "COPY", Subjects: []string{"copy.>"}}); err != nil {
			t.Error(err)
		}
	}()
	p, err := republish(t, js, PublishConfig{To: "copy.>", MaxInFlight: 2}, messages(50, "a.b"))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(); c.Stored != 50 || c.Duplicates != 0 || len(p.Failed()) != 0 {
		t.Fatalf("counts %+v, failed %v (%v)", c, p.Failed(), p.LastError())
	}
	if f := p.Floor(50); f != 50 {
		t.Fatalf("floor %d", f)
	}
	s, err := js.Stream(context.Background(), "COPY")
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 50 {
		t.Fatalf("the target holds %d copies", n)
	}
}
