package harness

import (
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// stream-wait STREAM N waits until the stream holds at least N messages
// (at most a minute), so that a script can act in the middle of a run
// (restart the server, kill a process) whatever the machine's speed.
func cmdStreamWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: stream-wait STREAM N")
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
		if got >= want {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("stream %s holds %d messages after a minute, want at least %d", args[0], got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
