// Package plan implements `jetctl plan`, `jetctl apply` and `jetctl
// export`: declarative streams, consumers, KV buckets and object stores.
// The work is in pkg/plan; this package parses flags, renders and maps
// errors to exit codes.
package plan

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/examples"
	pkgplan "github.com/jetctl/jetctl/pkg/plan"
	"github.com/jetctl/jetctl/pkg/units"
)

// fileOptions are the flags that say which plan files to read.
type fileOptions struct {
	Files    []string
	Vars     []string
	VarFiles []string
	Prune    bool
	Migrate  bool
	// AllowEmpty takes plan files that declare nothing: without it they
	// are invalid input, as a plan of nothing passes for in sync.
	AllowEmpty bool
}

func (o *fileOptions) bind(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&o.Files, "file", "f", nil, "plan file or directory of *.yaml files (repeatable)")
	fs.StringArrayVar(&o.Vars, "var", nil, "set a variable used as ${NAME} in plan files: NAME=VALUE (repeatable)")
	fs.StringArrayVar(&o.VarFiles, "var-file", nil, "read variables from a file of NAME=VALUE lines (repeatable)")
	fs.BoolVar(&o.Prune, "prune", false, "delete resources jetctl created that the files no longer declare")
	fs.BoolVar(&o.Migrate, "migrate", false, "migrate streams, buckets and object stores that must be replaced, keeping their data and consumer positions")
	o.bindAllowEmpty(fs)
}

func (o *fileOptions) bindAllowEmpty(fs *pflag.FlagSet) {
	fs.BoolVar(&o.AllowEmpty, "allow-empty", false, "take plan files that declare no resources (refused otherwise: a plan of nothing passes for in sync)")
}

// load reads and validates the plan files before anything is contacted.
// Every problem is printed on stderr as file:line:column: message.
func (o *fileOptions) load(f *factory.Factory) (*pkgplan.Desired, error) {
	desired, failed, err := o.read(f)
	if failed != nil {
		return nil, failed.report(f)
	}
	return desired, err
}

// loadFailure is plan files that do not load: each problem at its place
// (a file that cannot be read at its path, files that declare nothing at
// their first line), and the exit-2 error that sums them up.
type loadFailure struct {
	// Files are the plan files read (none when one could not be).
	Files    []string
	Problems []pkgplan.Problem
	// listed is true when each problem is a line of its own above err
	// (the loader's); otherwise err says it all.
	listed bool
	err    error
}

// report prints the problems on stderr, when they are listed, and
// returns the error to exit with.
func (lf *loadFailure) report(f *factory.Factory) error {
	if lf.listed {
		for _, p := range lf.Problems {
			fmt.Fprintln(f.IO.ErrOut, p.String())
		}
	}
	return lf.err
}

// read reads and validates the plan files: the resources, or why they do
// not load (a *loadFailure), or another error (a flag's).
func (o *fileOptions) read(f *factory.Factory) (*pkgplan.Desired, *loadFailure, error) {
	if len(o.Files) == 0 {
		return nil, nil, exitcode.UsageErrorf("no plan files: give -f FILE or -f DIR")
	}
	lookup, err := o.lookup(f)
	if err != nil {
		return nil, nil, err
	}
	sources, err := readSources(o.Files)
	if err != nil {
		lf := &loadFailure{err: exitcode.New(exitcode.Usage, err)}
		var serr *pkgplan.SourceError
		if errors.As(err, &serr) {
			lf.Problems = []pkgplan.Problem{{Pos: pkgplan.Pos{File: serr.Path}, Message: err.Error()}}
		}
		return nil, lf, lf.err
	}
	var files []string
	for _, src := range sources {
		files = append(files, src.Name)
	}
	desired, err := pkgplan.Load(sources, lookup)
	var verr *pkgplan.ValidationError
	if errors.As(err, &verr) {
		lf := &loadFailure{Files: files, Problems: verr.Problems, listed: true,
			err: exitcode.Newf(exitcode.Usage, "%s in the plan files; nothing was contacted", plural(len(verr.Problems), "problem"))}
		return nil, lf, lf.err
	}
	if err != nil {
		return nil, nil, err
	}
	if len(desired.Resources) == 0 && !o.AllowEmpty {
		msg := declareNothing(files) + ": a plan of nothing would pass for in sync (--allow-empty if that is meant)"
		lf := &loadFailure{Files: files, err: exitcode.UsageErrorf("%s", msg)}
		for _, name := range files {
			lf.Problems = append(lf.Problems, pkgplan.Problem{Pos: pkgplan.Pos{File: name, Line: 1, Column: 1}, Message: msg})
		}
		return nil, lf, lf.err
	}
	return desired, nil, nil
}

