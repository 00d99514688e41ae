package plan

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/cmd/version"
	"github.com/jetctl/jetctl/pkg/lint"
	pkgplan "github.com/jetctl/jetctl/pkg/plan"
)

// lintOptions are `jetctl lint`'s flags.
type lintOptions struct {
	fileOptions
	Live   bool
	FailOn string
	Rules  bool
}

// NewCmdLint returns `jetctl lint`.
func NewCmdLint(f *factory.Factory) *cobra.Command {
	o := &lintOptions{}
	c := &cobra.Command{
		Use:   "lint -f FILE|DIR | --live",
		Short: "find the configurations that page people, in plan files or on the server",
		Long: `Check streams, consumers, KV buckets and object stores for the settings that
have caused incidents: an unlimited max_deliver, dead letters nothing
captures, backoff silently replacing ack_wait, streams with no limits,
memory storage with one replica, even replica counts, R1 on a cluster, ...
"jetctl lint --rules" lists every rule; docs/lint.md says why each matters
and how to fix it.

  -f FILE|DIR       check plan files, offline (nothing is contacted), read
                    as "jetctl plan" reads them (--var, --var-file, several
                    files, examples/)
  --live            check what the server holds, declared or not
  -f ... --live     check the plan files with what only the server knows:
                    its cluster size, which consumers' dead letters a DLQ
                    capture keeps, the streams the files do not declare

Each finding is file:line:column (of the key, or of the resource), its
severity (error, warning, info), a message naming the resource and the
rule id. A finding that is intended is silenced in the YAML with a comment
on the resource or the key:

  # jetctl:ignore max-deliver-unlimited the handler drops what it cannot parse

The reason is required; silenced findings are listed in -o json and SARIF.

-o json is a versioned report (docs/lint.md), -o jsonl a finding per line,
-o sarif SARIF 2.1.0 for GitHub code scanning, its places relative to the
repository's root (the git work tree the files are in). A plan file that
does not load is still a report in these formats: each problem an error
finding at its file:line:column (rule plan-file-invalid), exit 2.

Exit 0 when no finding is at or above --fail-on (default warning), 8 when
one is (as "consumer explain --exit-code"), 2 when the files do not load
(as plan, files that declare nothing are refused without --allow-empty)
or a flag is wrong, 1 when the server cannot be read.`,
		Example: `  jetctl lint -f examples/orders.yaml
  jetctl lint -f plans/ --var ENV=prod --fail-on error
  jetctl lint -f plans/ -o sarif > jetctl.sarif
  jetctl lint --live -s nats://127.0.0.1:4222
  jetctl lint --rules`,
		Annotations: map[string]string{factory.FormatsAnnotation: "sarif"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLint(cmd, f, o)
		},
	}
	fs := c.Flags()
	fs.StringArrayVarP(&o.Files, "file", "f", nil, "plan file or directory of *.yaml files (repeatable)")
	fs.StringArrayVar(&o.Vars, "var", nil, "set a variable used as ${NAME} in plan files: NAME=VALUE (repeatable)")
	fs.StringArrayVar(&o.VarFiles, "var-file", nil, "read variables from a file of NAME=VALUE lines (repeatable)")
	o.bindAllowEmpty(fs)
	fs.BoolVar(&o.Live, "live", false, "check the server's resources (with -f: check the files with what the server knows)")
	fs.StringVar(&o.FailOn, "fail-on", "warning", "exit 8 when a finding is at or above this severity: error, warning, info or none")
	fs.BoolVar(&o.Rules, "rules", false, "list the rules and exit")
	_ = c.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]string{"error", "warning", "info", "none"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func runLint(cmd *cobra.Command, f *factory.Factory, o *lintOptions) error {
	if o.Rules {
		return printRules(f)
	}
	var failOn lint.Severity
	if o.FailOn != "none" {
		sev, err := lint.ParseSeverity(o.FailOn)
		if err != nil {
			return exitcode.UsageErrorf("--fail-on %q: use error, warning, info or none", o.FailOn)
		}
		failOn = sev
	}
	if len(o.Files) == 0 && !o.Live {
		return exitcode.UsageErrorf("nothing to lint: give -f FILE|DIR, --live, or both")
	}
	p, err := lintPrinter(f)
	if err != nil {
		return err
	}
	var desired *pkgplan.Desired
	checked := "server"
	if len(o.Files) > 0 {
		d, failed, err := o.read(f)
		if failed != nil {
			// Still exit 2; but the problems are findings in the chosen
			// format too, so that SARIF uploaded with if: always() shows
			// each at its line.
			exit := failed.report(f)
			if !textOutput(f, p.Format) {
				res := lint.LoadFailed(failed.Problems)
				if err := printLintResult(f, p, res, lint.NewReport(res, "files", failed.Files, failOn)); err != nil {
					return err
				}
			}
			return exit
		}
		if err != nil {
			return err
		}
		desired, checked = d, "files"
	}
	env := lint.Env{}
	if o.Live {
		js, err := f.JetStream(cmd.Context())
		if err != nil {
			return err
		}
		server, serverEnv, err := lint.FetchServer(cmd.Context(), js, f.Conn.Timeout)
		if err != nil {
			return err
		}
		env = serverEnv
		if desired == nil {
			desired = server
		} else {
			checked = "files+server"
			env.Internal = 0
		}
	}
	res := lint.Lint(desired, env)
	report := lint.NewReport(res, checked, desired.Files, failOn)
	if err := printLintResult(f, p, res, report); err != nil {
		return err
	}
	if report.Failed {
		return exitcode.Silent(exitcode.Changes)
	}
	return nil
}

// printLintResult writes the findings in the chosen format.
func printLintResult(f *factory.Factory, p *output.Printer, res *lint.Result, report *lint.Report) error {
	switch {
	case f.Output.Format == "sarif":
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		root, err := lint.FindSourceRoot(wd, report.Files)
		if err != nil {
			return err
		}
		return p.Print(lint.SARIF(res, version.Get().Version, root), nil)
	case p.Format == "jsonl":
		for _, fd := range append(append([]lint.Finding{}, res.Findings...), res.Suppressed...) {
			if err := p.Item(fd); err != nil {
				return err
			}
		}
		return nil
	case textOutput(f, p.Format):
		printLint(f.IO.Out, report)
		return nil
	}
	return p.Print(report, nil)
}

// printLint writes the findings compiler-style, then a summary.
func printLint(w io.Writer, r *lint.Report) {
	for _, fd := range r.Findings {
		fmt.Fprintln(w, output.Escape(fd.String()))
	}
	var parts []string
	for _, sev := range []string{"error", "warning", "info"} {
		if n := r.Counts[sev]; n > 0 && sev == "info" {
			parts = append(parts, fmt.Sprintf("%d info", n))
		} else if n > 0 {
			parts = append(parts, plural(n, sev))
		}
	}
	summary := "No findings"
	if len(parts) > 0 {
		summary = strings.Join(parts, ", ")
	}
	summary += " in " + plural(r.Resources, "resource")
	if n := len(r.Suppressed); n > 0 {
		summary += fmt.Sprintf("; %d silenced by jetctl:ignore", n)
	}
	if r.Internal > 0 {
		summary += fmt.Sprintf("; %s of jetctl's own (DLQ, recorder, leases) left out", plural(r.Internal, "resource"))
	}
	if len(r.Findings) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, summary+".")
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "Checked only with --live: %s.\n", strings.Join(r.Skipped, ", "))
	}
}

// printRules lists the rules.
func printRules(f *factory.Factory) error {
	p, err := lintPrinter(f)
	if err != nil {
		return err
	}
	if f.Output.Format == "sarif" {
		return p.Print(lint.SARIF(&lint.Result{}, version.Get().Version, lint.SourceRoot{}), nil)
	}
	rules := lint.Rules()
	return p.Print(rules, func() []output.Table {
		t := output.Table{Header: []string{"RULE", "SEVERITY", "CHECKED", "SUMMARY"}}
		for _, r := range rules {
			checked := "always"
			switch {
			case r.Live:
				checked = "--live"
			case r.Offline:
				checked = "offline"
			}
			t.Row(r.ID, r.Severity, checked, r.Summary)
		}
		return []output.Table{t}
	})
}

// lintPrinter is the printer of -o; SARIF is JSON (indented, and --jq
// applies to it).
func lintPrinter(f *factory.Factory) (*output.Printer, error) {
	if f.Output.Format == "sarif" {
		p, err := output.NewPrinter(output.Options{Format: "json", JQ: f.Output.JQ}, f.IO.Out, false, "json")
		if err != nil {
			return nil, err
		}
		p.Context = f.Context()
		return p, nil
	}
	return f.Printer("table")
}
