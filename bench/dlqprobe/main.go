// Command dlqprobe measures what the server itself can do for bench/dlq.sh,
// and fills the streams the benchmark sweeps.
//
//	dlqprobe probe -n 20000 -size 128
//
// publishes n messages to a stream PROBE with async publishes (at most
// -window unacknowledged), then reads each with STREAM.MSG.GET and deletes
// each with STREAM.MSG.DELETE, both with -window requests in flight on
// one reply subscription: the pipelined primitives a sweep is made of. It
// prints their rates and the ceiling of a sweep, one message costing a
// get, a publish and a delete: 1/(1/get + 1/pub + 1/delete). It also reads
// the messages with batched DIRECT.GET (64 a batch, 4 batches in flight,
// as the sweep does for dead messages at consecutive sequences of a stream
// that allows direct gets), and prints that rate and the ceiling of such a
// sweep: 1/(1/direct + 1/pub + 1/delete). Last it measures what the
// advisories cost: n advisory-sized messages fetched by a durable pull
// consumer (batches of 256) and each acknowledged, and prints the full
// ceiling of a sweep with its advisories: 1/(1/direct + 1/pub + 1/delete
// + 1/advisory).
//
//	dlqprobe stream JOBS [-allow-direct]
//	dlqprobe fill JOBS -n 20000 -size 128 [-live]
//
// stream creates the workqueue stream JOBS on jobs.> with a consumer
// worker (MaxDeliver 1), with allow_direct if asked (natscli's nats stream
// add sets it by default, nats.go's CreateStream does not); fill publishes
// n messages to it and, for each, the MAX_DELIVERIES advisory the server
// would send when worker gives up on it (into the capture stream that
// jetctl dlq setup made): dead messages without a worker. With -live a
// message without an advisory (still to be processed) follows each dead
// one.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	n := fs.Int("n", 20000, "messages")
	size := fs.Int("size", 128, "payload size in bytes")
	window := fs.Int("window", 256, "requests or publishes in flight")
	direct := fs.Bool("allow-direct", false, "stream: create it with allow_direct (as natscli's nats stream add does by default)")
	live := fs.Bool("live", false, "fill: a live message after each dead one")
	var stream string
	if cmd != "probe" {
		if len(args) == 0 {
			usage()
		}
		stream, args = args[0], args[1:]
	}
	_ = fs.Parse(args)
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url)
	check(err)
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(*window))
	check(err)
	ctx := context.Background()
	switch cmd {
	case "probe":
		check(probe(ctx, nc, js, *n, *size, *window))
	case "stream":
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{strings.ToLower(stream) + ".>"},
			Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, AllowDirect: *direct})
		check(err)
		_, err = js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: "worker", AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 1})
		check(err)
	case "fill":
		check(fill(ctx, js, stream, *n, *size, *live))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: dlqprobe probe [-n N] [-size B] [-window W] | stream NAME | fill NAME [-n N] [-size B]")
	os.Exit(2)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "dlqprobe:", err)
		os.Exit(1)
	}
}

func publishAll(js jetstream.JetStream, n int, msg func(i int) *nats.Msg) error {
	for i := 0; i < n; i++ {
		// A loaded machine answers late: wait for room, do not fail.
		if _, err := js.PublishMsgAsync(msg(i), jetstream.WithStallWait(time.Minute)); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("publishes not acknowledged")
	}
	if pending := js.PublishAsyncPending(); pending > 0 {
		return fmt.Errorf("%d publishes not acknowledged", pending)
	}
	return nil
}

func fill(ctx context.Context, js jetstream.JetStream, stream string, n, size int, live bool) error {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	first := st.CachedInfo().State.LastSeq + 1
	subject := strings.ToLower(stream) + ".run"
	payload := bytes.Repeat([]byte("x"), size)
	step := 1
	if live {
		step = 2
	}
	if err := publishAll(js, n*step, func(i int) *nats.Msg {
		if i%step == 1 {
			return &nats.Msg{Subject: strings.ToLower(stream) + ".live", Data: payload}
		}
		return &nats.Msg{Subject: subject, Data: payload}
	}); err != nil {
		return err
	}
	adv := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + stream + ".worker"
	return publishAll(js, n, func(i int) *nats.Msg {
		body, _ := json.Marshal(map[string]any{"type": "io.nats.jetstream.advisory.v1.max_deliver", "stream": stream,
			"consumer": "worker", "stream_seq": first + uint64(i*step), "deliveries": 1})
		return &nats.Msg{Subject: adv, Data: body}
	})
}

// pipelined sends n requests (body(i) to subject) with at most window
// in flight, on one reply subscription, and returns how long they took.
func pipelined(nc *nats.Conn, subject string, n, window int, body func(i int) []byte) (time.Duration, error) {
	inbox := nats.NewInbox()
	slots := make(chan struct{}, window)
	var done, failed atomic.Int64
	var firstErr atomic.Value
	all := make(chan struct{})
	sub, err := nc.Subscribe(inbox+".*", func(m *nats.Msg) {
		var resp struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if json.Unmarshal(m.Data, &resp) == nil && resp.Error != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, resp.Error.Description)
		}
		<-slots
		if done.Add(1) == int64(n) {
			close(all)
		}
	})
	if err != nil {
		return 0, err
	}
	defer sub.Unsubscribe()
	_ = sub.SetPendingLimits(-1, -1)
	start := time.Now()
	for i := 0; i < n; i++ {
		slots <- struct{}{}
		if err := nc.PublishRequest(subject, fmt.Sprintf("%s.%d", inbox, i), body(i)); err != nil {
			return 0, err
		}
	}
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		return 0, fmt.Errorf("%s: %d of %d answered", subject, done.Load(), n)
	}
	took := time.Since(start)
	if failed.Load() > 0 {
		return 0, fmt.Errorf("%s: %d failed, e.g. %v", subject, failed.Load(), firstErr.Load())
	}
	return took, nil
}

