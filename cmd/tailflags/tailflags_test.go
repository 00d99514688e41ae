package tailflags

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
)

func TestBindAndValidate(t *testing.T) {
	var tf Flags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	tf.Bind(fs, "matches", "values")
	if err := fs.Parse([]string{"--count", "3", "--wait", "7d", "--raw"}); err != nil {
		t.Fatal(err)
	}
	if tf.Count != 3 || tf.Wait != 7*24*time.Hour || !tf.Raw {
		t.Errorf("parsed %+v", tf)
	}
	tf.Count = -1
	if err := tf.Validate(); exitcode.Of(err) != exitcode.Usage || err.Error() != "invalid --count -1: must be positive" {
		t.Errorf("Validate: %v", err)
	}
}

// --count 0 is refused as --count -1 is; no --count (also 0) is not.
func TestCountZero(t *testing.T) {
	var given Flags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	given.Bind(fs, "matches", "values")
	if err := fs.Parse([]string{"--count", "0"}); err != nil {
		t.Fatal(err)
	}
	if err := given.Validate(); exitcode.Of(err) != exitcode.Usage || err == nil || err.Error() != "invalid --count 0: must be positive" {
		t.Errorf("--count 0: Validate: %v", err)
	}
	var absent Flags
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	absent.Bind(fs, "matches", "values")
	if err := fs.Parse([]string{"--wait", "1s"}); err != nil {
		t.Fatal(err)
	}
	if err := absent.Validate(); err != nil {
		t.Errorf("no --count: Validate: %v", err)
	}
}

func TestExpired(t *testing.T) {
	for _, c := range []struct {
		flags   Flags
		wording Wording
		res     string
		matched int
		want    string
	}{
		{Flags{Count: 1, Wait: 300 * time.Millisecond}, Messages, `stream "ORDERS"`, 0, `stream "ORDERS": waited 300ms, saw 0 of 1 matching messages`},
		{Flags{Count: 3, Wait: 500 * time.Millisecond}, Revisions, `bucket "cfg"`, 2, `bucket "cfg": --wait 500ms expired after 2 of 3 matches`},
		{Flags{Count: 1, Wait: time.Second}, Revisions, `bucket "cfg"`, 0, `bucket "cfg": --wait 1s expired after 0 of 1 match`},
		{Flags{Wait: 200 * time.Millisecond}, Revisions, `bucket "cfg"`, 0, `bucket "cfg": no revision matched within --wait 200ms`},
	} {
		err := c.flags.Expired(c.wording, c.res, c.matched)
		if exitcode.Of(err) != exitcode.Timeout || err.Error() != c.want {
			t.Errorf("got %v (exit %d), want %q", err, exitcode.Of(err), c.want)
		}
	}
}

// TimedOut tells --wait running out from an interrupt and from no --wait.
func TestTimedOut(t *testing.T) {
	tf := Flags{Wait: time.Nanosecond}
	parent := context.Background()
	ctx, cancel := tf.WithWait(parent)
	defer cancel()
	<-ctx.Done()
	if !tf.TimedOut(parent, ctx) {
		t.Error("--wait ran out, TimedOut is false")
	}
	interrupted, stop := context.WithCancel(context.Background())
	ctx2, cancel2 := tf.WithWait(interrupted)
	defer cancel2()
	stop()
	if tf.TimedOut(interrupted, ctx2) {
		t.Error("interrupted, TimedOut is true")
	}
	none := Flags{}
	ctx3, cancel3 := none.WithWait(parent)
	cancel3()
	if none.TimedOut(parent, ctx3) {
		t.Error("no --wait, TimedOut is true")
	}
}

// End is the one place both tails decide how they end.
func TestEnd(t *testing.T) {
	parent := context.Background()
	expired := func(tf *Flags) context.Context {
		ctx, cancel := tf.WithWait(parent)
		t.Cleanup(cancel)
		<-ctx.Done()
		return ctx
	}
	notFound := exitcode.Newf(exitcode.NotFound, `stream "NOPE": not found`)
	for _, c := range []struct {
		name    string
		flags   Flags
		err     error
		matched int
		want    int
		msg     string
	}{
		// The read gave up with the context's error before it started.
		{"expired before the read", Flags{Count: 1, Wait: time.Nanosecond}, context.DeadlineExceeded, 0, exitcode.Timeout, `stream "S": waited 1ns, saw 0 of 1 matching messages`},
		{"expired, no error returned", Flags{Count: 2, Wait: time.Nanosecond}, nil, 1, exitcode.Timeout, `stream "S": waited 1ns, saw 1 of 2 matching messages`},
		{"own error wins", Flags{Count: 1, Wait: time.Nanosecond}, notFound, 0, exitcode.NotFound, `stream "NOPE": not found`},
		{"no --count, a match", Flags{Wait: time.Nanosecond}, context.DeadlineExceeded, 1, 0, ""},
		{"no --count, none", Flags{Wait: time.Nanosecond}, context.DeadlineExceeded, 0, exitcode.Timeout, `stream "S": no message matched within --wait 1ns`},
	} {
		tf := c.flags
		err := tf.End(parent, expired(&tf), c.err, Messages, `stream "S"`, c.matched)
		if got := exitcode.Of(err); got != c.want || (err != nil && err.Error() != c.msg) {
			t.Errorf("%s: got %v (exit %d), want exit %d %q", c.name, err, got, c.want, c.msg)
		}
	}
	// Interrupted: the error as it is, not a timeout.
	tf := Flags{Count: 1, Wait: time.Hour}
	interrupted, stop := context.WithCancel(parent)
	ctx, cancel := tf.WithWait(interrupted)
	defer cancel()
	stop()
	if err := tf.End(interrupted, ctx, context.Canceled, Messages, `stream "S"`, 0); err != context.Canceled {
		t.Errorf("interrupted: got %v", err)
	}
}
