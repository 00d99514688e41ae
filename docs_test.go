//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/rogpeppe/go-internal/txtar"

	"github.com/jetctl/jetctl/testscripts/harness"
)

// docRules are the examples that do not simply run and exit 0, each
// with the reason. A rule names its examples by the whole command (is) or
// a part of it (match), compared without the trailing comment and with
// runs of spaces squeezed to one; the first rule that fits wins. An
// example no rule fits must exit 0. A rule that fits no example fails the
// test, so the list stays honest as the docs change.
var docRules = []docRule{
	// Commands for working on jetctl itself: the test suite is their check.
	{match: "go run . demo", skip: true, why: "needs the source tree; testscripts/demo.txtar runs jetctl demo"},
	{match: "go test ", skip: true, why: "runs the tests this test is part of"},
	{match: "go install github.com/jetctl/jetctl@latest", skip: true, why: "needs the network"},
	{match: "go generate ./completions", skip: true, why: "rewrites the source tree; go test ./completions fails when the scripts are stale"},

	// Other shells.
	{match: `"${fpath[1]}/_jetctl"`, skip: true, why: "zsh syntax ($fpath); go test ./completions checks the zsh script"},
	{match: "Invoke-Expression", skip: true, why: "PowerShell; go test ./completions checks the PowerShell script"},

	// Servers: on a free port, stopped with SIGINT once they print their
	// URL; on the default port 4222, which tests must leave alone, not run.
	{match: "--port 0", interruptOn: `(?m)^export NATS_URL=nats://127\.0\.0\.1:\d+`, why: "runs until interrupted; exits 0 on SIGINT"},
	{is: "jetctl server", skip: true, why: "listens on the default port 4222"},
	{is: "jetctl server --store ./data", skip: true, why: "listens on the default port 4222"},
	{is: "jetctl server --cluster 3", skip: true, why: "listens on the default port 4222"},

	// Tails without --count: stopped with SIGINT once they print a message.
	{is: "jetctl stream tail ORDERS", interruptOn: `(?m)^\{"stream":"ORDERS"`, exit: 130, why: "tails until interrupted, then exits 130"},
	{is: "jetctl stream tail ORDERS --since 10m --subject 'orders.failed'", interruptOn: `(?m)^\{"stream":"ORDERS"`, exit: 130, why: "tails until interrupted, then exits 130"},

	// Documented exit codes.
	{is: "jetctl status -s nats://127.0.0.1:4999", exit: 1, why: "the sample of an unreachable server: nothing listens on port 4999"},
	{is: "jetctl replay ORDERS -o table", exit: 2, why: "the sample of a refused output format"},
	{is: "jetctl export > empty.yaml", exit: 2, why: "the sample of an export without a selector, which leaves an empty file"},
	{is: "jetctl plan -f empty.yaml --detailed-exitcode", exit: 2, why: "the sample of plan refusing files that declare nothing"},
	{is: "jetctl lint --live", exit: 8, why: "the fixture's shipping consumer has no DLQ capture, and its REPROCESS and RESTORE copies no limits: warnings, exit 8"},
	{is: "jetctl lint -f examples/orders.yaml --fail-on info", exit: 8, why: "four consumers whose DLQ capture only --live can check: info findings, and --fail-on info makes them exit 8"},
	{is: "jetctl kv diff cfg --since 1h --exit-code", exit: 8, why: "the fixture wrote cfg within the hour: 8 means there are differences"},
	// check exits with the nagios code of the worst consumer: the
	// fixture's billing has 45 dead letters waiting (WARNING), and its
	// consumers without a worker become CRITICAL once they have been
	// inactive for --inactive (1m), which a slow run of the examples may
	// reach; README's come after the dead letters were redriven.
	{match: "jetctl check --listen", skip: true, why: "serves /metrics until interrupted, on a fixed port; testscripts/check_listen.txtar serves on a free one, scrapes it and stops it"},
	{file: "README.md", is: "jetctl check --stream ORDERS", exit: 0, orExit: []int{1, 2}, why: "OK once the dead letters were redriven; WARNING or CRITICAL as the consumers' lag and inactivity pass 1m on a slow run"},
	{match: "jetctl check --stream ORDERS", exit: 1, orExit: []int{2}, why: "billing's dead letters: WARNING; CRITICAL once a consumer without a worker has been inactive for 1m"},
	{is: "jetctl check --consumer billing -o json --jq '.consumers[0].status'", exit: 1, orExit: []int{2}, why: "billing's dead letters: WARNING; CRITICAL once it has been inactive for 1m"},
	{match: "jetctl check -o nagios --stream ORDERS --consumer shipping", exit: 0, orExit: []int{2}, why: "shipping is OK under these levels, CRITICAL (no worker) once it has been inactive for 1m on a slow run"},
}

