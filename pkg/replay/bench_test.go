package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// benchMsgs is the stream size for the read benchmarks; JETCTL_BENCH_MSGS
// raises it (the bench/ comparison uses 1,000,000).
func benchMsgs() int {
	if v, err := strconv.Atoi(os.Getenv("JETCTL_BENCH_MSGS")); err == nil && v > 0 {
		return v
	}
	return 200_000
}

// benchStream starts a server with a limits stream of n 128-byte messages
// (allow_direct on) and returns a JetStream handle.
func benchStream(b *testing.B, n int) jetstream.JetStream {
	b.Helper()
	js := embeddedtest.JetStream(b, jetstream.WithPublishAsyncMaxPending(4000))
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench.>"}, AllowDirect: true}); err != nil {
		b.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 128)
	for i := 0; i < n; i++ {
		_, err := js.PublishAsync("bench.msgs", payload)
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			// A busy machine: let the acknowledgements catch up.
			<-js.PublishAsyncComplete()
			_, err = js.PublishAsync("bench.msgs", payload)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	return js
}

func benchmarkRead(b *testing.B, reader streamread.ReaderKind) {
	n := benchMsgs()
	js := benchStream(b, n)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cfg := Config{Range: streamread.Config{Stream: "BENCH", Reader: reader}, Sink: NewLineSink(io.Discard, nil)}
		sum, err := Run(ctx, js, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if sum.Messages != uint64(n) {
			b.Fatalf("read %d of %d", sum.Messages, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkReplayOrdered: an ordered consumer to JSON lines.
func BenchmarkReplayOrdered(b *testing.B) { benchmarkRead(b, streamread.ReaderOrdered) }

// BenchmarkReplayDirect: batched direct get to JSON lines.
func BenchmarkReplayDirect(b *testing.B) { benchmarkRead(b, streamread.ReaderDirect) }

// BenchmarkRepublish: read with an ordered consumer and republish to
// another stream on the same server.
func BenchmarkRepublish(b *testing.B) {
	n := benchMsgs()
	js := benchStream(b, n)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("COPY%d", i)
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cfg := Config{Range: streamread.Config{Stream: "BENCH"}, Publish: &PublishConfig{To: name + ".>"}}
		sum, err := Run(ctx, js, cfg)
		if err != nil || len(sum.Failed) > 0 {
			b.Fatal(err, sum.Failed)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "msgs/s")
}
