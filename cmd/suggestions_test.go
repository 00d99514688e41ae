package cmd

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/lint"
	"github.com/jetctl/jetctl/pkg/plan"
)

// Every command jetctl suggests runs: each lint rule's fix, each lint
// finding's command (lint, and plan's lint block), and each command a
// consumer or check finding names (consumer ls, explain, check) gets past
// the real command tree's argument and flag checks, and the command's own
// ones, up to connecting, typed in a terminal. There is no server: the
// connection goes to a port nothing listens on, so a command that parses
// fails to connect.
// `jetctl dlq setup ORDERS`, which lint once suggested, is a usage error
// (exit 2) and fails this test (TestParseCheckRefusesUsageErrors).
func TestSuggestedCommandsParse(t *testing.T) {
	suggested := map[string][]string{} // command line -> where it comes from
	add := func(where, line string) { suggested[line] = append(suggested[line], where) }
	lintRuleCommands(t, add)
	lintFindingCommands(t, add)
	for _, dir := range []string{"../pkg/consumer", "../pkg/check"} {
		sourceCommands(t, dir, add)
	}
	if len(suggested) < 20 {
		t.Fatalf("only %d suggested commands found: the collection is broken", len(suggested))
	}
	lines := make([]string, 0, len(suggested))
	for line := range suggested {
		lines = append(lines, line)
	}
	slices.Sort(lines)
	url := closedURL(t)
	for _, line := range lines {
		t.Logf("%s (%s)", line, strings.Join(suggested[line], ", "))
		if err := parseCheck(url, line); err != nil {
			t.Errorf("%s, suggested by %s: %v", line, strings.Join(suggested[line], ", "), err)
		}
	}
}

