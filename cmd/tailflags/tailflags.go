// Package tailflags holds what `stream tail` and `kv tail` share: --count,
// --wait and --raw, the --wait deadline, and the exit-5 error when it runs
// out. Both tails are the CI primitive "wait until this shows up", and
// read these flags the same way.
package tailflags

import (
	"context"
	"errors"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
)

// Flags are a tail's --count, --wait and --raw.
type Flags struct {
	// Count stops the tail with exit 0 after this many matches; 0 never.
	Count int
	// Wait gives up with exit 5 after this long; 0 never.
	Wait time.Duration
	// Raw prints payloads (values) only, one a line.
	Raw bool

	count *pflag.Flag
}

// Bind adds the flags; items names what is counted ("matching messages"),
// payloads what --raw prints ("payloads").
func (t *Flags) Bind(fs *pflag.FlagSet, items, payloads string) {
	fs.IntVar(&t.Count, "count", 0, "stop with exit 0 after this many "+items+" (at least 1)")
	t.count = fs.Lookup("count")
	factory.DurationVar(fs, &t.Wait, "wait", 0, "give up with exit 5 after this long (90s, 5m, 7d)")
	fs.BoolVar(&t.Raw, "raw", false, "print "+payloads+" only, one a line")
}

// Validate refuses what the flag parser lets through: a --count given as
// 0 or less (0 is what no --count means: it would never stop).
func (t *Flags) Validate() error {
	if t.Count < 0 || (t.Count == 0 && t.count != nil && t.count.Changed) {
		return exitcode.UsageErrorf("invalid --count %d: must be positive", t.Count)
	}
	return nil
}

// WithWait bounds ctx by --wait; without it the context is ctx's.
func (t *Flags) WithWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.Wait <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, t.Wait, context.DeadlineExceeded)
}

// TimedOut reports whether ctx, made by WithWait from parent, ended
// because --wait ran out (and not because parent ended: an interrupt).
func (t *Flags) TimedOut(parent, ctx context.Context) bool {
	return t.Wait > 0 && parent.Err() == nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// Wording picks the words of the exit-5 message, as each tail's scripts
// have always matched them.
type Wording int

const (
	// Messages: `stream "ORDERS": waited 300ms, saw 0 of 1 matching messages`.
	Messages Wording = iota
	// Revisions: `bucket "cfg": --wait 500ms expired after 2 of 3 matches`,
	// or without --count `bucket "cfg": no revision matched within --wait 200ms`.
	Revisions
)

// Expired is the exit-5 error of a tail of resource (`stream "ORDERS"`)
// whose --wait ran out after matched matches.
func (t *Flags) Expired(w Wording, resource string, matched int) error {
	switch {
	case w == Messages:
		return exitcode.Newf(exitcode.Timeout, "%s: waited %s, saw %d of %d matching messages", resource, t.Wait, matched, t.Count)
	case t.Count > 0:
		matches := "1 match"
		if t.Count != 1 {
			matches = humanize.Comma(int64(t.Count)) + " matches"
		}
		return exitcode.Newf(exitcode.Timeout, "%s: --wait %s expired after %d of %s", resource, t.Wait, matched, matches)
	}
	return exitcode.Newf(exitcode.Timeout, "%s: no revision matched within --wait %s", resource, t.Wait)
}

// Line is the --raw form of a payload: its bytes and a newline.
func Line(buf, payload []byte) []byte { return append(append(buf, payload...), '\n') }
