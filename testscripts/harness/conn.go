package harness

import (
	"net"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// busy-port VAR listens on a loopback port for the rest of the script and
// sets VAR to its number, for commands that must find a port in use.
func cmdBusyPort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: busy-port VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	ts.Defer(func() { l.Close() })
	ts.Setenv(args[0], strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}

// wait-consumer STREAM N waits until STREAM has at least N consumers, e.g.
// until a background jetctl has started reading.
func cmdWaitConsumer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: wait-consumer STREAM N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	_, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	for {
		s, err := js.Stream(c, args[0])
		if err == nil {
			info, err := s.Info(c)
			if err == nil && info.State.Consumers >= want {
				return
			}
		}
		select {
		case <-c.Done():
			ts.Fatalf("wait-consumer: stream %s has fewer than %d consumers", args[0], want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