// declareNothing says that files declare nothing: "live.yaml declares no
// streams, ...", "a.yaml and b.yaml declare ...", "the 5 plan files
// (a.yaml, ...) declare ...".
func declareNothing(files []string) string {
	const nothing = "no streams, consumers, KV buckets or object stores"
	switch len(files) {
	case 1:
		return files[0] + " declares " + nothing
	case 2:
		return files[0] + " and " + files[1] + " declare " + nothing
	}
	return fmt.Sprintf("the %d plan files (%s, ...) declare %s", len(files), files[0], nothing)
}

// planError maps pkgplan.Make's errors: what the server would refuse is
// invalid input (exit 2), listed like the plan files' problems.
func planError(f *factory.Factory, err error) error {
	var rerr *pkgplan.RefusedError
	if errors.As(err, &rerr) {
		return reportProblems(f, rerr.Problems, "the server would refuse; nothing was changed")
	}
	return err
}

// reportProblems prints each problem as file:line:column: message and
// returns the exit-2 error that counts them.
func reportProblems(f *factory.Factory, problems []pkgplan.Problem, what string) error {
	for _, p := range problems {
		fmt.Fprintln(f.IO.ErrOut, p.String())
	}
	return exitcode.Newf(exitcode.Usage, "%s %s", plural(len(problems), "problem"), what)
}

// readSources reads the plan files from disk; a path under examples/
// (a file, or a directory: its *.yaml and *.yml files in name order, as
// pkgplan.ReadSources reads one) that is not on disk is read from the
// examples built into jetctl.
func readSources(paths []string) ([]pkgplan.Source, error) {
	var out []pkgplan.Source
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			if srcs, ok := embeddedExample(p); ok {
				out = append(out, srcs...)
				continue
			}
		}
		srcs, err := pkgplan.ReadSources([]string{p})
		if err != nil {
			return nil, err
		}
		out = append(out, srcs...)
	}
	return out, nil
}

// embeddedExample reads p from the examples built into jetctl: a file, or
// a directory's plan files; false when p names none of them.
func embeddedExample(p string) ([]pkgplan.Source, bool) {
	clean := path.Clean(filepath.ToSlash(p))
	name, ok := strings.CutPrefix(clean, "examples/")
	if clean == "examples" {
		name, ok = ".", true
	}
	if !ok {
		return nil, false
	}
	if data, err := fs.ReadFile(examples.FS, name); err == nil {
		return []pkgplan.Source{{Name: p, Data: data}}, true
	}
	entries, err := fs.ReadDir(examples.FS, name)
	if err != nil {
		return nil, false
	}
	var out []pkgplan.Source
	for _, e := range entries { // fs.ReadDir sorts by name
		ext := strings.ToLower(path.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		data, err := fs.ReadFile(examples.FS, path.Join(name, e.Name()))
		if err != nil {
			return nil, false
		}
		out = append(out, pkgplan.Source{Name: filepath.Join(p, e.Name()), Data: data})
	}
	return out, len(out) > 0
}

// lookup resolves ${NAME}: --var first, then --var-file, then the
// environment.
func (o *fileOptions) lookup(f *factory.Factory) (pkgplan.LookupFunc, error) {
	vars := map[string]string{}
	for _, file := range o.VarFiles {
		fileVars, err := readVarFile(file)
		if err != nil {
			return nil, err
		}
		for k, v := range fileVars {
			vars[k] = v
		}
	}
	for _, kv := range o.Vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, exitcode.UsageErrorf("--var %q: use NAME=VALUE", kv)
		}
		vars[k] = v
	}
	return func(name string) (string, bool) {
		if v, ok := vars[name]; ok {
			return v, true
		}
		if v := f.Getenv(name); v != "" {
			return v, true
		}
		return "", false
	}, nil
}

