package plan

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/plan/plangen"
)

// benchDesired declares streams × consumers, as bench/plan.sh does.
func benchDesired(streams, consumers int) *Desired {
	d := &Desired{}
	for s := 0; s < streams; s++ {
		name := fmt.Sprintf("S%03d", s)
		d.Resources = append(d.Resources, &Resource{Kind: KindStream, Name: name, FieldPos: map[string]Pos{},
			StreamConfig: &jetstream.StreamConfig{Name: name, Subjects: []string{fmt.Sprintf("s%03d.>", s)}}})
		for c := 0; c < consumers; c++ {
			cname := fmt.Sprintf("c%d", c)
			d.Resources = append(d.Resources, &Resource{Kind: KindConsumer, Stream: name, Name: cname, FieldPos: map[string]Pos{},
				ConsumerConfig: &jetstream.ConsumerConfig{Name: cname, Durable: cname, FilterSubject: fmt.Sprintf("s%03d.c%d", s, c), MaxDeliver: 5}})
		}
	}
	return d
}

// BenchmarkPlan200x5 plans 200 streams × 5 consumers, all in sync, against
// an embedded server: the list calls and the comparison.
func BenchmarkPlan200x5(b *testing.B) {
	js := embeddedtest.JetStream(b)
	ctx := context.Background()
	desired := benchDesired(200, 5)
	p, live, err := Make(ctx, js, desired, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Apply(ctx, js, p, live, ApplyOptions{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, _, err := Make(ctx, js, desired, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if p.Changed() {
			b.Fatal("plan not empty")
		}
	}
}

// BenchmarkCompute200x5 is the comparison alone, without the server.
func BenchmarkCompute200x5(b *testing.B) {
	js := embeddedtest.JetStream(b)
	ctx := context.Background()
	desired := benchDesired(200, 5)
	p, live, err := Make(ctx, js, desired, Options{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Apply(ctx, js, p, live, ApplyOptions{}); err != nil {
		b.Fatal(err)
	}
	live, err = FetchLive(ctx, js, func(string) bool { return true }, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Compute(desired, live, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad100x50 reads and validates the tree bench/genplans writes
// by default: 100 files of 50 streams (5,000 streams, 1 to 3 subjects and
// 1 or 2 consumers each) and 5 KV buckets. jetctl plan and jetctl lint
// pay this before anything else.
func BenchmarkLoad100x50(b *testing.B) {
	dir := b.TempDir()
	if err := plangen.Write(dir, plangen.Options{Files: 100, Streams: 50, KV: 5, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sources, err := ReadSources([]string{dir})
		if err != nil {
			b.Fatal(err)
		}
		d, err := Load(sources, noVars)
		if err != nil {
			b.Fatal(err)
		}
		if len(d.Files) != 100 {
			b.Fatalf("%d files", len(d.Files))
		}
	}
}
