package harness

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/rogpeppe/go-internal/testscript"
)

type exporterKey struct{}

// exporterProc is a `jetctl check --listen` running in the background.
type exporterProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	done   chan error
}

func (e *exporterProc) log() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stderr.String()
}

// exporter start [ARGS...] runs `jetctl check --listen 127.0.0.1:0
// ARGS...` in the background, waits (30 s at most) for the address it
// prints on stderr and sets $EXPORTER to it (host:port). exporter stop
// INT|TERM sends the signal and asserts that it stops cleanly, exit 0,
// within 30 s; its stderr is then the script's stderr. exporter wait
// CODE waits (30 s at most) for it to stop by itself, with CODE.
func cmdExporter(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: exporter start [ARGS...] | exporter stop INT|TERM | exporter wait CODE")
	}
	holder := ts.Value(exporterKey{}).(*exporterHolder)
	switch args[0] {
	case "start":
		bin, err := exec.LookPath("jetctl")
		ts.Check(err)
		cmd := exec.Command(bin, append([]string{"check", "--listen", "127.0.0.1:0"}, args[1:]...)...)
		cmd.Env = os.Environ()
		for _, name := range []string{"NATS_URL", "NATS_CONTEXT", "NATS_USER", "NATS_PASSWORD", "NATS_CREDS", "NATS_TIMEOUT",
			"HOME", "XDG_CONFIG_HOME", "NO_COLOR", "PATH", "GORACE"} {
			cmd.Env = append(cmd.Env, name+"="+ts.Getenv(name))
		}
		cmd.Dir = ts.Getenv("WORK")
		stderr, err := cmd.StderrPipe()
		ts.Check(err)
		ts.Check(cmd.Start())
		e := &exporterProc{cmd: cmd, done: make(chan error, 1)}
		holder.proc = e
		ts.Defer(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				<-e.done
			}
		})
		addrs := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				line := sc.Text()
				e.mu.Lock()
				e.stderr.WriteString(line + "\n")
				e.mu.Unlock()
				if rest, ok := strings.CutPrefix(line, "jetctl: serving http://"); ok {
					addr, _, _ := strings.Cut(rest, "/")
					addrs <- addr
				}
			}
			e.done <- cmd.Wait()
		}()
		select {
		case addr := <-addrs:
			ts.Setenv("EXPORTER", addr)
		case err := <-e.done:
			ts.Fatalf("jetctl check --listen exited before it served (%v):\n%s", err, e.log())
		case <-time.After(30 * time.Second):
			ts.Fatalf("jetctl check --listen printed no address within 30s:\n%s", e.log())
		}
	case "stop":
		sig := map[string]syscall.Signal{"INT": syscall.SIGINT, "TERM": syscall.SIGTERM}[strings.Join(args[1:], "")]
		e := holder.proc
		if sig == 0 || e == nil {
			ts.Fatalf("usage: exporter stop INT|TERM, after exporter start")
		}
		ts.Check(e.cmd.Process.Signal(sig))
		select {
		case err := <-e.done:
			fmt.Fprint(ts.Stderr(), e.log())
			if err != nil {
				ts.Fatalf("jetctl check --listen did not stop cleanly: %v", err)
			}
		case <-time.After(30 * time.Second):
			ts.Fatalf("jetctl check --listen did not stop within 30s of SIG%s:\n%s", args[1], e.log())
		}
		holder.proc = nil
	case "wait":
		// exporter wait CODE: it stops by itself, with CODE.
		e := holder.proc
		want, err := strconv.Atoi(strings.Join(args[1:], ""))
		if err != nil || e == nil {
			ts.Fatalf("usage: exporter wait CODE, after exporter start")
		}
		select {
		case err := <-e.done:
			fmt.Fprint(ts.Stderr(), e.log())
			got := 0
			if ee, ok := err.(*exec.ExitError); ok {
				got = ee.ExitCode()
			} else if err != nil {
				ts.Fatalf("jetctl check --listen: %v", err)
			}
			if got != want {
				ts.Fatalf("jetctl check --listen exited %d, want %d", got, want)
			}
		case <-time.After(30 * time.Second):
			ts.Fatalf("jetctl check --listen did not stop within 30s:\n%s", e.log())
		}
		holder.proc = nil
	default:
		ts.Fatalf("usage: exporter start [ARGS...] | exporter stop INT|TERM | exporter wait CODE")
	}
}

type exporterHolder struct{ proc *exporterProc }