func probe(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, n, size, window int) error {
	_ = js.DeleteStream(ctx, "PROBE")
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PROBE", Subjects: []string{"probe.>"}, Storage: jetstream.FileStorage, AllowDirect: true})
	if err != nil {
		return err
	}
	payload := bytes.Repeat([]byte("x"), size)
	start := time.Now()
	if err := publishAll(js, n, func(int) *nats.Msg { return &nats.Msg{Subject: "probe.msgs", Data: payload} }); err != nil {
		return err
	}
	pub := time.Since(start)
	info, err := st.Info(ctx)
	if err != nil {
		return err
	}
	first := info.State.FirstSeq
	get, err := pipelined(nc, "$JS.API.STREAM.MSG.GET.PROBE", n, window, func(i int) []byte {
		return fmt.Appendf(nil, `{"seq":%d}`, first+uint64(i))
	})
	if err != nil {
		return err
	}
	// Rows of 64, 4 in flight: the sweep's directRow and directWorkers
	// (pkg/dlq/pipeline.go), so that the direct ceiling is measured with
	// the sweep's own depth. Change them together.
	direct, err := directBatches(nc, "PROBE", first, n, 64, 4)
	if err != nil {
		return err
	}
	del, err := pipelined(nc, "$JS.API.STREAM.MSG.DELETE.PROBE", n, window, func(i int) []byte {
		return fmt.Appendf(nil, `{"seq":%d,"no_erase":true}`, first+uint64(i))
	})
	if err != nil {
		return err
	}
	_ = js.DeleteStream(ctx, "PROBE")
	adv, err := fetchAcks(ctx, js, n)
	if err != nil {
		return err
	}
	rate := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	ceiling := 1 / (1/rate(get) + 1/rate(pub) + 1/rate(del))
	directCeiling := 1 / (1/rate(direct) + 1/rate(pub) + 1/rate(del))
	full := 1 / (1/rate(direct) + 1/rate(pub) + 1/rate(del) + 1/rate(adv))
	fmt.Printf("get %.0f\npub %.0f\ndelete %.0f\nceiling %.0f\ndirect %.0f\ndirectceiling %.0f\nadvisory %.0f\nfullceiling %.0f\n",
		rate(get), rate(pub), rate(del), ceiling, rate(direct), directCeiling, rate(adv), full)
	return nil
}

// fetchAcks measures what the advisories cost a sweep besides the three
// primitives: n advisory-sized messages in a stream PROBEADV, fetched by a
// durable pull consumer in batches of 256 and each acknowledged, until the
// server has taken every acknowledgement.
func fetchAcks(ctx context.Context, js jetstream.JetStream, n int) (time.Duration, error) {
	_ = js.DeleteStream(ctx, "PROBEADV")
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PROBEADV", Subjects: []string{"probeadv.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		return 0, err
	}
	defer func() { _ = js.DeleteStream(ctx, "PROBEADV") }()
	body, _ := json.Marshal(map[string]any{"type": "io.nats.jetstream.advisory.v1.max_deliver", "id": "probe",
		"timestamp": time.Now(), "stream": "JOBS", "consumer": "worker", "stream_seq": 1, "deliveries": 1})
	if err := publishAll(js, n, func(int) *nats.Msg { return &nats.Msg{Subject: "probeadv.x", Data: body} }); err != nil {
		return 0, err
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "probe", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 20000})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	for got := 0; got < n; {
		b, err := cons.Fetch(min(256, n-got), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return 0, err
		}
		for m := range b.Messages() {
			got++
			if err := m.Ack(); err != nil {
				return 0, err
			}
		}
		if err := b.Error(); err != nil {
			return 0, err
		}
	}
	for {
		ci, err := cons.Info(ctx)
		if err != nil {
			return 0, err
		}
		if ci.NumAckPending == 0 {
			return time.Since(start), nil
		}
		time.Sleep(time.Millisecond)
	}
}

// directBatches reads n messages of stream from seq first with batched
// DIRECT.GET requests of batch messages, inFlight batches at a time (each
// on its own reply subscription), and returns how long it took.
func directBatches(nc *nats.Conn, stream string, first uint64, n, batch, inFlight int) (time.Duration, error) {
	next := make(chan uint64, n/batch+1)
	for s := 0; s < n; s += batch {
		next <- first + uint64(s)
	}
	close(next)
	var got atomic.Int64
	errs := make(chan error, inFlight)
	start := time.Now()
	for range inFlight {
		go func() {
			sub, err := nc.SubscribeSync(nats.NewInbox())
			if err != nil {
				errs <- err
				return
			}
			defer sub.Unsubscribe()
			_ = sub.SetPendingLimits(-1, -1)
			for seq := range next {
				body := fmt.Appendf(nil, `{"seq":%d,"batch":%d}`, seq, min(batch, n-int(seq-first)))
				if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, sub.Subject, body); err != nil {
					errs <- err
					return
				}
				for {
					m, err := sub.NextMsg(5 * time.Second)
					if err != nil {
						errs <- err
						return
					}
					if len(m.Data) == 0 && m.Header.Get("Status") != "" {
						break // 204: the end of the batch
					}
					got.Add(1)
				}
			}
			errs <- nil
		}()
	}
	for range inFlight {
		if err := <-errs; err != nil {
			return 0, err
		}
	}
	if g := got.Load(); g != int64(n) {
		return 0, fmt.Errorf("direct get: %d of %d messages", g, n)
	}
	return time.Since(start), nil
}
