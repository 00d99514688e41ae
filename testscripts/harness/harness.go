// Package harness runs jetctl's testscripts: each script gets its own
// embedded JetStream server (or 3-node cluster), started in the script's
// setup and stopped when the script ends, and a few script commands to
// prepare and check the server's state. It is imported only by tests.
package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/jetctl/jetctl/pkg/embedded"
)

type clusterKey struct{}

// Setup returns a testscript setup that starts nodes embedded servers with
// their store under $WORK, points NATS_URL at them, isolates HOME and
// XDG_CONFIG_HOME under $WORK, and stops the servers when the script ends.
func Setup(nodes int) func(*testscript.Env) error {
	return func(env *testscript.Env) error {
		c, err := embedded.Start(embedded.Config{
			StoreDir: filepath.Join(env.WorkDir, ".jetstream"),
			Nodes:    nodes,
		})
		if err != nil {
			return err
		}
		env.Defer(c.Shutdown)
		env.Values[clusterKey{}] = c
		env.Values[bgKey{}] = &bgHolder{}
		env.Values[pubLoopsKey{}] = &pubLoops{loops: map[string]*pubLoop{}}
		env.Values[exporterKey{}] = &exporterHolder{}
		home := filepath.Join(env.WorkDir, "home")
		if err := os.MkdirAll(home, 0o755); err != nil {
			return err
		}
		env.Setenv("NATS_URL", c.ServerURLs())
		env.Setenv("HOME", home)
		env.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
		env.Setenv("NO_COLOR", "1")
		return raceReports(env)
	}
}

// Cmds are the script commands jetctl's scripts may use.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"pub":             cmdPub,
		"stream-add":      cmdStreamAdd,
		"stream-count":    cmdStreamCount,
		"stream-current":  cmdStreamCurrent,
		"stream-wait":     cmdStreamWait,
		"kv-put":          cmdKVPut,
		"kv-bucket":       cmdKVBucket,
		"kv-op":           cmdKVOp,
		"nats-req":        cmdNATSReq,
		"server":          cmdServer,
		"bgserver":        cmdBGServer,
		"exits":           cmdExits,
		"silent-listener": cmdSilentListener,
		"busy-port":       cmdBusyPort,
		"wait-consumer":   cmdWaitConsumer,
		"perm-server":     cmdPermServer,
		"plain-server":    cmdPlainServer,
		"stream-edit":     cmdStreamEdit,
		"now":             cmdNow,
		"sleep":           cmdSleep,
		"second-js":       cmdSecondJS,
		"old-server":      cmdOldServer,
		"consumer-add":    cmdConsumerAdd,
		"worker":          cmdWorker,
		"wait-file":       cmdWaitFile,
		"interrupt-busy":  cmdInterruptBusy,
		"consumer-json":   cmdConsumerJSON,
		"consumer-next":   cmdConsumerNext,
		"poison-worker":   cmdPoisonWorker,
		"consumer-leader": cmdConsumerLeader,
		"obj-put":         cmdObjPut,
		"obj-get":         cmdObjGet,
		"stepdown":        cmdStepdown,
		"lead-apart":      cmdLeadApart,
		"pub-loop":        cmdPubLoop,
		"domain-pair":     cmdDomainPair,
		"health-agree":    cmdHealthAgree,
		"exporter":        cmdExporter,
		"http-get":        cmdHTTPGet,
		"prom":            cmdProm,
		"scrape-until":    cmdScrapeUntil,
		"every-header":    cmdEveryHeader,
		"counter-stream":  cmdCounterStream,
		"fast-batch":      cmdFastBatch,
		"priority-client": cmdPriorityClient,
		"repl-durable":    cmdReplDurable,
	}
}

// sleep DURATION waits, e.g. to separate message timestamps.
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// now VAR sets VAR to the current time, RFC 3339 with nanoseconds, UTC.
func cmdNow(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: now VAR")
	}
	ts.Setenv(args[0], time.Now().UTC().Format(time.RFC3339Nano))
}

// second-js VAR starts another JetStream server (its store under $WORK)
// and sets VAR to its URL; it stops when the script ends.
func cmdSecondJS(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: second-js VAR")
	}
	c, err := embedded.Start(embedded.Config{StoreDir: filepath.Join(ts.Getenv("WORK"), ".second-"+args[0])})
	ts.Check(err)
	ts.Defer(c.Shutdown)
	ts.Setenv(args[0], c.URL())
}

// plain-server VAR starts a NATS server without JetStream and sets VAR to
// its URL; it stops when the script ends.
func cmdPlainServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: plain-server VAR")
	}
	c, err := embedded.Start(embedded.Config{StoreDir: filepath.Join(ts.Getenv("WORK"), ".plain"), NoJetStream: true})
	ts.Check(err)
	ts.Defer(c.Shutdown)
	ts.Setenv(args[0], c.URL())
}

