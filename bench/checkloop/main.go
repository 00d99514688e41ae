// Command checkloop makes the consumers bench/check.sh checks, and is its
// physical baseline: what one process with nats.go pays to read every
// consumer's state, with nothing spawned and nothing judged.
//
//	checkloop create -streams 200 -consumers 5 -msgs 20
//
// creates streams S000..S199 (subjects sNNN.>, file storage), each with
// -msgs messages on sNNN.orders and -consumers durable pull consumers
// c0..c4 on sNNN.>; the last one's config depends on its role (below).
//
//	checkloop work -streams 200 -consumers 5
//
// then plays the workers, so that the consumers make a realistic mix:
//
//   - caught up (most): every message fetched and acknowledged;
//   - backlog: c3 of every even-numbered stream has acknowledged half of
//     its messages and holds the other half unprocessed;
//   - stalled: the last consumer of every stream numbered 0 mod 10
//     (max_ack_pending 5) holds 5 messages unacknowledged, so the server
//     delivers it nothing more;
//   - poison: that of every stream numbered 1 mod 10 acknowledges every
//     message but the first, which it NAKs on each of 4 deliveries;
//   - dead letters: that of every stream numbered 2 mod 10 (max_deliver
//     2) NAKs its first message twice and gives up on it, so the server
//     sends a MAX_DELIVERIES advisory (which `jetctl dlq setup`, run
//     between create and work, captures).
//
// It prints the number of consumers in each role.
//
//	checkloop loop -runs 5
//
// is the baseline: connected once, it lists the streams S*, their
// consumers' names (one CONSUMER.NAMES each) and asks each consumer's
// info (one CONSUMER.INFO each, sequentially, the loop a script author
// writes), -runs times, and prints the median:
//
//	info: 1000 consumers in 0.412 s (median of 5)
//
// and the same read with one paged CONSUMER.LIST per stream (the bulk
// read jetctl check uses):
//
//	list: 1000 consumers in 0.083 s (median of 5)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A consumer's role in the mix.
const (
	roleCaughtUp    = "caught-up"
	roleBacklog     = "backlog"
	roleStalled     = "stalled"
	rolePoison      = "poison"
	roleDeadLetters = "dead-letters"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	streams := fs.Int("streams", 200, "streams")
	consumers := fs.Int("consumers", 5, "consumers per stream")
	msgs := fs.Int("msgs", 20, "create: messages per stream")
	runs := fs.Int("runs", 5, "loop: runs")
	_ = fs.Parse(os.Args[2:])
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url)
	check(err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	check(err)
	ctx := context.Background()
	switch cmd {
	case "create":
		check(forEachStream(*streams, func(s int) error { return create(ctx, js, s, *consumers, *msgs) }))
	case "work":
		counts := map[string]int{}
		var mu sync.Mutex
		check(forEachStream(*streams, func(s int) error {
			for c := 0; c < *consumers; c++ {
				r := role(s, c, *consumers)
				if err := work(ctx, js, streamName(s), consumerName(c), r); err != nil {
					return fmt.Errorf("%s > %s (%s): %w", streamName(s), consumerName(c), r, err)
				}
				mu.Lock()
				counts[r]++
				mu.Unlock()
			}
			return nil
		}))
		for _, r := range []string{roleCaughtUp, roleBacklog, roleStalled, rolePoison, roleDeadLetters} {
			fmt.Printf("%s %d\n", r, counts[r])
		}
	case "loop":
		check(loop(ctx, js, *runs))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: checkloop create|work|loop [-streams N] [-consumers N] [-msgs N] [-runs N]")
	os.Exit(2)
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkloop:", err)
		os.Exit(1)
	}
}

func streamName(s int) string   { return fmt.Sprintf("S%03d", s) }
func consumerName(c int) string { return fmt.Sprintf("c%d", c) }

// role is what consumer c of stream s plays in the mix.
func role(s, c, consumers int) string {
	last := c == consumers-1
	switch {
	case last && s%10 == 0:
		return roleStalled
	case last && s%10 == 1:
		return rolePoison
	case last && s%10 == 2:
		return roleDeadLetters
	case c == 3 && !last && s%2 == 0:
		return roleBacklog
	}
	return roleCaughtUp
}

// forEachStream runs fn for streams 0..n-1, 8 at a time.
func forEachStream(n int, fn func(s int) error) error {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for s := 0; s < n; s++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(s); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func create(ctx context.Context, js jetstream.JetStream, s, consumers, msgs int) error {
	name := streamName(s)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Storage: jetstream.FileStorage})
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	for c := 0; c < consumers; c++ {
		cfg := jetstream.ConsumerConfig{Durable: consumerName(c), FilterSubject: strings.ToLower(name) + ".>", AckPolicy: jetstream.AckExplicitPolicy}
		switch role(s, c, consumers) {
		case roleStalled:
			cfg.MaxAckPending, cfg.AckWait = 5, time.Hour
		case rolePoison:
			cfg.MaxDeliver, cfg.AckWait = 10, time.Hour
		case roleDeadLetters:
			cfg.MaxDeliver, cfg.AckWait = 2, time.Hour
		}
		if _, err := js.CreateConsumer(ctx, name, cfg); err != nil {
			return fmt.Errorf("consumer %s > %s: %w", name, cfg.Durable, err)
		}
	}
	subject := strings.ToLower(name) + ".orders"
	for i := 1; i <= msgs; i++ {
		if _, err := js.PublishAsync(subject, fmt.Appendf(nil, `{"order_id":"ord-%05d","total":%d.50}`, i, i%50+9)); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-time.After(time.Minute):
		return fmt.Errorf("stream %s: publishes not acknowledged", name)
	}
}