// The check fails a usage error, and only that.
func TestParseCheckRefusesUsageErrors(t *testing.T) {
	url := closedURL(t)
	for _, line := range []string{
		"jetctl dlq setup ORDERS",
		"jetctl dlq sweep",
		"jetctl consumer info ORDERS billing",
		"jetctl kv history config",
		"jetctl replay ORDERS --from-seq x",
	} {
		if err := parseCheck(url, line); err == nil {
			t.Errorf("%s: passed the check", line)
		}
	}
	for _, line := range []string{"jetctl dlq setup --stream ORDERS --consumer billing", "jetctl lint --rules", "jetctl check --stream ORDERS"} {
		if err := parseCheck(url, line); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// parseCheck runs a suggested command line (one command, without shell
// operators) in the real command tree against url, where nothing listens,
// as a person runs it from a terminal: nil when it runs, or gets as far as
// connecting.
func parseCheck(url, line string) error {
	words, err := shellFields(line)
	if err != nil {
		return err
	}
	if len(words) == 0 || words[0] != "jetctl" {
		return fmt.Errorf("not a jetctl command")
	}
	// As a person runs it: in a terminal, confirming what it asks.
	var out, errOut strings.Builder
	f := factory.New(&factory.IOStreams{In: strings.NewReader("yes\n"), Out: &out, ErrOut: &errOut, StdinTTY: true, StdoutTTY: true})
	f.Getenv = func(name string) string {
		if name == "NATS_URL" {
			return url
		}
		return ""
	}
	f.Conn.NoContext = true
	defer f.Close()
	root := NewRoot(f)
	root.SetArgs(words[1:])
	err = root.ExecuteContext(context.Background())
	msg := exitcode.Message(err)
	switch {
	case err == nil, strings.Contains(msg, "cannot connect"):
		return nil
	case exitcode.Of(err) == exitcode.Usage:
		return fmt.Errorf("usage error (exit 2): %s", msg)
	}
	return fmt.Errorf("exit %d before connecting: %s", exitcode.Of(err), msg)
}

// closedURL is a NATS URL on a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "nats://" + addr
}

// placeholders are the names the rules' texts use for the user's own,
// with a value of each for the check.
var placeholders = map[string]string{"STREAM": "ORDERS", "CONSUMER": "billing", "BUCKET": "config", "KEY": "app.config"}

var backticked = regexp.MustCompile("`(jetctl [^`]*)`")

// lintRuleCommands adds the commands in the rules' why and fix texts
// (docs/lint.md holds the same texts), placeholders filled in.
func lintRuleCommands(t *testing.T, add func(where, line string)) {
	for _, r := range lint.Rules() {
		for _, text := range []string{r.Why, r.Fix} {
			for _, m := range backticked.FindAllStringSubmatch(text, -1) {
				words := strings.Fields(m[1])
				for i, w := range words {
					if v, ok := placeholders[w]; ok {
						words[i] = v
					} else if regexp.MustCompile(`^[A-Z][A-Z_]+$`).MatchString(w) {
						t.Errorf("rule %s: %q: placeholder %s has no value in the test", r.ID, m[1], w)
					}
				}
				add("lint rule "+r.ID, strings.Join(words, " "))
			}
		}
	}
}

// lintFindingCommands adds the command of every finding the rules' trip
// fixtures make, offline and live, and checks that a message names no
// command but its finding's.
func lintFindingCommands(t *testing.T, add func(where, line string)) {
	fixtures, err := filepath.Glob("../pkg/lint/testdata/*.yaml")
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no lint fixtures: %v", err)
	}
	envs := []lint.Env{
		{},
		{Live: true, ClusterSize: 3, Clustered: true, APILevel: 1, Captured: func(string, string) bool { return false }},
	}
	commands := 0
	for _, path := range fixtures {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d, err := plan.Load([]plan.Source{{Name: filepath.Base(path), Data: data}}, func(string) (string, bool) { return "", false })
		if err != nil {
			continue // the rules that the loader's refusals stand for
		}
		for _, env := range envs {
			res := lint.Lint(d, env)
			for _, fd := range append(res.Findings, res.Suppressed...) {
				if strings.Count(fd.Message, "jetctl ") != strings.Count(fd.Command, "jetctl ") || !strings.Contains(fd.Message, fd.Command) {
					t.Errorf("%s %s: the message names a command that is not its finding's (%q): %s", fd.Pos, fd.Rule, fd.Command, fd.Message)
				}
				if fd.Command != "" {
					commands++
					add("lint finding "+fd.Rule, fd.Command)
				}
			}
		}
	}
	if commands == 0 {
		t.Error("no lint finding has a command: the fixtures no longer trip dead-letters-uncaptured")
	}
}

var formatVerb = regexp.MustCompile(`%[-+# 0-9.]*[sdqv]`)

// sourceCommands adds the commands that the Go source of a package
// suggests: each string that starts with "jetctl " (a finding's command:
// consumer health, priority groups, replication), and each fmt.Sprintf
// format that does, its verbs filled in; "A && B" is two commands.
func sourceCommands(t *testing.T, dir string, add func(where, line string)) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files: %v", dir, err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil || !strings.HasPrefix(s, "jetctl ") {
				return true
			}
			s = formatVerb.ReplaceAllStringFunc(s, func(verb string) string {
				if strings.HasSuffix(verb, "d") {
					return "1"
				}
				return "S"
			})
			for _, part := range strings.Split(s, " && ") {
				if strings.HasPrefix(part, "jetctl ") {
					add(fmt.Sprintf("%s:%d", filepath.ToSlash(path), fset.Position(lit.Pos()).Line), part)
				}
			}
			return true
		})
	}
}

// shellFields splits a command line as a POSIX shell splits words, with
// single and double quotes (no expansions).
func shellFields(line string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, errors.New("unterminated quote")
			}
			quoted := line[i+1 : i+1+end]
			if c == '"' {
				quoted = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(quoted)
			}
			word.WriteString(quoted)
			inWord = true
			i += end + 1
		case c == '\\' && i+1 < len(line):
			i++
			word.WriteByte(line[i])
			inWord = true
		case strings.ContainsRune("|&;<>()$`", rune(c)):
			return nil, fmt.Errorf("shell syntax %q in a suggested command", c)
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}