// docRule says how to run the examples it fits.
type docRule struct {
	is    string // the whole command
	match string // or a part of it
	why   string // required: why the example needs the rule
	skip  bool   // not run here
	exit  int    // the exit code the example must end with
	// orExit are other exit codes it may end with, when its outcome
	// depends on how long the examples before it took (why says so).
	orExit []int
	// file, when set, is the only doc file whose examples the rule fits.
	file string
	// interruptOn, for a command that runs until interrupted: once its
	// stdout matches this regexp it gets SIGINT, and must then end with exit.
	interruptOn string
}

// fits says whether the rule is for command.
func (r *docRule) fits(command string) bool {
	if i := strings.Index(command, " #"); i >= 0 && !strings.Contains(command, "\n") {
		command = command[:i]
	}
	command = strings.Join(strings.Fields(command), " ")
	if r.is != "" {
		return command == r.is
	}
	return strings.Contains(command, r.match)
}

// docExampleTimeout bounds each example: the fixture meets every --wait
// condition, so an example that takes this long is stuck.
const docExampleTimeout = 60 * time.Second

// docExample is one shell command from a fenced sh, bash or shell block.
type docExample struct {
	file    string // path from the repository root, as in docs/replay.md
	line    int    // line of the command's first line
	command string // as written: continuation lines and heredoc bodies included
	rule    *docRule
}

func (e docExample) id() string { return fmt.Sprintf("%s:%d", e.file, e.line) }

// TestDocExamples runs the shell examples of README.md and docs/*.md, each
// doc file as one testscript against its own embedded server, in the state
// testscripts/docs/fixture.txtar sets up. See docs/testing.md.
func TestDocExamples(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the doc examples run in bash, which is not installed")
	}
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	byFile := docExamples(t, append([]string{"README.md"}, files...))
	fixture, err := txtar.ParseFile("testscripts/docs/fixture.txtar")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	byID := map[string]docExample{}
	for file, examples := range byFile {
		for _, ex := range examples {
			byID[ex.id()] = ex
		}
		if script := docScript(fixture, file, examples); script != nil {
			name := filepath.Join(dir, filepath.Base(file)+".txtar")
			if err := os.WriteFile(name, script, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if t.Failed() {
		return
	}

	cmds := harness.Cmds()
	cmds["doc-example"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: doc-example FILE:LINE")
		}
		ex, ok := byID[args[0]]
		if !ok {
			ts.Fatalf("doc-example: no example at %s", args[0])
		}
		runDocExample(ts, ex)
	}
	cmds["nats-context"] = cmdNATSContext
	cmds["publish-every"] = cmdPublishEvery
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		Setup:               docSetup,
		Cmds:                cmds,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

// docExamples reads the examples of each file and gives each its rule;
// a rule without a reason, or one that fits no example, is an error.
func docExamples(t *testing.T, files []string) map[string][]docExample {
	byFile := map[string][]docExample{}
	used := map[*docRule]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range shellExamples(file, string(data)) {
			for i := range docRules {
				if (docRules[i].file == "" || docRules[i].file == ex.file) && docRules[i].fits(ex.command) {
					ex.rule = &docRules[i]
					used[ex.rule] = true
					break
				}
			}
			byFile[file] = append(byFile[file], ex)
		}
	}
	for i, r := range docRules {
		if r.why == "" {
			t.Errorf("docRules[%d] (%q) gives no reason", i, r.is+r.match)
		}
		if !used[&docRules[i]] {
			t.Errorf("docRules[%d] (%q) fits no example: remove it", i, r.is+r.match)
		}
	}
	return byFile
}

// docScript is the testscript for one doc file: the fixture, then each
// example as a doc-example command (or a comment saying why it is not
// run). It is nil when no example of the file runs.
func docScript(fixture *txtar.Archive, file string, examples []docExample) []byte {
	var script strings.Builder
	script.Write(fixture.Comment)
	fmt.Fprintf(&script, "\n# The examples of %s, in order.\n", file)
	runs := false
	for _, ex := range examples {
		first, _, _ := strings.Cut(ex.command, "\n")
		fmt.Fprintf(&script, "\n# %s: %s\n", ex.id(), first)
		if ex.rule != nil && ex.rule.skip {
			fmt.Fprintf(&script, "# not run: %s\n", ex.rule.why)
			continue
		}
		fmt.Fprintf(&script, "doc-example %s\n", ex.id())
		runs = true
	}
	if !runs {
		return nil
	}
	return txtar.Format(&txtar.Archive{Comment: []byte(script.String()), Files: fixture.Files})
}

var (
	fenceRE   = regexp.MustCompile("^\\s*(```+)\\s*([A-Za-z]*)")
	heredocRE = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)
)