// silent-listener VAR listens on a loopback port that accepts connections
// and never answers, and sets VAR to its host:port.
func cmdSilentListener(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: silent-listener VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	ts.Defer(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	ts.Setenv(args[0], l.Addr().String())
}

// exits CODE PROGRAM [ARGS...] runs PROGRAM like exec and asserts its exit
// code; stdout and stderr are kept for the assertions that follow.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = exitErr.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

func cluster(ts *testscript.TestScript) *embedded.Cluster {
	return ts.Value(clusterKey{}).(*embedded.Cluster)
}

// jsFor connects to $NATS_URL (the script's server unless the script points
// it elsewhere); the connection closes when the script ends.
func jsFor(ts *testscript.TestScript) (*nats.Conn, jetstream.JetStream) {
	nc, err := nats.Connect(ts.Getenv("NATS_URL"), nats.Timeout(5*time.Second))
	ts.Check(err)
	ts.Defer(nc.Close)
	js, err := jetstream.New(nc)
	ts.Check(err)
	return nc, js
}

func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// pub [-n N] [-H Name:Value]... [-x HEX] [-s BYTES] SUBJECT [PAYLOAD]
//
// Publishes N (default 1) messages through JetStream and waits for every
// acknowledgement. -Hx Name:HEX adds a header whose value is given in hex
// (bytes that are not UTF-8). {i} in the subject or payload becomes the message's
// number, from 1; -x gives a binary payload in hex instead; -s pads each
// payload with dots to BYTES.
func cmdPub(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! pub")
	}
	n, size := 1, 0
	hdr := nats.Header{}
	var hexPayload []byte
	for len(args) > 1 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-n":
			v, err := strconv.Atoi(args[1])
			ts.Check(err)
			n = v
		case "-s":
			v, err := strconv.Atoi(args[1])
			ts.Check(err)
			size = v
		case "-x":
			raw, err := hex.DecodeString(args[1])
			ts.Check(err)
			hexPayload = raw
		case "-H":
			k, v, ok := strings.Cut(args[1], ":")
			if !ok {
				ts.Fatalf("pub: header %q is not Name:Value", args[1])
			}
			hdr.Add(k, v)
		case "-Hx":
			k, v, ok := strings.Cut(args[1], ":")
			raw, err := hex.DecodeString(v)
			if !ok || err != nil {
				ts.Fatalf("pub: header %q is not Name:HEX", args[1])
			}
			hdr.Add(k, string(raw))
		default:
			ts.Fatalf("pub: unknown flag %s", args[0])
		}
		args = args[2:]
	}
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: pub [-n N] [-H Name:Value]... [-Hx Name:HEX]... [-x HEX] [-s BYTES] SUBJECT [PAYLOAD]")
	}
	payload := ""
	if len(args) == 2 {
		payload = args[1]
	}
	_, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	var futures []jetstream.PubAckFuture
	for i := 1; i <= n; i++ {
		data := []byte(strings.ReplaceAll(payload, "{i}", strconv.Itoa(i)))
		if hexPayload != nil {
			data = hexPayload
		}
		if len(data) < size {
			data = append(data, bytes.Repeat([]byte("."), size-len(data))...)
		}
		subject := strings.ReplaceAll(args[0], "{i}", strconv.Itoa(i))
		msg := &nats.Msg{Subject: subject, Header: hdr, Data: data}
		// A loaded machine acknowledges slowly: wait while the client holds
		// its maximum of unacknowledged messages, rather than fail.
		f, err := js.PublishMsgAsync(msg, jetstream.WithStallWait(30*time.Second))
		ts.Check(err)
		futures = append(futures, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-c.Done():
		ts.Fatalf("pub: timed out waiting for acknowledgements")
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			ts.Fatalf("pub: %v", err)
		}
	}
}

// stream-add [--retention limits|interest|workqueue] [--replicas N]
// [--storage file|memory] [--allow-direct true] NAME SUBJECT...
func cmdStreamAdd(ts *testscript.TestScript, neg bool, args []string) {
	cfg := jetstream.StreamConfig{Storage: jetstream.FileStorage, Replicas: 1}
	for len(args) > 1 && strings.HasPrefix(args[0], "--") {
		switch args[0] {
		case "--retention":
			ts.Check(cfg.Retention.UnmarshalJSON([]byte(strconv.Quote(args[1]))))
		case "--replicas":
			v, err := strconv.Atoi(args[1])
			ts.Check(err)
			cfg.Replicas = v
		case "--storage":
			ts.Check(cfg.Storage.UnmarshalJSON([]byte(strconv.Quote(args[1]))))
		case "--allow-direct":
			v, err := strconv.ParseBool(args[1])
			ts.Check(err)
			cfg.AllowDirect = v
		default:
			ts.Fatalf("stream-add: unknown flag %s", args[0])
		}
		args = args[2:]
	}
	if len(args) < 1 {
		ts.Fatalf("usage: stream-add [--retention R] [--replicas N] [--storage S] NAME [SUBJECT...]")
	}
	cfg.Name, cfg.Subjects = args[0], args[1:]
	_, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	_, err := js.CreateStream(c, cfg)
	if neg {
		if err == nil {
			ts.Fatalf("stream-add: unexpected success")
		}
		return
	}
	ts.Check(err)
}