func readVarFile(name string) (map[string]string, error) {
	file, err := os.Open(name)
	if err != nil {
		return nil, exitcode.UsageErrorf("--var-file %s: %v", name, unwrap(err))
	}
	defer file.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(file)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		k, v, ok := strings.Cut(text, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, exitcode.UsageErrorf("%s:%d: use NAME=VALUE", name, line)
		}
		vars[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
	}
	if err := sc.Err(); err != nil {
		return nil, exitcode.UsageErrorf("--var-file %s: %v", name, err)
	}
	return vars, nil
}

func unwrap(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// printPlan renders p terraform-style, for people. destroyAllowed is
// apply's --allow-destroy: the last line says whether the data loss is
// allowed or what allowing it takes.
func printPlan(w io.Writer, p *pkgplan.Plan, destroyAllowed bool) {
	if !p.Changed() {
		fmt.Fprintf(w, "No changes. The server matches the plan files (%s).\n", plural(len(p.Resources), "resource"))
	} else {
		fmt.Fprintln(w, "jetctl will perform the following actions:")
		var prev *pkgplan.ResourcePlan
		for _, r := range p.Resources {
			if r.Action == pkgplan.ActionNone {
				continue
			}
			if prev == nil || hasDetails(r) || hasDetails(prev) {
				fmt.Fprintln(w)
			}
			printResource(w, r)
			prev = r
		}
	}
	var drifted []*pkgplan.ResourcePlan
	for _, r := range p.Resources {
		if r.Drift {
			drifted = append(drifted, r)
		}
	}
	if len(drifted) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Drift: changed on the server outside jetctl since the last apply:")
		for _, r := range drifted {
			var paths []string
			for _, c := range r.Changes {
				paths = append(paths, c.Path)
			}
			fmt.Fprintf(w, "  ! %s %s: differs in %s\n", r.Kind, displayName(r), strings.Join(paths, ", "))
		}
	}
	if len(p.Ignored) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Ignored by --prune (not created by jetctl):")
		for _, ig := range p.Ignored {
			name := ig.Name
			if ig.Stream != "" {
				name = ig.Stream + "/" + ig.Name
			}
			if ig.Reason != pkgplan.NotManaged {
				name += " (" + ig.Reason + ")"
			}
			fmt.Fprintf(w, "    %s %s\n", ig.Kind, name)
		}
	}
	if p.Changed() {
		s := p.Summary
		migrate := ""
		if s.Migrate > 0 {
			migrate = fmt.Sprintf("%d to migrate, ", s.Migrate)
		}
		fmt.Fprintf(w, "\nPlan: %d to add, %d to change, %d to replace, %s%d to destroy.\n", s.Add, s.Change, s.Replace, migrate, s.Destroy)
		switch {
		case s.Destructive && destroyAllowed:
			fmt.Fprintln(w, "This plan loses data, as --allow-destroy allows.")
		case s.Destructive:
			fmt.Fprintln(w, "This plan loses data: apply needs --allow-destroy.")
		}
		if n := migratable(p); n > 0 && !p.Migrate {
			their := "their"
			if n == 1 {
				their = "its"
			}
			fmt.Fprintf(w, "With --migrate, %s would keep %s data and consumer positions instead.\n", plural(n, "replacement"), their)
		}
	}
}

// migratable counts the replacements a migration could make instead.
func migratable(p *pkgplan.Plan) int {
	n := 0
	for _, r := range p.Resources {
		if r.Action == pkgplan.ActionReplace && r.Migration != nil && r.Migration.Migratable {
			n++
		}
	}
	return n
}

// plural is "1 resource", "2 resources".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func hasDetails(r *pkgplan.ResourcePlan) bool {
	return len(r.Changes) > 0 || len(r.Warnings) > 0 || r.Migration != nil
}

func displayName(r *pkgplan.ResourcePlan) string {
	if r.Kind == pkgplan.KindConsumer {
		return r.Stream + "/" + r.Name
	}
	return r.Name
}

var actionText = map[pkgplan.Action]struct{ symbol, note string }{
	pkgplan.ActionCreate:  {"  +", "will be created"},
	pkgplan.ActionUpdate:  {"  ~", "will be updated in place"},
	pkgplan.ActionReplace: {"-/+", "must be replaced: deleted and created again, losing its data"},
	pkgplan.ActionMigrate: {"<~>", "will be migrated (data and consumer positions kept)"},
	pkgplan.ActionDelete:  {"  -", "will be deleted"},
}

