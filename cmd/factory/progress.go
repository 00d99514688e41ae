package factory

import (
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress is a progress bar on stderr. It is nil-safe: commands call it
// unconditionally, and it draws only when stderr is a terminal.
type Progress struct {
	bar *progressbar.ProgressBar
}

// NewProgress returns a bar for total items (-1 when unknown), or nil when
// stderr is not a terminal or the user asked for none.
func (f *Factory) NewProgress(total int64, description string, disabled bool) *Progress {
	if disabled || !f.IO.StderrTTY {
		return nil
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(f.IO.ErrOut),
		progressbar.OptionSetDescription(description),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("msgs"),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetWidth(30),
	}
	if total < 0 {
		// A bar of unknown length runs a spinner goroutine that reads the
		// bar's start time without its lock, while the first render writes
		// it under the lock: a data race (progressbar v3.19.1) whenever the
		// first Set comes after the spinner's first tick. Rendering the
		// blank bar at once sets the start time before that goroutine
		// starts, and nothing writes it again.
		opts = append(opts, progressbar.OptionSetRenderBlankState(true))
	}
	return &Progress{bar: progressbar.NewOptions64(total, opts...)}
}

// Set moves the bar to n.
func (p *Progress) Set(n int64) {
	if p != nil {
		_ = p.bar.Set64(n)
	}
}

// Finish removes the bar, leaving the line for the summary.
func (p *Progress) Finish() {
	if p != nil {
		_ = p.bar.Finish()
	}
}
