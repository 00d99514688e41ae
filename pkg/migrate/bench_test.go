package migrate

// Benchmarks of a move on an embedded server, for profiles of where a
// migration's time goes (bench/migrate.sh measures the whole command next
// to a natscli mirror):
//
//	go test ./pkg/migrate -run '^$' -bench . -benchtime 3x -cpuprofile cpu.prof
//
// BENCH_MIGRATE_MSGS sets the stream's size (default 100,000 x 128 B on
// 1,000 subjects). The embedded server runs in the benchmark's process, so
// a profile shows its side too.

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/envelope"
)

func benchMsgs(b *testing.B) int {
	if s := os.Getenv("BENCH_MIGRATE_MSGS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			b.Fatalf("BENCH_MIGRATE_MSGS=%q: want a positive number", s)
		}
		return n
	}
	return 100_000
}

// benchStream starts a server with stream SRC holding n messages of 128 B
// on 1,000 subjects, with retention limits.
func benchStream(b *testing.B, n int) (context.Context, jetstream.JetStream) {
	return benchStreamOf(b, n, jetstream.LimitsPolicy)
}

func benchStreamOf(b *testing.B, n int, retention jetstream.RetentionPolicy) (context.Context, jetstream.JetStream) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	js := embeddedtest.JetStream(b)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SRC", Subjects: []string{"src.>"}, Storage: jetstream.FileStorage, Retention: retention, AllowDirect: true}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 128)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	for i := 0; i < n; i++ {
		if _, err := js.PublishAsync(fmt.Sprintf("src.orders.%04d", i%1000), payload); err != nil {
			b.Fatal(err)
		}
		if i%2000 == 1999 {
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("publishing did not complete")
	}
	return ctx, js
}

