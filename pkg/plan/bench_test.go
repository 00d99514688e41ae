package plan

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
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
