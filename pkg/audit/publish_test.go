package audit

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded"
	"github.com/jetctl/jetctl/pkg/natsconn"
)

// waitLimit bounds the tests' requests; reaching it is a failure.
const waitLimit = 10 * time.Second

// connect starts a JetStream server where user "admin" may do anything and
// "noaudit" anything but publish to jetctl.audit.>, and connects as user
// the way jetctl does (natsconn), under ctx.
func connect(t *testing.T, ctx context.Context, user string) jetstream.JetStream {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	conf := filepath.Join(t.TempDir(), "server.conf")
	err := os.WriteFile(conf, []byte(`authorization {
  users: [
    {user: admin, password: admin}
    {user: noaudit, password: noaudit, permissions: {publish: {allow: [">"], deny: ["jetctl.audit.>"]}, subscribe: [">"]}}
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
	r, err := natsconn.Resolve(natsconn.Options{Server: c.URL(), User: user, Password: user, NoContext: true, Timeout: waitLimit})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := r.Connect(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := r.JetStream(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func records(changes ...Change) []Record {
	o := Origin{Command: "consumer pause", User: "alice", Host: "h", Version: "v", Args: []string{"jetctl"}}
	var out []Record
	for i, c := range changes {
		out = append(out, o.Record(c, "id-"+string(rune('a'+i)), time.Now(), Masker{}))
	}
	return out
}

func TestPublishWithoutRecorderWritesNothing(t *testing.T) {
	js := connect(t, context.Background(), "admin")
	n, err := Publish(context.Background(), js, records(Change{Stream: "ORDERS", Consumer: "c", Action: "pause"}), waitLimit)
	if n != 0 || err != nil {
		t.Fatalf("Publish with no recorder = %d, %v; want 0, nil", n, err)
	}
}

func TestPublishStoresEachRecord(t *testing.T) {
	ctx := context.Background()
	js := connect(t, ctx, "admin")
	// A recorder of one stream's records only: the other's are no
	// responders, skipped, and the next record still goes.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "AUDIT", Subjects: []string{"jetctl.audit.ORDERS.>"}}); err != nil {
		t.Fatal(err)
	}
	recs := records(
		Change{Stream: "ORDERS", Consumer: "c1", Action: "pause", Summary: "paused until resumed"},
		Change{Stream: "OTHER", Consumer: "c2", Action: "pause"},
		Change{Stream: "ORDERS", Consumer: "c3", Action: "pause", Counts: map[string]int64{"n": 3}},
	)
	n, err := Publish(ctx, js, recs, waitLimit)
	if n != 2 || err != nil {
		t.Fatalf("Publish = %d, %v; want 2, nil", n, err)
	}
	st, err := js.Stream(ctx, "AUDIT")
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]Record{1: recs[0], 2: recs[2]} {
		msg, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Subject != want.Subject() {
			t.Errorf("seq %d: subject %q, want %q", seq, msg.Subject, want.Subject())
		}
		if id := msg.Header.Get(jetstream.MsgIDHeader); id != want.ID {
			t.Errorf("seq %d: Nats-Msg-Id %q, want %q", seq, id, want.ID)
		}
		var got Record
		if err := json.Unmarshal(msg.Data, &got); err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID || got.Consumer != want.Consumer || got.Type != Type || got.Summary != want.Summary || len(got.Counts) != len(want.Counts) {
			t.Errorf("seq %d: stored %+v, want %+v", seq, got, want)
		}
	}
	// Written again (a retry of the same records), nothing is stored twice.
	if _, err := Publish(ctx, js, recs, waitLimit); err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Errorf("after a second publish of the same records, %d stored, want 2", info.State.Msgs)
	}
}

// A user who may not publish records gets the refusal back as an error,
// at once, and the command is not aborted.
func TestPublishRefusedIsAnErrorNotAnAbort(t *testing.T) {
	var mu sync.Mutex
	var aborted []error
	ctx := natsconn.WithAbort(context.Background(), func(err error) {
		mu.Lock()
		defer mu.Unlock()
		aborted = append(aborted, err)
	})
	js := connect(t, ctx, "noaudit")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "AUDIT", Subjects: []string{"jetctl.audit.>"}}); err != nil {
		t.Fatal(err)
	}
	recs := records(Change{Stream: "ORDERS", Action: "pause"}, Change{Stream: "ORDERS", Action: "resume"})
	n, err := Publish(ctx, js, recs, waitLimit)
	var perr *natsconn.PermissionError
	if n != 0 || !errors.As(err, &perr) || perr.Subject != recs[0].Subject() {
		t.Fatalf("Publish refused = %d, %v; want 0 and a permission error on %s", n, err, recs[0].Subject())
	}
	// The connection still works and the command was not aborted.
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("after the refusal: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(aborted) > 0 {
		t.Errorf("the refusal aborted the command: %v", aborted)
	}
	if ref := natsconn.RefusalOf(js.Conn()); ref.Err() != nil {
		t.Errorf("the refusal became the connection's: %v", ref.Err())
	}
}

// An interrupted command still records what it did: a cancelled context
// does not stop the publish.
func TestPublishAfterCancel(t *testing.T) {
	js := connect(t, context.Background(), "admin")
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "AUDIT", Subjects: []string{"jetctl.audit.>"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := Publish(ctx, js, records(Change{Stream: "ORDERS", Action: "sweep"}), waitLimit); n != 1 || err != nil {
		t.Fatalf("Publish after cancel = %d, %v; want 1, nil", n, err)
	}
}
