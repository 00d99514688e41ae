package harness

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/jetctl/jetctl/pkg/embedded"
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

// perm-server VAR starts a JetStream server with its users, sets VAR to its
// URL (without credentials) and VAR_ADMIN to the URL with the admin's:
// admin (password admin) may do anything;
// reader (password reader) has exactly the permissions of the
// JETCTL_READ_ONLY block in docs/connecting.md, so that the documented
// permissions are the tested ones; limited (password limited) may only get
// account and stream info; nomsg (password nomsg) may list streams and
// consumers but not get messages; noaudit (password noaudit) may do
// anything but publish audit records (jetctl.audit.>); auditor (password
// s3cret-Pw-4udit) may do anything. It stops when the script ends.
func cmdPermServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: perm-server VAR")
	}
	block, err := readOnlyPermissions()
	ts.Check(err)
	conf := filepath.Join(ts.Getenv("WORK"), ".perm-server.conf")
	ts.Check(os.WriteFile(conf, []byte(block+`
authorization {
  users: [
    {user: admin, password: admin}
    {user: reader, password: reader, permissions: $JETCTL_READ_ONLY}
    {user: limited, password: limited, permissions: {
      publish: ["$JS.API.INFO", "$JS.API.STREAM.INFO.*"], subscribe: ["_INBOX.>"]}}
    {user: nomsg, password: nomsg, permissions: {
      publish: ["$JS.API.INFO", "$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*",
        "$JS.API.CONSUMER.LIST.*", "$JS.API.CONSUMER.NAMES.*", "$JS.API.CONSUMER.INFO.*.>"],
      subscribe: ["_INBOX.>"]}}
    {user: noaudit, password: noaudit, permissions: {
      publish: {allow: [">"], deny: ["jetctl.audit.>"]}, subscribe: [">"]}}
    {user: auditor, password: "s3cret-Pw-4udit"}
  ]
}
`), 0o600))
	c, err := embedded.Start(embedded.Config{StoreDir: filepath.Join(ts.Getenv("WORK"), ".perm-"+args[0]), ConfigFile: conf})
	ts.Check(err)
	ts.Defer(c.Shutdown)
	ts.Setenv(args[0], c.URL())
	ts.Setenv(args[0]+"_ADMIN", strings.Replace(c.URL(), "nats://", "nats://admin:admin@", 1))
}

// readOnlyPermissions returns the JETCTL_READ_ONLY = {...} block of
// docs/connecting.md.
func readOnlyPermissions() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	doc := filepath.Join(filepath.Dir(file), "..", "..", "docs", "connecting.md")
	data, err := os.ReadFile(doc)
	if err != nil {
		return "", err
	}
	text := string(data)
	start := strings.Index(text, "JETCTL_READ_ONLY = {")
	if start < 0 {
		return "", fmt.Errorf("%s: no JETCTL_READ_ONLY block", doc)
	}
	end := strings.Index(text[start:], "\n}\n")
	if end < 0 {
		return "", fmt.Errorf("%s: JETCTL_READ_ONLY block does not end", doc)
	}
	return text[start : start+end+3], nil
}
