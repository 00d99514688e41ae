package harness

import (
	"net"
	"strconv"

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