// work plays consumer's worker for its role.
func work(ctx context.Context, js jetstream.JetStream, stream, consumer, role string) error {
	cons, err := js.Consumer(ctx, stream, consumer)
	if err != nil {
		return err
	}
	pending := int(cons.CachedInfo().NumPending)
	switch role {
	case roleCaughtUp:
		return take(cons, pending, nil)
	case roleBacklog:
		return take(cons, pending/2, nil)
	case roleStalled:
		// Held, never acknowledged: the hung worker.
		_, err := fetch(cons, 5)
		return err
	case rolePoison, roleDeadLetters:
		deliveries := map[string]int{rolePoison: 4, roleDeadLetters: 2}[role]
		// The first message fails every time; the rest are processed.
		if err := take(cons, pending, func(i int) bool { return i == 0 }); err != nil {
			return err
		}
		for d := 1; d < deliveries; d++ {
			got, err := fetch(cons, 1)
			if err != nil {
				return err
			}
			if len(got) != 1 {
				return fmt.Errorf("delivery %d of the failing message: not redelivered", d+1)
			}
			if err := got[0].Nak(); err != nil {
				return err
			}
		}
		if role == roleDeadLetters {
			// The attempt after the last delivery makes the server give
			// up and send the MAX_DELIVERIES advisory.
			_, err := cons.Fetch(1, jetstream.FetchMaxWait(300*time.Millisecond))
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}

// take fetches n messages and acknowledges each (waiting for the
// server's answer), except those for which fail is true: it NAKs them.
func take(cons jetstream.Consumer, n int, fail func(i int) bool) error {
	got, err := fetch(cons, n)
	if err != nil {
		return err
	}
	for i, m := range got {
		if fail != nil && fail(i) {
			err = m.Nak()
		} else {
			err = m.DoubleAck(context.Background())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fetch fetches exactly n messages (10 s at most).
func fetch(cons jetstream.Consumer, n int) ([]jetstream.Msg, error) {
	var got []jetstream.Msg
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n {
		if time.Now().After(deadline) {
			return got, fmt.Errorf("fetched %d of %d messages in 10s", len(got), n)
		}
		batch, err := cons.Fetch(n-len(got), jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return got, err
		}
		for m := range batch.Messages() {
			got = append(got, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return got, err
		}
	}
	return got, nil
}

// loop times the two baseline reads, runs times each, and prints their
// medians.
func loop(ctx context.Context, js jetstream.JetStream, runs int) error {
	var streams []string
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		if strings.HasPrefix(name, "S") {
			streams = append(streams, name)
		}
	}
	if err := names.Err(); err != nil {
		return err
	}
	slices.Sort(streams)
	var info, list []float64
	var n int
	for r := 0; r < runs; r++ {
		start := time.Now()
		count, err := infoEach(ctx, js, streams)
		if err != nil {
			return err
		}
		info = append(info, time.Since(start).Seconds())
		start = time.Now()
		listed, err := listEach(ctx, js, streams)
		if err != nil {
			return err
		}
		list = append(list, time.Since(start).Seconds())
		if listed != count {
			return fmt.Errorf("CONSUMER.INFO read %d consumers, CONSUMER.LIST %d", count, listed)
		}
		n = count
	}
	fmt.Printf("info: %d consumers in %.3f s (median of %d)\n", n, median(info), runs)
	fmt.Printf("list: %d consumers in %.3f s (median of %d)\n", n, median(list), runs)
	return nil
}

// infoEach asks every consumer of streams for its info, one request at a
// time.
func infoEach(ctx context.Context, js jetstream.JetStream, streams []string) (int, error) {
	n := 0
	for _, name := range streams {
		stream, err := js.Stream(ctx, name)
		if err != nil {
			return n, err
		}
		cnames := stream.ConsumerNames(ctx)
		var consumers []string
		for c := range cnames.Name() {
			consumers = append(consumers, c)
		}
		if err := cnames.Err(); err != nil {
			return n, err
		}
		for _, c := range consumers {
			cons, err := stream.Consumer(ctx, c)
			if err != nil {
				return n, fmt.Errorf("%s > %s: %w", name, c, err)
			}
			if cons.CachedInfo() == nil {
				return n, fmt.Errorf("%s > %s: no info", name, c)
			}
			n++
		}
	}
	return n, nil
}

// listEach reads every consumer of streams with CONSUMER.LIST.
func listEach(ctx context.Context, js jetstream.JetStream, streams []string) (int, error) {
	n := 0
	for _, name := range streams {
		stream, err := js.Stream(ctx, name)
		if err != nil {
			return n, err
		}
		infos := stream.ListConsumers(ctx)
		for range infos.Info() {
			n++
		}
		if err := infos.Err(); err != nil {
			return n, err
		}
	}
	return n, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