func printResource(w io.Writer, r *pkgplan.ResourcePlan) {
	a := actionText[r.Action]
	fmt.Fprintf(w, "%s %s %s %s", a.symbol, r.Kind, displayName(r), a.note)
	if r.Reason != "" && (r.Action == pkgplan.ActionDelete || r.Action == pkgplan.ActionReplace) {
		fmt.Fprintf(w, " (%s)", r.Reason)
	}
	fmt.Fprintln(w)
	for _, c := range r.Changes {
		fmt.Fprintf(w, "      %s\n", changeLine(r, c))
	}
	if m := r.Migration; m != nil {
		switch {
		case r.Action == pkgplan.ActionMigrate:
			fmt.Fprintf(w, "      migration: %s\n", migrationLine(m))
		case !m.Migratable:
			fmt.Fprintf(w, "      ! a migration cannot keep its data: %s\n", m.Reason)
		default:
			fmt.Fprintf(w, "      ! apply --migrate would keep its data instead: %s\n", keptLine(m))
		}
	}
	for _, warn := range r.Warnings {
		if r.Action == pkgplan.ActionUpdate && strings.HasPrefix(warn, "lowering ") {
			continue // already on its field's line
		}
		fmt.Fprintf(w, "      ! %s\n", warn)
	}
}

func changeLine(r *pkgplan.ResourcePlan, c pkgplan.FieldChange) string {
	var line string
	switch {
	case c.Before == nil:
		line = fmt.Sprintf("+ %s: %s", c.Path, pkgplan.DisplayValue(r.Kind, c.Path, c.After))
	case c.After == nil:
		line = fmt.Sprintf("- %s: %s", c.Path, pkgplan.DisplayValue(r.Kind, c.Path, c.Before))
	default:
		line = fmt.Sprintf("~ %s: %s -> %s", c.Path, pkgplan.DisplayValue(r.Kind, c.Path, c.Before), pkgplan.DisplayValue(r.Kind, c.Path, c.After))
	}
	switch {
	case c.ForcesReplacement && r.Action == pkgplan.ActionMigrate:
		line += "  # forces migration: " + c.Reason
	case c.ForcesReplacement:
		line += "  # forces replacement: " + c.Reason
	case c.Destructive:
		line += "  # destructive: " + c.Reason
	case c.Mutability == pkgplan.OneWay:
		line += "  # one-way: cannot be turned off again in place"
	case c.Reason != "":
		line += "  # " + c.Reason
	}
	return line
}

// textOutput reports whether the plan is shown as text: table format, no
// --jq.
func textOutput(f *factory.Factory, format string) bool {
	return format == "table" && f.Output.JQ == ""
}

// keptLine is what a migration keeps: "530 messages (66 KiB) and the
// positions of 2 consumers".
func keptLine(m *pkgplan.Migration) string {
	s := fmt.Sprintf("%s (%s)", plural(int(m.Messages), "message"), humanize.IBytes(m.Bytes))
	if m.Consumers > 0 {
		s += " and the positions of " + plural(m.Consumers, "consumer")
	}
	return s
}

// migrationLine is what a migration moves and how long it takes: "530
// messages (66 KiB) copied twice, through ORDERS_JETCTL_MIGRATE, 2
// consumers re-seated; copy about 40ms, write outage about 5ms".
func migrationLine(m *pkgplan.Migration) string {
	s := fmt.Sprintf("%s (%s) copied twice, through %s", plural(int(m.Messages), "message"), humanize.IBytes(m.Bytes), m.Via)
	if m.Consumers > 0 {
		s += fmt.Sprintf(", %s re-seated", plural(m.Consumers, "consumer"))
	}
	if m.CopyTime != nil && m.Outage != nil {
		s += fmt.Sprintf("; copy about %s, write outage about %s", approx(*m.CopyTime), approx(*m.Outage))
	}
	return s
}

// approx rounds an estimate to what it can promise: milliseconds under a
// second, tenths of a second under a minute, seconds above.
func approx(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return "1ms"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return units.FormatDuration(d.Round(time.Second))
}