// shellExamples returns the commands of the fenced sh, bash and shell
// blocks of a Markdown file: one a line, with lines ending in \ joined to
// the next and a heredoc's body kept with its command; blank lines and
// comment lines are left out. In a block that has `$ ` prompts, only the
// prompted lines are commands (the others are their output); such a block
// may also be a plain fence, an output sample.
func shellExamples(file, markdown string) []docExample {
	var examples []docExample
	lines := strings.Split(markdown, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		fence, lang := m[1], m[2]
		start := i + 1
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), fence); i++ {
		}
		switch lang {
		case "sh", "bash", "shell":
			examples = append(examples, blockCommands(file, start, lines[start:i])...)
		case "":
			if hasPrompts(lines[start:i]) {
				examples = append(examples, blockCommands(file, start, lines[start:i])...)
			}
		}
	}
	return examples
}

// blockCommands splits a shell block whose first line is line start
// (0-based) of file into commands.
func blockCommands(file string, start int, block []string) []docExample {
	prompted := hasPrompts(block)
	var examples []docExample
	for j := 0; j < len(block); j++ {
		text := strings.TrimSpace(block[j])
		if prompted {
			var ok bool
			if text, ok = strings.CutPrefix(text, "$ "); !ok {
				continue
			}
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		ex := docExample{file: file, line: start + j + 1}
		command := []string{text}
		for strings.HasSuffix(text, `\`) && j+1 < len(block) {
			j++
			text = strings.TrimSpace(block[j])
			command = append(command, text)
		}
		if m := heredocRE.FindStringSubmatch(strings.Join(command, "\n")); m != nil {
			for j+1 < len(block) {
				j++
				command = append(command, block[j])
				if strings.TrimSpace(block[j]) == m[1] {
					break
				}
			}
		}
		ex.command = strings.Join(command, "\n")
		examples = append(examples, ex)
	}
	return examples
}

// hasPrompts says whether a block shows commands with `$ ` prompts.
func hasPrompts(block []string) bool {
	for _, l := range block {
		if strings.HasPrefix(strings.TrimSpace(l), "$ ") {
			return true
		}
	}
	return false
}

type envNamesKey struct{}

// docSetup is the harness's setup, and it remembers the names of the
// script's environment variables for runDocExample, which runs commands
// outside testscript's exec.
func docSetup(env *testscript.Env) error {
	if err := harness.Setup(1)(env); err != nil {
		return err
	}
	var names []string
	for _, kv := range env.Vars {
		name, _, _ := strings.Cut(kv, "=")
		if envNameRE.MatchString(name) {
			names = append(names, name)
		}
	}
	env.Values[envNamesKey{}] = names
	return nil
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// runDocExample runs one example in bash, in the script's directory and
// environment, and fails the script, naming the example's file and line
// and showing its output, unless it ends as its rule says (exit 0 without
// one) within docExampleTimeout. With pipefail, a jetctl that fails in a
// pipeline fails the example.
func runDocExample(ts *testscript.TestScript, ex docExample) {
	var env []string
	for _, name := range ts.Value(envNamesKey{}).([]string) {
		env = append(env, name+"="+ts.Getenv(name))
	}
	cmd := exec.Command("bash", "-o", "pipefail", "-c", ex.command)
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = env
	// Its own process group, so that SIGINT and SIGKILL reach every
	// process of the example.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stdout
	var interrupted chan struct{}
	want := 0
	var orExit []int
	if ex.rule != nil {
		want, orExit = ex.rule.exit, ex.rule.orExit
		if ex.rule.interruptOn != "" {
			interrupted = make(chan struct{})
			cmd.Stdout = &signalOnMatch{out: &stdout, re: regexp.MustCompile(ex.rule.interruptOn), matched: interrupted}
		}
	}
	ts.Check(cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	pgid := cmd.Process.Pid
	timeout := time.NewTimer(docExampleTimeout)
	defer timeout.Stop()
	var err error
	for waiting := true; waiting; {
		select {
		case <-interrupted:
			syscall.Kill(-pgid, syscall.SIGINT)
			interrupted = nil
		case <-timeout.C:
			syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
			logOutput(ts, &stdout, &stderr)
			ts.Fatalf("%s: %s\ndid not finish within %s (a --wait condition the fixture does not meet?)", ex.id(), ex.command, docExampleTimeout)
		case err = <-done:
			waiting = false
		}
	}

	got := 0
	if err != nil {
		exitErr, ok := err.(*exec.ExitError)
		if !ok {
			ts.Fatalf("%s: %v", ex.id(), err)
		}
		got = exitErr.ExitCode()
	}
	logOutput(ts, &stdout, &stderr)
	if interrupted != nil {
		ts.Fatalf("%s: %s\nended (exit %d) before its output matched %s", ex.id(), ex.command, got, ex.rule.interruptOn)
	}
	if got != want && !slices.Contains(orExit, got) {
		ts.Fatalf("%s: %s\nexited %d, want %d", ex.id(), ex.command, got, want)
	}
}

// logOutput logs an example's output as testscript logs a command's.
func logOutput(ts *testscript.TestScript, stdout, stderr *bytes.Buffer) {
	if stdout.Len() > 0 {
		ts.Logf("[stdout]\n%s", stdout.String())
	}
	if stderr.Len() > 0 {
		ts.Logf("[stderr]\n%s", stderr.String())
	}
}

// signalOnMatch writes to out and closes matched once everything written
// so far matches re.
type signalOnMatch struct {
	mu      sync.Mutex
	out     *bytes.Buffer
	re      *regexp.Regexp
	matched chan struct{}
	closed  bool
}

func (w *signalOnMatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.out.Write(p)
	if !w.closed && w.re.Match(w.out.Bytes()) {
		close(w.matched)
		w.closed = true
	}
	return n, err
}

// nats-context NAME URL writes a natscli context NAME for the server at URL
// under $XDG_CONFIG_HOME/nats/context.
func cmdNATSContext(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: nats-context NAME URL")
	}
	dir := filepath.Join(ts.Getenv("XDG_CONFIG_HOME"), "nats", "context")
	ts.Check(os.MkdirAll(dir, 0o755))
	body := fmt.Sprintf("{\n  \"description\": \"%s\",\n  \"url\": %q\n}\n", args[0], args[1])
	ts.Check(os.WriteFile(filepath.Join(dir, args[0]+".json"), []byte(body), 0o644))
}

// publish-every INTERVAL SUBJECT PAYLOAD publishes PAYLOAD through
// JetStream now and every INTERVAL until the script ends: a live pipeline
// for the examples that wait for a new message.
func cmdPublishEvery(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: publish-every INTERVAL SUBJECT PAYLOAD")
	}
	interval, err := time.ParseDuration(args[0])
	ts.Check(err)
	nc, err := nats.Connect(ts.Getenv("NATS_URL"))
	ts.Check(err)
	js, err := jetstream.New(nc)
	ts.Check(err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			// A failed publish is not fatal: the examples that need these
			// messages fail on their own, naming themselves.
			js.Publish(ctx, args[1], []byte(args[2]))
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	ts.Defer(func() {
		cancel()
		<-stopped
		nc.Close()
	})
}

// TestShellExamples checks how commands are taken from Markdown.
func TestShellExamples(t *testing.T) {
	markdown := strings.Join([]string{
		"# Title",                  // 1
		"```sh",                    // 2
		"jetctl status   # tables", // 3
		"",                         // 4
		"# a comment",              // 5
		"jetctl replay ORDERS \\",  // 6
		"  --last 5",               // 7
		"cat > f <<'EOF'",          // 8
		"a line",                   // 9
		"EOF",                      // 10
		"```",                      // 11
		"```",                      // 12
		"jetctl not-shell",         // 13
		"```",                      // 14
		"```",                      // 15
		"$ jetctl sample",          // 16
		"sample output",            // 17
		"```",                      // 18
		"```bash",                  // 19
		"$ jetctl status -o json",  // 20
		"{\"account\":{}}",         // 21
		"```",                      // 22
		"```json",                  // 23
		"{}",                       // 24
		"```",                      // 25
	}, "\n")
	var got []string
	for _, ex := range shellExamples("x.md", markdown) {
		got = append(got, fmt.Sprintf("%s: %s", ex.id(), ex.command))
	}
	want := []string{
		"x.md:3: jetctl status   # tables",
		"x.md:6: jetctl replay ORDERS \\\n--last 5",
		"x.md:8: cat > f <<'EOF'\na line\nEOF",
		"x.md:16: jetctl sample",
		"x.md:20: jetctl status -o json",
	}
	if strings.Join(got, "\n---\n") != strings.Join(want, "\n---\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n---\n"), strings.Join(want, "\n---\n"))
	}

	rule := docRule{is: "jetctl status"}
	if !rule.fits("jetctl  status    # tables") || rule.fits("jetctl status -o json") {
		t.Errorf("is: compares the whole command, without its comment")
	}
	rule = docRule{match: "--port 0"}
	if !rule.fits("jetctl server --cluster 3 --port 0   # three") || rule.fits("jetctl server # --port 0") {
		t.Errorf("match: finds a part of the command, not of its comment")
	}
}
