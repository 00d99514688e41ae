package harness

import (
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// stream-wait [--at-most] STREAM N waits until the stream holds at least
// N messages (with --at-most: at most N) for at most a minute, so that a
// script can act in the middle of a run (restart the server, kill a
// process) whatever the machine's speed, or wait for the server to
// remove what it removes asynchronously.
func cmdStreamWait(ts *testscript.TestScript, neg bool, args []string) {
	atMost := len(args) > 0 && args[0] == "--at-most"
	if atMost {
		args = args[1:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: stream-wait [--at-most] STREAM N")
	}
	want, err := strconv.ParseUint(args[1], 10, 64)
	ts.Check(err)
	_, js := jsFor(ts)
	deadline := time.Now().Add(time.Minute)
	for {
		c, cancel := ctx()
		s, err := js.Stream(c, args[0])
		cancel()
		ts.Check(err)
		got := s.CachedInfo().State.Msgs
		if (!atMost && got >= want) || (atMost && got <= want) {
			return
		}
		if time.Now().After(deadline) {
			what := "at least"
			if atMost {
				what = "at most"
			}
			ts.Fatalf("stream %s holds %d messages after a minute, want %s %d", args[0], got, what, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
