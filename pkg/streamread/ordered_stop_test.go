package streamread_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// freezer is a TCP proxy to a server that can stop passing bytes on, as a
// server that hangs (or a network that drops everything) would.
type freezer struct {
	mu     sync.Mutex
	frozen chan struct{}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = make(chan struct{})
}

func (f *freezer) gate() chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frozen
}

func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if gate := f.gate(); gate != nil {
			<-gate // never closed: frozen for good
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func startFreezer(t *testing.T, target string) (*freezer, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f := &freezer{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				return
			}
			t.Cleanup(func() { c.Close(); s.Close() })
			go f.pipe(s, c)
			go f.pipe(c, s)
		}
	}()
	return f, l.Addr().String()
}

// A read whose caller's time is up (a --wait that expired) returns at
// once, even when the server no longer answers: it does not wait to remove
// its consumer. A removal could wait an hour here; the read must not.
func TestReadOrderedDeadlineDoesNotWaitForTheServer(t *testing.T) {
	srv := embeddedtest.Start(t)
	f, addr := startFreezer(t, srv.URL()[len("nats://"):])
	nc, err := nats.Connect("nats://"+addr, nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	setup, cancelSetup := context.WithTimeout(context.Background(), time.Minute)
	defer cancelSetup()
	s, err := js.CreateStream(setup, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancelCause(context.Background())
	read := streamread.OrderedRead{Label: `stream "ORDERS"`, Consumer: jetstream.ConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy}, Follow: true, CleanupTimeout: time.Hour}
	done := make(chan error, 1)
	go func() {
		done <- streamread.ReadOrdered(ctx, js, s, read, func(*streamread.StoredMsg) error { return nil })
	}()
	// Wait until the read's consumer exists, then freeze the server and stop.
	for {
		info, err := s.Info(setup)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.freeze()
	stop(context.DeadlineExceeded)
	if err := <-done; err == nil {
		t.Fatal("a stopped read returned no error")
	}
}