// BenchmarkMoveCopy is `jetctl migrate stream SRC --as SRC2`: the mirror's
// copy, then the verification, without a cutover.
func BenchmarkMoveCopy(b *testing.B) {
	n := benchMsgs(b)
	ctx, js := benchStream(b, n)
	ep := Endpoint{JS: js}
	var copyTime, total time.Duration
	for b.Loop() {
		var copied time.Time
		t0 := time.Now()
		sum, err := Stream(ctx, ep, ep, Config{Stream: "SRC", Target: "SRC2", Progress: func(p Progress) {
			if copied.IsZero() && p.Copied >= uint64(n) {
				copied = time.Now()
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		copyTime += copied.Sub(t0)
		if !sum.Verified || sum.Messages != uint64(n) {
			b.Fatalf("summary: %+v", sum)
		}
		b.StopTimer()
		if err := js.DeleteStream(ctx, "SRC2"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "msgs/s")
	b.ReportMetric(float64(n)*float64(b.N)/copyTime.Seconds(), "copy-msgs/s")
}

// BenchmarkReadHashes is one side of the verification: reading and hashing
// every message of the stream, with a consumer (limits) or by direct gets
// (workqueue, as the temporary stream of a replacement is read).
func BenchmarkReadHashes(b *testing.B) {
	for _, tc := range []struct {
		name      string
		retention jetstream.RetentionPolicy
	}{{"limits-consumer", jetstream.LimitsPolicy}, {"workqueue-direct", jetstream.WorkQueuePolicy}} {
		b.Run(tc.name, func(b *testing.B) {
			n := benchMsgs(b)
			ctx, js := benchStreamOf(b, n, tc.retention)
			for b.Loop() {
				hs, err := readHashes(ctx, js, "SRC", 1, uint64(n), mirrorHash)
				if err != nil {
					b.Fatal(err)
				}
				if len(hs) != n {
					b.Fatalf("read %d hashes, want %d", len(hs), n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkHashMsg is the hashing alone, of a 128 B message with a header.
func BenchmarkHashMsg(b *testing.B) {
	m := &envelope.Message{Seq: 1, Subject: "src.orders.0001", Data: make([]byte, 128), Time: time.Now(),
		Header: map[string][]string{"Nats-Msg-Id": {"abc"}}}
	b.ReportAllocs()
	for b.Loop() {
		_ = hashMsg(m, mirrorHash)
	}
}

// BenchmarkClientCopy is `jetctl migrate stream SRC --to-server OTHER`
// between two servers with no route: jetctl's copy, then the
// verification, without a cutover. pub-async-msgs/s is the baseline
// measured in the same run: the same messages published to a stream of
// the target's server, async with the copy's window (what `nats bench js
// pub async` does).
func BenchmarkClientCopy(b *testing.B) {
	n := benchMsgs(b)
	ctx, js := benchStream(b, n)
	djs := embeddedtest.JetStream(b)
	src, dst := Endpoint{JS: js}, Endpoint{JS: djs}
	payload := make([]byte, 128)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	var copyTime, total, pubTime time.Duration
	for b.Loop() {
		var copied time.Time
		t0 := time.Now()
		sum, err := Stream(ctx, src, dst, Config{Stream: "SRC", Progress: func(p Progress) {
			if copied.IsZero() && p.Copied >= uint64(n) {
				copied = time.Now()
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		copyTime += copied.Sub(t0)
		if !sum.Verified || sum.Messages != uint64(n) || sum.Mechanism != "copy" {
			b.Fatalf("summary: %+v", sum)
		}
		b.StopTimer()
		if err := djs.DeleteStream(ctx, "SRC"); err != nil {
			b.Fatal(err)
		}
		// The baseline.
		if _, err := djs.CreateStream(ctx, jetstream.StreamConfig{Name: "PUB", Subjects: []string{"src.>"}, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		for i := 0; i < n; i++ {
			if _, err := djs.PublishAsync(fmt.Sprintf("src.orders.%04d", i%1000), payload); err != nil {
				b.Fatal(err)
			}
			if i%copyWindow == copyWindow-1 {
				<-djs.PublishAsyncComplete()
			}
		}
		<-djs.PublishAsyncComplete()
		pubTime += time.Since(t1)
		if err := djs.DeleteStream(ctx, "PUB"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "msgs/s")
	b.ReportMetric(float64(n)*float64(b.N)/copyTime.Seconds(), "copy-msgs/s")
	b.ReportMetric(float64(n)*float64(b.N)/pubTime.Seconds(), "pub-async-msgs/s")
}

// BenchmarkWorkqueueMove is `jetctl migrate stream WQ --as WQ2` of a
// workqueue stream on one server, which jetctl copies (a mirror would
// drain it), next to what the user would otherwise have, measured in the
// same run on the same server: the mirror's move of a limits stream of the
// same messages (BenchmarkMoveCopy's), and the physical limit of the
// copy's publishes, an async publish of the same messages without headers.
func BenchmarkWorkqueueMove(b *testing.B) {
	n := benchMsgs(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	b.Cleanup(cancel)
	js := embeddedtest.JetStream(b)
	payload := make([]byte, 128)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	fill := func(name, prefix string, ret jetstream.RetentionPolicy) time.Duration {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{prefix + ".>"}, Storage: jetstream.FileStorage, Retention: ret, AllowDirect: true}); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if _, err := js.PublishAsync(fmt.Sprintf("%s.orders.%04d", prefix, i%1000), payload); err != nil {
				b.Fatal(err)
			}
			if i%copyWindow == copyWindow-1 {
				<-js.PublishAsyncComplete()
			}
		}
		<-js.PublishAsyncComplete()
		return time.Since(t0)
	}
	fill("WQ", "wq", jetstream.WorkQueuePolicy)
	fill("LIM", "lim", jetstream.LimitsPolicy)
	ep := Endpoint{JS: js}
	move := func(src, dst, mech string) time.Duration {
		t0 := time.Now()
		sum, err := Stream(ctx, ep, ep, Config{Stream: src, Target: dst})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		if !sum.Verified || sum.Messages != uint64(n) || sum.Mechanism != mech {
			b.Fatalf("summary: %+v", sum)
		}
		if err := js.DeleteStream(ctx, dst); err != nil {
			b.Fatal(err)
		}
		return took
	}
	var wq, mirror, pub time.Duration
	for b.Loop() {
		wq += move("WQ", "WQ2", "copy")
		b.StopTimer()
		mirror += move("LIM", "LIM2", "mirror")
		pub += fill("PUB", "pub", jetstream.LimitsPolicy)
		if err := js.DeleteStream(ctx, "PUB"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	rate := func(d time.Duration) float64 { return float64(n) * float64(b.N) / d.Seconds() }
	b.ReportMetric(rate(wq), "wq-move-msgs/s")
	b.ReportMetric(rate(mirror), "mirror-move-msgs/s")
	b.ReportMetric(rate(pub), "pub-async-msgs/s")
	b.ReportMetric(mirror.Seconds()/wq.Seconds(), "x-mirror-move")
	b.ReportMetric(pub.Seconds()/wq.Seconds(), "x-pub-async")
}
