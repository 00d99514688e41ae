package lint

import (
	"testing"

	"github.com/jetctl/jetctl/pkg/plan"
	"github.com/jetctl/jetctl/pkg/plan/plangen"
)

// BenchmarkLint100x50 times the rules alone over what bench/lint.sh lints
// (100 files of 50 streams, loaded once): the loader's share is
// pkg/plan's BenchmarkLoad100x50.
func BenchmarkLint100x50(b *testing.B) {
	var sources []plan.Source
	for _, f := range plangen.Generate(plangen.Options{Files: 100, Streams: 50, KV: 5, Seed: 1}) {
		sources = append(sources, plan.Source{Name: f.Name, Data: f.Data})
	}
	d, err := plan.Load(sources, func(string) (string, bool) { return "", false })
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := Lint(d, Env{})
		if len(res.Findings) == 0 {
			b.Fatal("no findings")
		}
	}
}
