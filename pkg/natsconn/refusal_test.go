package natsconn

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/embedded"
	"github.com/jetctl/jetctl/pkg/logctx"
)

// waitLimit bounds what these tests wait for; reaching it is a failure,
// not a measurement.
const waitLimit = 10 * time.Second

// connectLimited starts a server where user "limited" may publish to ok.>
// only, and connects as that user under ctx.
func connectLimited(t *testing.T, ctx context.Context) *nats.Conn {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	conf := filepath.Join(t.TempDir(), "server.conf")
	err := os.WriteFile(conf, []byte(`authorization {
  users: [
    {user: limited, password: limited, permissions: {publish: ["ok.>"], subscribe: ["ok.>", "_INBOX.>"]}}
  ]
}
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), ConfigFile: conf, NoJetStream: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	r, err := Resolve(Options{Server: c.URL(), User: "limited", Password: "limited", NoContext: true})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := r.Connect(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestRefusalStopsTheCommand(t *testing.T) {
	var mu sync.Mutex
	var aborted []error
	ctx := WithAbort(context.Background(), func(err error) {
		mu.Lock()
		defer mu.Unlock()
		aborted = append(aborted, err)
	})
	nc := connectLimited(t, ctx)
	ref := RefusalOf(nc)
	if ref == nil || ref.Err() != nil {
		t.Fatalf("a fresh connection's refusal = %v", ref)
	}

	// A refusal a toleration takes is not the connection's Refusal.
	tolerated := make(chan *PermissionError, 1)
	stop := Tolerate(nc, func(s string) bool { return s == "tolerated.x" }, func(perr *PermissionError) { tolerated <- perr })
	if err := nc.Publish("tolerated.x", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case perr := <-tolerated:
		if perr.Subject != "tolerated.x" {
			t.Errorf("tolerated %+v", perr)
		}
	case <-time.After(waitLimit):
		t.Fatal("the toleration was not called")
	}
	stop()
	if err := nc.Publish("ok.a", nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ref.Err(); err != nil {
		t.Fatalf("refused after a tolerated refusal and an allowed publish: %v", err)
	}

	if err := nc.Publish("no.x", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ref.Done():
	case <-time.After(waitLimit):
		t.Fatal("Done was not closed by the refusal")
	}
	want := PermissionError{Op: "publish", Subject: "no.x"}
	if got := ref.Err(); got == nil || *got != want {
		t.Errorf("Err() = %v, want %+v", got, want)
	}
	// A second refusal leaves the first one's.
	if err := nc.Publish("no.y", nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := ref.Err(); got == nil || *got != want {
		t.Errorf("after a second refusal, Err() = %v, want %+v", got, want)
	}
	// abort is called on nats.go's callback goroutine after Done is
	// closed (a flush does not wait for it): wait for the first call.
	called := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(aborted)
	}
	for deadline := time.Now().Add(waitLimit); called() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	var perr *PermissionError
	if len(aborted) == 0 || !errors.As(aborted[0], &perr) || *perr != want {
		t.Errorf("abort called with %v, want %+v first", aborted, want)
	}
	mu.Unlock()

	nc.Close()
	deadline := time.Now().Add(waitLimit)
	for RefusalOf(nc) != nil {
		if time.Now().After(deadline) {
			t.Fatal("a closed connection's Refusal is still kept")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if RefusalOf(nc).Done() != nil || RefusalOf(nc).Err() != nil {
		t.Error("a nil Refusal is never done")
	}
}

// syncBuffer is a bytes.Buffer the connection's goroutines may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The client's other asynchronous errors go to the command's logger (the
// one --verbose turns up), not raw to stderr.
func TestAsyncErrorsGoToTheCommandsLogger(t *testing.T) {
	var logged syncBuffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	nc := connectLimited(t, logctx.With(context.Background(), logger))

	release := make(chan struct{})
	defer close(release)
	sub, err := nc.Subscribe("ok.slow", func(*nats.Msg) { <-release })
	if err != nil {
		t.Fatal(err)
	}
	if err := sub.SetPendingLimits(1, -1); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := nc.Publish("ok.slow", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLimit)
	for !strings.Contains(logged.String(), "slow consumer") {
		if time.Now().After(deadline) {
			t.Fatalf("the slow consumer error was not logged; log:\n%s", logged.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if out := logged.String(); !strings.Contains(out, "level=DEBUG") || !strings.Contains(out, "subject=ok.slow") {
		t.Errorf("logged:\n%s", out)
	}
	if err := RefusalOf(nc).Err(); err != nil {
		t.Errorf("a slow consumer is not a refusal: %v", err)
	}
}
