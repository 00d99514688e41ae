package harness

import (
	"os"
	"regexp"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// waitFileLimit bounds wait-file: a condition not met by then is a failure.
const waitFileLimit = 60 * time.Second

// wait-file FILE [REGEXP] waits until FILE exists and, if REGEXP is given,
// its content matches it; e.g. until a background command has written a
// checkpoint that is far enough along to kill it mid-work.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: wait-file FILE [REGEXP]")
	}
	var re *regexp.Regexp
	if len(args) == 2 {
		var err error
		re, err = regexp.Compile(args[1])
		ts.Check(err)
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(waitFileLimit)
	for {
		data, err := os.ReadFile(path)
		if err == nil && (re == nil || re.Match(data)) {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				ts.Fatalf("wait-file: %s: %v after %s", args[0], err, waitFileLimit)
			}
			ts.Fatalf("wait-file: %s does not match %q after %s: %s", args[0], args[1], waitFileLimit, data)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