// stream-count STREAM N asserts that STREAM holds N messages.
func cmdStreamCount(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: stream-count STREAM N")
	}
	want, err := strconv.ParseUint(args[1], 10, 64)
	ts.Check(err)
	_, js := jsFor(ts)
	info, err := streamInfo(ts, js, args[0])
	ts.Check(err)
	got := info.State.Msgs
	if (got == want) == neg {
		ts.Fatalf("stream %s holds %d messages, want %s%d", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// kv-put BUCKET KEY VALUE creates the bucket (history 10) if needed and puts.
func cmdKVPut(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: kv-put BUCKET KEY VALUE")
	}
	_, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	kv, err := js.CreateOrUpdateKeyValue(c, jetstream.KeyValueConfig{Bucket: args[0], History: 10})
	ts.Check(err)
	_, err = kv.PutString(c, args[1], args[2])
	ts.Check(err)
}

// kvServerFlag takes a leading "-s URL" off args: the server to use
// instead of the script's own.
func kvServerFlag(ts *testscript.TestScript, args []string) (jetstream.JetStream, []string) {
	if len(args) >= 2 && args[0] == "-s" {
		nc, err := nats.Connect(args[1], nats.Timeout(5*time.Second))
		ts.Check(err)
		ts.Defer(nc.Close)
		js, err := jetstream.New(nc)
		ts.Check(err)
		return js, args[2:]
	}
	_, js := jsFor(ts)
	return js, args
}

// kv-bucket [-s URL] [--replicas N] BUCKET HISTORY creates a bucket that
// keeps HISTORY revisions per key.
func cmdKVBucket(ts *testscript.TestScript, neg bool, args []string) {
	js, args := kvServerFlag(ts, args)
	replicas := 1
	if len(args) >= 2 && args[0] == "--replicas" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		replicas, args = n, args[2:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: kv-bucket [-s URL] [--replicas N] BUCKET HISTORY")
	}
	history, err := strconv.Atoi(args[1])
	ts.Check(err)
	c, cancel := ctx()
	defer cancel()
	_, err = js.CreateKeyValue(c, jetstream.KeyValueConfig{Bucket: args[0], History: uint8(history), Replicas: replicas})
	ts.Check(err)
}

// kv-op [-s URL] put BUCKET KEY VALUE|-x HEX|-f FILE, kv-op [-s URL]
// del|purge BUCKET KEY: writes to a bucket; put creates a missing bucket
// with history 10 and leaves an existing one as it is.
func cmdKVOp(ts *testscript.TestScript, neg bool, args []string) {
	js, args := kvServerFlag(ts, args)
	usage := "usage: kv-op [-s URL] put BUCKET KEY VALUE|-x HEX|-f FILE | kv-op [-s URL] del|purge BUCKET KEY"
	if neg || len(args) < 3 {
		ts.Fatalf("%s", usage)
	}
	// After a step-down the bucket's stream may be electing a leader: wait
	// for one, so that the write below is not lost in the election.
	if _, err := streamInfo(ts, js, "KV_"+args[1]); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		ts.Fatalf("kv-op: %v", err)
	}
	c, cancel := ctx()
	defer cancel()
	kv, err := js.KeyValue(c, args[1])
	if errors.Is(err, jetstream.ErrBucketNotFound) && args[0] == "put" {
		kv, err = js.CreateKeyValue(c, jetstream.KeyValueConfig{Bucket: args[1], History: 10})
	}
	ts.Check(err)
	switch {
	case args[0] == "put" && len(args) == 4:
		_, err = kv.Put(c, args[2], []byte(args[3]))
	case args[0] == "put" && len(args) == 5 && args[3] == "-x":
		value, herr := hex.DecodeString(args[4])
		ts.Check(herr)
		_, err = kv.Put(c, args[2], value)
	case args[0] == "put" && len(args) == 5 && args[3] == "-f":
		_, err = kv.Put(c, args[2], []byte(ts.ReadFile(args[4])))
	case args[0] == "del" && len(args) == 3:
		err = kv.Delete(c, args[2])
	case args[0] == "purge" && len(args) == 3:
		err = kv.Purge(c, args[2])
	default:
		ts.Fatalf("%s", usage)
	}
	ts.Check(err)
}

