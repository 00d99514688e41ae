package harness

import (
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/jetctl/jetctl/pkg/jsapi"
)

// repl-durable VAR ORIGIN READER waits (at most 10 s) until
// stream ORIGIN lists the durable the server made for stream READER to
// mirror or source it (metadata _nats.mirror.stream or _nats.src.stream
// READER), and sets VAR to its name (JS_SRC_… or JS_MIRROR_…, a hash).
func cmdReplDurable(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: repl-durable VAR ORIGIN READER")
	}
	_, js := jsFor(ts)
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, cancel := ctx()
		st, err := js.Stream(c, args[1])
		ts.Check(err)
		l := st.ListConsumers(c)
		for ci := range l.Info() {
			if target, _ := jsapi.ReplicationTarget(ci.Config.Metadata); target == args[2] && jsapi.ReplicationConsumer(ci.Config.Metadata) {
				cancel()
				ts.Setenv(args[0], ci.Name)
				return
			}
		}
		cancel()
		if time.Now().After(deadline) {
			ts.Fatalf("repl-durable: %s lists no consumer of %s after 10s", args[1], args[2])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
