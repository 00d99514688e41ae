package harness

import (
	"path/filepath"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// old-server VAR [VERSION] starts an older nats-server release as a
// binary (embeddedtest.OldServerVersion, API level 2, when VERSION is not
// given), built from the Go module proxy the first time on this machine
// and cached (embeddedtest.ServerBinary), with JetStream and its store
// under $WORK; VAR is its URL. It stops when the script ends.
func cmdOldServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: old-server VAR [VERSION]")
	}
	version := embeddedtest.OldServerVersion
	if len(args) == 2 {
		version = args[1]
	}
	bin, err := embeddedtest.ServerBinary(version)
	ts.Check(err)
	p, err := embeddedtest.StartServerBinary(bin, filepath.Join(ts.Getenv("WORK"), ".old-server-"+args[0]))
	ts.Check(err)
	ts.Defer(p.Stop)
	ts.Setenv(args[0], p.URL)
}
