// Package tailflags holds what `stream tail` and `kv tail` share: --count,
// --wait and --raw, the --wait deadline, the connection, and how a tail
// ends (End: exit 5 when --wait runs out, exit 1 when the server cannot be
// reached). Both tails are the CI primitive "wait until this shows up", and
// read these flags the same way.
package tailflags

import (
	"context"
	"errors"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
)

// Flags are a tail's --count, --wait and --raw.
type Flags struct {
	// Count stops the tail with exit 0 after this many matches; 0 never.
	Count int
	// Wait gives up with exit 5 after this long; 0 never. Without Count
	// it bounds the tail: exit 0 after at least one match, else 5.
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

// WithWait bounds ctx by --wait; without it the context is ctx's. The
// deadline counts from here, before connecting.
func (t *Flags) WithWait(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.Wait <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, t.Wait, context.DeadlineExceeded)
}

// JetStream connects a tail with parent, the command's context, not with
// --wait's: connecting is bounded by --timeout (and an interrupt) only, so
// a server that cannot be reached is exit 1, "cannot connect to ...", for
// both tails and whatever --wait says (docs/exit-codes.md). A --wait that
// runs out while connecting is decided by End once the read gives up.
func JetStream(parent context.Context, f *factory.Factory) (jetstream.JetStream, error) {
	return f.JetStream(parent)
}

// TimedOut reports whether ctx, made by WithWait from parent, ended
// because --wait ran out (and not because parent ended: an interrupt).
func (t *Flags) TimedOut(parent, ctx context.Context) bool {
	return t.Wait > 0 && parent.Err() == nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// End decides how a tail that read with ctx (made by WithWait from parent)
// ends, for both tails: err is what the read returned, matched how many
// matches it printed. A --count reached is the caller's success before
// this. Here:
//   - an error of its own (a missing stream, a server error) is that error;
//   - a --wait that ran out is exit 5 (Expired), whenever it ran out:
//     before the read started (while the stream was looked up) or after;
//     except that without --count, --wait only bounds the tail, and at
//     least one match is success;
//   - anything else (an interrupt, no --wait) is err as it is.
func (t *Flags) End(parent, ctx context.Context, err error, w Wording, resource string, matched int) error {
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	if !t.TimedOut(parent, ctx) {
		return err
	}
	if t.Count == 0 && matched > 0 {
		return nil
	}
	return t.Expired(w, resource, matched)
}

// Wording picks the words of the exit-5 message, as each tail's scripts
// have always matched them.
type Wording int

const (
	// Messages: `stream "ORDERS": waited 300ms, saw 0 of 1 matching messages`,
	// or without --count `stream "ORDERS": no message matched within --wait 300ms`.
	Messages Wording = iota
	// Revisions: `bucket "cfg": --wait 500ms expired after 2 of 3 matches`,
	// or without --count `bucket "cfg": no revision matched within --wait 200ms`.
	Revisions
)

// Expired is the exit-5 error of a tail of resource (`stream "ORDERS"`)
// whose --wait ran out after matched matches.
func (t *Flags) Expired(w Wording, resource string, matched int) error {
	switch {
	case w == Messages && t.Count > 0:
		return exitcode.Newf(exitcode.Timeout, "%s: waited %s, saw %d of %d matching messages", resource, t.Wait, matched, t.Count)
	case w == Messages:
		return exitcode.Newf(exitcode.Timeout, "%s: no message matched within --wait %s", resource, t.Wait)
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