// nats-req SUBJECT [BODY] sends a request and writes the reply to stdout.
func cmdNATSReq(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: nats-req SUBJECT [BODY]")
	}
	body := ""
	if len(args) == 2 {
		body = args[1]
	}
	nc, _ := jsFor(ts)
	msg, err := nc.Request(args[0], []byte(body), 10*time.Second)
	if neg {
		if err == nil {
			ts.Fatalf("nats-req: unexpected success")
		}
		return
	}
	ts.Check(err)
	fmt.Fprintln(ts.Stdout(), string(msg.Data))
}

// server stop|start|restart [NODE] stops or starts a node (default 0) of the
// script's server, keeping its port and data. server stop-leader-of STREAM
// stops the node leading STREAM (an R1 stream's only server), sets
// $STOPPED_NODE for a later start, and waits until the cluster answers.
func cmdServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: server stop|start|restart [NODE] | server stop-leader-of STREAM")
	}
	node := 0
	if len(args) == 2 && args[0] != "stop-leader-of" {
		v, err := strconv.Atoi(args[1])
		ts.Check(err)
		node = v
	}
	c := cluster(ts)
	switch args[0] {
	case "stop-leader-of":
		// The node leading stream args[1] (an R1 stream's only server).
		_, js := jsFor(ts)
		si, err := streamInfo(ts, js, args[1])
		ts.Check(err)
		if si.Cluster == nil || si.Cluster.Leader == "" {
			ts.Fatalf("stream %s has no leader", args[1])
		}
		var i int
		if _, err := fmt.Sscanf(si.Cluster.Leader, "jetctl-%d", &i); err != nil {
			ts.Fatalf("leader %q: not a node of this cluster", si.Cluster.Leader)
		}
		ts.Check(c.Stop(i - 1))
		ts.Setenv("STOPPED_NODE", strconv.Itoa(i-1))
		// If the node led the meta group, the others elect a new leader
		// first: wait (30 s at most) until the API answers again.
		deadline := time.Now().Add(30 * time.Second)
		_, js = jsFor(ts)
		for {
			cx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := js.AccountInfo(cx)
			cancel()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("the cluster did not answer after node %d stopped: %v", i-1, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	case "stop":
		ts.Check(c.Stop(node))
	case "start":
		ts.Check(c.Restart(node))
	case "restart":
		ts.Check(c.Stop(node))
		ts.Check(c.Restart(node))
	default:
		ts.Fatalf("usage: server stop|start|restart [NODE] | server stop-leader-of STREAM")
	}
}

type bgServer struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	done   chan error
}

type bgKey struct{}

type bgHolder struct{ server *bgServer }

// bgserver start [ARGS...] runs `jetctl server --port 0 ARGS...` in the
// background, waits for its NATS_URL line and sets $BG_NATS_URL.
// bgserver stop sends SIGINT and checks that it shut down cleanly.
func cmdBGServer(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: bgserver start [ARGS...] | bgserver stop")
	}
	switch args[0] {
	case "start":
		bin, err := exec.LookPath("jetctl")
		ts.Check(err)
		cmd := exec.Command(bin, append([]string{"server", "--port", "0"}, args[1:]...)...)
		cmd.Env = append(os.Environ(), "GORACE="+ts.Getenv("GORACE"))
		cmd.Dir = ts.Getenv("WORK")
		cmd.Stderr = io.Discard
		stdout, err := cmd.StdoutPipe()
		ts.Check(err)
		ts.Check(cmd.Start())
		bg := &bgServer{cmd: cmd, done: make(chan error, 1)}
		ts.Defer(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				<-bg.done
			}
		})
		urls := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				line := sc.Text()
				bg.stdout.WriteString(line + "\n")
				if u, ok := strings.CutPrefix(line, "export NATS_URL="); ok {
					urls <- u
				}
			}
			bg.done <- cmd.Wait()
		}()
		select {
		case u := <-urls:
			ts.Setenv("BG_NATS_URL", u)
		case err := <-bg.done:
			ts.Fatalf("jetctl server exited before it was ready: %v", err)
		case <-time.After(30 * time.Second):
			ts.Fatalf("jetctl server printed no NATS_URL within 30s")
		}
		ts.Value(bgKey{}).(*bgHolder).server = bg
	case "stop":
		bg := ts.Value(bgKey{}).(*bgHolder).server
		if bg == nil {
			ts.Fatalf("bgserver stop: no server started")
		}
		ts.Check(bg.cmd.Process.Signal(syscall.SIGINT))
		select {
		case err := <-bg.done:
			if err != nil {
				ts.Fatalf("jetctl server did not stop cleanly: %v", err)
			}
		case <-time.After(30 * time.Second):
			ts.Fatalf("jetctl server did not stop within 30s of SIGINT")
		}
	default:
		ts.Fatalf("usage: bgserver start [ARGS...] | bgserver stop")
	}
}
