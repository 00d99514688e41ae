package replay

import (
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/replay"
)

type progress struct{ bar *factory.Progress }

// newProgress shows a bar for a bounded range when stderr is a terminal.
func newProgress(f *factory.Factory, o *options, sum replay.Summary) *progress {
	total := int64(-1)
	if sum.LastSeq >= sum.FirstSeq && sum.LastSeq > 0 {
		total = int64(sum.LastSeq - sum.FirstSeq + 1)
	}
	bar := f.NewProgress(total, "replay", o.noProgress || o.Follow())
	if bar == nil {
		return nil
	}
	return &progress{bar: bar}
}

func (p *progress) update(s replay.Summary) {
	if p != nil {
		p.bar.Set(int64(s.Read))
	}
}

func (p *progress) finish() {
	if p != nil {
		p.bar.Finish()
	}
}
