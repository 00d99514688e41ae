package dlq

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// The sweep reads rows of dead messages with directWorkers batched direct
// gets in flight, as docs/dlq.md says (and bench/dlqprobe measures the
// ceiling with): here the API, behind a prefix of its own, holds each
// direct get of the swept stream until directWorkers of them wait, so
// the peak it sees is the number the sweep has in flight. (The stage
// before mover.Ordered ran ordered(rows, 1, …): 2 rows in flight.)
func TestPrefetchRowsInFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	plain := embeddedtest.JetStream(t)
	if _, err := plain.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"},
		Retention: jetstream.WorkQueuePolicy, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	const rows = 4 * directWorkers
	const total = rows * directRow
	for range total {
		if _, err := plain.PublishAsync("jobs.run", []byte("poison"), jetstream.WithStallWait(30*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-plain.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("publishes not acknowledged")
	}

	// The proxy: API requests to $HOLD.API. go on to $JS.API. with their
	// reply subject (the server answers the sweep directly); a direct get
	// of JOBS waits until directWorkers of them do, or a second passed.
	proxy := plain.Conn()
	var (
		mu   sync.Mutex
		held []*nats.Msg
		peak int
		seen int
	)
	forward := func(m *nats.Msg) {
		_ = proxy.PublishMsg(&nats.Msg{Subject: "$JS.API." + strings.TrimPrefix(m.Subject, "$HOLD.API."), Reply: m.Reply, Header: m.Header, Data: m.Data})
	}
	release := func() {
		for _, m := range held {
			forward(m)
		}
		held = nil
	}
	if _, err := proxy.Subscribe("$HOLD.API.>", func(m *nats.Msg) {
		if m.Subject != "$HOLD.API.DIRECT.GET.JOBS" {
			forward(m)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		held = append(held, m)
		seen++
		peak = max(peak, len(held))
		if len(held) >= directWorkers {
			release()
			return
		}
		n := seen
		time.AfterFunc(time.Second, func() {
			mu.Lock()
			defer mu.Unlock()
			if seen == n {
				release() // nothing more came
			}
		})
	}); err != nil {
		t.Fatal(err)
	}
	if err := proxy.Flush(); err != nil {
		t.Fatal(err)
	}

	nc, err := nats.Connect(proxy.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.NewWithAPIPrefix(nc, "$HOLD.API")
	if err != nil {
		t.Fatal(err)
	}
	s := &sweeper{js: js, api: jsapi.New(js), cfg: SweepConfig{Stream: "JOBS"}, seen: map[uint64]*outcome{}, direct: true}
	var items []*item
	for seq := uint64(1); seq <= total; seq++ {
		it := &item{adv: Advisory{Stream: "JOBS", StreamSeq: seq}}
		s.claim(it)
		items = append(items, it)
	}
	s.arrange(items)
	in := make(chan *item, len(items))
	for _, it := range items {
		in <- it
	}
	close(in)
	next := uint64(1)
	for it := range s.prefetch(ctx, in) {
		if it.adv.StreamSeq != next {
			t.Fatalf("got %d, want %d (out of order)", it.adv.StreamSeq, next)
		}
		if it.src == nil || it.src.Seq != next {
			t.Fatalf("sequence %d not read by its row's direct get", next)
		}
		next++
	}
	if next != total+1 {
		t.Fatalf("%d of %d passed on", next-1, total)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen != rows {
		t.Errorf("%d direct gets, want %d (one per row)", seen, rows)
	}
	if peak != directWorkers {
		t.Errorf("%d direct gets in flight at most, want directWorkers (%d)", peak, directWorkers)
	}
}
