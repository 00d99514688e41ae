package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/natsconn"
)

// A copy the server refuses to publish stored nothing: it fails with the
// refusal as soon as the refusal arrives, rather than waiting for an
// acknowledgement (the timeout here is an hour); a copy to an allowed
// subject is still counted, and no more are sent.
func TestPublisherFailsRefusedCopies(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	conf := filepath.Join(t.TempDir(), "server.conf")
	err := os.WriteFile(conf, []byte(`authorization {
  users: [
    {user: admin, password: admin}
    {user: copier, password: copier, permissions: {publish: ["ok.>", "$JS.API.>"], subscribe: ["_INBOX.>"]}}
  ]
}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	r, err := natsconn.Resolve(natsconn.Options{Server: c.URL(), User: "copier", Password: "copier", NoContext: true, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nc, err := r.Connect(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := r.JetStream(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"ok.>", "no.>"}})
	if err != nil {
		t.Fatal(err)
	}

	p := NewPublisher(js, PublishConfig{To: "{subject}"})
	var perr *natsconn.PermissionError
	var refused []uint64
	write := func(seq uint64, subject string) error {
		if subject == "no.b" {
			refused = append(refused, seq)
		}
		return p.Write(ctx, &envelope.Message{Stream: "S", Seq: seq, Subject: subject, Data: []byte("x")})
	}
	// The refusal may end these writes already.
	for i, subject := range []string{"ok.a", "no.b", "no.b"} {
		if err := write(uint64(i+1), subject); err != nil {
			if !errors.As(err, &perr) {
				t.Fatal(err)
			}
			break
		}
	}
	select {
	case <-natsconn.RefusalOf(nc).Done():
	case <-time.After(30 * time.Second):
		t.Fatal("no refusal")
	}
	// A copy written after it fails too.
	if err := write(4, "no.b"); !errors.As(err, &perr) || perr.Subject != "no.b" {
		t.Fatalf("Write after the refusal: %v, want the refusal", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.Close(cctx); err != nil && !errors.As(err, &perr) {
		t.Errorf("Close: %v", err)
	}
	if got, want := p.Counts(), (Counts{Stored: 1, Bytes: 1}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if got := p.Failed(); !slices.Equal(got, refused) {
		t.Errorf("failed %v, want %v", got, refused)
	}
	if !errors.As(p.LastError(), &perr) || perr.Subject != "no.b" {
		t.Errorf("last error %v, want the refusal", p.LastError())
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("the stream holds %d messages, want 1", info.State.Msgs)
	}
}

// A refusal is an answer, and trying again gets the same answer: a copy
// into a full discard-new stream (10077) is sent once and fails, as every
// other mover decides (retry.Transient), not sent four times.
func TestPublisherDoesNotRetryARefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := embedded.Start(embedded.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	nc, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FULL", Subjects: []string{"full.>"}, MaxMsgs: 1, Discard: jetstream.DiscardNew}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "full.a", []byte("first")); err != nil {
		t.Fatal(err)
	}
	// Every try of the copy reaches the subject: count them.
	watch, err := nats.Connect(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watch.Close)
	sub, err := watch.SubscribeSync("full.b")
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	p := NewPublisher(js, PublishConfig{To: "full.b"})
	if err := p.Write(ctx, &envelope.Message{Stream: "S", Seq: 1, Subject: "x", Data: []byte("copy")}); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := p.Counts(); got.Stored != 0 || !slices.Equal(p.Failed(), []uint64{1}) {
		t.Fatalf("counts %+v, failed %v: want the one copy failed", got, p.Failed())
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := sub.Pending(); n != 1 {
		t.Fatalf("the refused copy was sent %d times, want once", n)
	}
}