// http-get [-status CODE] [-H Name:Value] URL gets URL (10 s at most) and
// writes the body to stdout; the answer must have status CODE (200 when
// not given). The Content-Type goes to stderr.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	want := http.StatusOK
	req, _ := http.NewRequest(http.MethodGet, "http://invalid", nil)
	for len(args) > 1 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-status":
			v, err := strconv.Atoi(args[1])
			ts.Check(err)
			want = v
		case "-H":
			k, v, ok := strings.Cut(args[1], ":")
			if !ok {
				ts.Fatalf("http-get: header %q is not Name:Value", args[1])
			}
			req.Header.Set(k, v)
		default:
			ts.Fatalf("http-get: unknown flag %s", args[0])
		}
		args = args[2:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: http-get [-status CODE] [-H Name:Value] URL")
	}
	r, err := http.NewRequest(http.MethodGet, args[0], nil)
	ts.Check(err)
	r.Header = req.Header
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(r)
	ts.Check(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprint(ts.Stdout(), string(body))
	fmt.Fprintf(ts.Stderr(), "Content-Type: %s\n", resp.Header.Get("Content-Type"))
	if resp.StatusCode != want {
		ts.Fatalf("http-get %s: status %d, want %d:\n%s", args[0], resp.StatusCode, want, body)
	}
}

// prom METRIC [LABEL=VALUE...] EXPECT parses the last command's stdout
// with the Prometheus text parser (it fails on anything that is not the
// text exposition format) and checks the one sample of METRIC with those
// labels: EXPECT is absent, or a comparison with a number: =5, >0,
// >=60, <1. It writes nothing: several prom lines can check one output.
func cmdProm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: prom METRIC [LABEL=VALUE...] absent|=N|>N|>=N|<N|<=N")
	}
	if err := promExpect(ts.ReadFile("stdout"), args); err != nil {
		ts.Fatalf("prom: %v", err)
	}
}

// scrape-until URL METRIC [LABEL=VALUE...] EXPECT gets URL every 100ms
// until what it serves passes `prom METRIC [LABEL=VALUE...] EXPECT`, for
// 30 s at most; the last answer is then stdout.
func cmdScrapeUntil(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: scrape-until URL METRIC [LABEL=VALUE...] EXPECT")
	}
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: 10 * time.Second}
	var last string
	var err error
	for {
		var resp *http.Response
		resp, err = client.Get(args[0])
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			last, err = string(body), rerr
			if err == nil {
				if err = promExpect(last, args[1:]); err == nil {
					fmt.Fprint(ts.Stdout(), last)
					return
				}
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("scrape-until: %v after 30s; last answer:\n%s", err, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// promExpect checks the text exposition format text as prom does.
func promExpect(text string, args []string) error {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return fmt.Errorf("the output does not parse as the Prometheus text format: %v", err)
	}
	name, expect := args[0], args[len(args)-1]
	want := map[string]string{}
	for _, l := range args[1 : len(args)-1] {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return fmt.Errorf("label %q is not LABEL=VALUE", l)
		}
		want[k] = v
	}
	var found []*dto.Metric
	if mf := families[name]; mf != nil {
		for _, m := range mf.Metric {
			match := true
			for k, v := range want {
				has := false
				for _, lp := range m.Label {
					if lp.GetName() == k && lp.GetValue() == v {
						has = true
					}
				}
				match = match && has
			}
			if match {
				found = append(found, m)
			}
		}
	}
	if expect == "absent" {
		if len(found) > 0 {
			return fmt.Errorf("%s%v is present, want absent", name, want)
		}
		return nil
	}
	if len(found) != 1 {
		return fmt.Errorf("%d samples of %s%v, want 1", len(found), name, want)
	}
	var v float64
	switch m := found[0]; {
	case m.Gauge != nil:
		v = m.Gauge.GetValue()
	case m.Counter != nil:
		v = m.Counter.GetValue()
	case m.Untyped != nil:
		v = m.Untyped.GetValue()
	default:
		return fmt.Errorf("%s is neither a gauge nor a counter", name)
	}
	op := strings.TrimRight(expect, "0123456789.-e+")
	n, err := strconv.ParseFloat(strings.TrimPrefix(expect, op), 64)
	ok, known := map[string]bool{"=": v == n, ">": v > n, ">=": v >= n, "<": v < n, "<=": v <= n}[op]
	if err != nil || !known {
		return fmt.Errorf("%q is not absent or a comparison such as >=60", expect)
	}
	if !ok {
		return fmt.Errorf("%s%v is %v, want %s", name, want, v, expect)
	}
	return nil
}
