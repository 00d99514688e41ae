package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/migrate"
	"github.com/jetctl/jetctl/pkg/natsconn"
	pkgplan "github.com/jetctl/jetctl/pkg/plan"
)

// applyOptions are `jetctl apply`'s flags.
type applyOptions struct {
	fileOptions
	AllowDestroy bool
	Yes          bool
	AutoApprove  bool
	PlanFile     string
	DryRun       bool
	NoProgress   bool
}

// applyOutput is apply's JSON output.
type applyOutput struct {
	Plan   *pkgplan.Plan        `json:"plan"`
	Result *pkgplan.ApplyResult `json:"result"`
	// Migrations are, in a dry run, the migrations the engine checked:
	// what each would move.
	Migrations []pkgplan.Step `json:"migrations,omitempty"`
}

// NewCmdApply returns `jetctl apply`.
func NewCmdApply(f *factory.Factory) *cobra.Command {
	o := &applyOptions{}
	c := &cobra.Command{
		Use:   "apply -f FILE|DIR",
		Short: "make the server match plan files",
		Long: `Compute the plan (see "jetctl plan"), print it, and make it so: streams,
buckets and object stores first (origins before the mirrors and sources that
read them), then consumers, with the explicit create or update action;
deletions go first, consumers before their streams. Everything is read back
afterwards: a field that does not match the files is an error.

Safety:
  --allow-destroy   needed for anything that loses data: a replace (delete
                    and create again), a delete (--prune), or an in-place
                    change that removes messages. Without it apply exits 9
                    and changes nothing.
  --migrate         migrate instead of replacing each stream, KV bucket
                    and object store that can keep its data: replaced by
                    one of the same name with every message, sequence,
                    timestamp and consumer position (the plan's "<~>"),
                    without --allow-destroy. Its consumers' own changes
                    apply after. A progress bar shows the copy on a
                    terminal (--no-progress for none). What cannot be
                    migrated stays a replacement.
  --yes             apply without asking (--auto-approve is the same). In a
                    terminal apply asks for confirmation, and any answer
                    but "yes" cancels it (exit 1, as in terraform);
                    elsewhere it refuses to change anything without --yes
                    (exit 2).
  --prune           delete resources jetctl created (metadata
                    io.jetctl.managed: "true") that the files no longer
                    declare. Resources jetctl did not create are listed as
                    ignored and never touched.
  --plan-file F     apply a plan saved with "jetctl plan -o json > F", only
                    if the server still matches what it was computed
                    against (exit 1 otherwise, naming what changed);
                    --prune and --migrate come from the saved plan.
  --dry-run         print the plan and stop: the same as "jetctl plan"
                    (with --migrate, what would be migrated).
  --allow-empty     take plan files that declare nothing, refused
                    otherwise (exit 2); with --prune --allow-destroy it
                    deletes everything jetctl manages.

Apply plans first, so what the server would refuse and can be known ahead
stops it with exit 2 before the first change (see "jetctl plan --help").
A failure midway stops apply: it prints what was done and what was not and
exits 4. Running it again converges.`,
		Example: `  jetctl apply -f examples/orders.yaml --yes
  jetctl apply -f plans/ --prune --allow-destroy --yes
  jetctl apply -f plans/ --migrate --yes
  jetctl plan -f plans/ -o json > plan.json && jetctl apply --plan-file plan.json --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runApply(cmd.Context(), f, o)
		},
	}
	o.bind(c.Flags())
	fl := c.Flags()
	fl.BoolVar(&o.AllowDestroy, "allow-destroy", false, "allow replacing and deleting resources, and changes that lose messages")
	fl.BoolVarP(&o.Yes, "yes", "y", false, "apply without asking for confirmation")
	fl.BoolVar(&o.AutoApprove, "auto-approve", false, "the same as --yes")
	fl.StringVar(&o.PlanFile, "plan-file", "", "apply a plan saved with plan -o json, if the server still matches it")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print the plan and change nothing (the same as jetctl plan)")
	fl.BoolVar(&o.NoProgress, "no-progress", false, "no progress bar on stderr while --migrate copies")
	return c
}

func runApply(ctx context.Context, f *factory.Factory, o *applyOptions) error {
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	var saved *pkgplan.Plan
	var desired *pkgplan.Desired
	switch {
	case o.PlanFile != "" && len(o.Files) > 0:
		return exitcode.UsageErrorf("give either -f or --plan-file, not both")
	case o.PlanFile != "":
		if o.Prune {
			return exitcode.UsageErrorf("--prune comes from the saved plan: it cannot be given with --plan-file")
		}
		if o.Migrate {
			return exitcode.UsageErrorf("--migrate comes from the saved plan (jetctl plan --migrate -o json): it cannot be given with --plan-file")
		}
		if saved, err = readPlanFile(o.PlanFile); err != nil {
			return err
		}
		if desired, err = pkgplan.DesiredFromPlan(saved); err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
		o.Prune, o.Migrate = saved.Prune, saved.Migrate
	default:
		if desired, err = o.load(f); err != nil {
			return err
		}
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	pl, live, err := pkgplan.Make(ctx, js, desired, pkgplan.Options{Prune: o.Prune, Migrate: o.Migrate, LeaderWait: f.Conn.Timeout})
	if err != nil {
		return planError(f, err)
	}
	if saved != nil {
		if err := pkgplan.CheckStale(saved, pl); err != nil {
			return err
		}
	}
	text := textOutput(f, p.Format)
	if text {
		printPlan(f.IO.Out, pl, o.AllowDestroy)
	}
	if !pl.Changed() || o.DryRun {
		var checked []pkgplan.Step
		if o.DryRun && pl.Summary.Migrate > 0 {
			if checked, err = pkgplan.CheckMigrations(ctx, js, pl, live); err != nil {
				return err
			}
		}
		if text {
			printChecked(f.IO.Out, checked)
			return nil
		}
		return p.Print(applyOutput{Plan: pl, Result: &pkgplan.ApplyResult{Done: []pkgplan.Step{}, NotDone: []pkgplan.Step{}}, Migrations: checked}, nil)
	}
	if pl.Summary.Destructive && !o.AllowDestroy {
		return exitcode.Newf(exitcode.Destructive, "refusing to %s without --allow-destroy; nothing was changed", destructiveSummary(pl))
	}
	if !o.Yes && !o.AutoApprove {
		if !f.IO.CanPrompt() {
			return exitcode.UsageErrorf("apply changes the server: pass --yes (or --auto-approve) when not running in a terminal; nothing was changed")
		}
		if !f.IO.Confirm("\nApply these changes?", factory.AcceptWordYes) {
			// Not invalid input: exit 1, as terraform does.
			return exitcode.Newf(exitcode.Failure, "apply cancelled; nothing was changed")
		}
	}
	bars := &migrationProgress{f: f, disabled: o.NoProgress}
	res, err := pkgplan.Apply(ctx, js, pl, live, pkgplan.ApplyOptions{LeaderWait: f.Conn.Timeout, Progress: bars.update, AtStep: factory.KillAt(ctx, f), OnStep: func(st pkgplan.Step) {
		bars.finish()
		if st.Error != "" && ctx.Err() != nil {
			fmt.Fprintf(f.IO.ErrOut, "%s: %s interrupted\n", st.Resource, st.Op)
			return
		}
		if st.Error != "" {
			fmt.Fprintf(f.IO.ErrOut, "%s: %s failed: %s\n", st.Resource, st.Op, st.Error)
			return
		}
		fmt.Fprintf(f.IO.ErrOut, "%s: %s%s\n", st.Resource, pastTense[st.Op], migratedLine(st.Migration))
	}})
	auditApply(ctx, f, pl, res, err)
	var partial *pkgplan.PartialError
	if errors.As(err, &partial) {
		interrupted := errors.Is(err, context.Canceled) && natsconn.Interrupted(ctx)
		reportPartial(f, partial.Result, interrupted)
		if !text {
			_ = p.Print(applyOutput{Plan: pl, Result: res}, nil)
		}
		if interrupted {
			// A migration keeps its state on the server (the temporary
			// stream, the target's metadata): apply --migrate continues it.
			if partial.Result.Failed.Op == pkgplan.ActionMigrate {
				fmt.Fprintln(f.IO.ErrOut, "jetctl: interrupted; the migration's state is kept on the server: run the same command again to continue")
			} else {
				fmt.Fprintln(f.IO.ErrOut, "jetctl: interrupted; run apply again to finish")
			}
			return exitcode.Silent(exitcode.Interrupted)
		}
		if errors.Is(err, context.Canceled) {
			return err
		}
		return exitcode.Newf(exitcode.Partial, "apply stopped at %s: %s; run apply again to finish", partial.Result.Failed.Resource, partial.Result.Failed.Error)
	}
	var verr *pkgplan.VerifyError
	if errors.As(err, &verr) {
		for _, m := range verr.Mismatches {
			fmt.Fprintf(f.IO.ErrOut, "mismatch: %s\n", m)
		}
		return exitcode.New(exitcode.Failure, err)
	}
	if err != nil {
		return err
	}
	if !text {
		return p.Print(applyOutput{Plan: pl, Result: res}, nil)
	}
	s := pl.Summary
	migrated := ""
	if s.Migrate > 0 {
		migrated = fmt.Sprintf("%d migrated, ", s.Migrate)
	}
	fmt.Fprintf(f.IO.Out, "\nApply complete: %d added, %d changed, %d replaced, %s%d destroyed.\n", s.Add, s.Change, s.Replace, migrated, s.Destroy)
	return nil
}

var pastTense = map[pkgplan.Action]string{
	pkgplan.ActionCreate:  "created",
	pkgplan.ActionUpdate:  "updated",
	pkgplan.ActionDelete:  "deleted",
	pkgplan.ActionMigrate: "migrated",
}

// migratedLine is what a migration did, for its step's line on stderr.
func migratedLine(sum *migrate.Summary) string {
	if sum == nil {
		return ""
	}
	return fmt.Sprintf(" (%s kept, sequences %d to %d, %s re-seated, write outage %s)",
		plural(int(sum.Messages), "message"), sum.FirstSeq, sum.LastSeq, plural(len(sum.Consumers), "consumer"), approx(sum.WriteOutage))
}

// printChecked shows what the engine's dry run says each migration would
// move: the messages, and each consumer's position.
func printChecked(w io.Writer, checked []pkgplan.Step) {
	if len(checked) == 0 {
		return
	}
	fmt.Fprintln(w, "\nDry run: the migrations would start from")
	for _, st := range checked {
		sum := st.Migration
		if sum == nil {
			fmt.Fprintf(w, "  %s: %s\n", st.Resource, st.Error)
			continue
		}
		fmt.Fprintf(w, "  %s: %s, sequences %d to %d\n", st.Resource, plural(int(sum.Messages), "message"), sum.FirstSeq, sum.LastSeq)
		for _, c := range sum.Consumers {
			fmt.Fprintf(w, "    consumer %q: acknowledged to %d, %d ack pending (delivered again)\n", c.Name, c.AckFloor, c.Pending)
		}
		if d := sum.DLQ; d != nil {
			fmt.Fprintf(w, "    its DLQ stays as it is (the stream keeps its name): %s captures its advisories, %s holds its dead letters; %s not yet swept, swept after as before\n",
				d.Capture, d.DLQ, advisories(d.Unswept))
		}
	}
}

func advisories(n uint64) string {
	if n == 1 {
		return "1 advisory"
	}
	return fmt.Sprintf("%d advisories", n)
}

// migrationProgress shows a bar on stderr, when it is a terminal, while a
// migration copies: one per resource and phase.
type migrationProgress struct {
	mu       sync.Mutex
	f        *factory.Factory
	disabled bool
	bar      *factory.Progress
	key      string
	copied   uint64
}

func (m *migrationProgress) update(resource string, p migrate.Progress) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A new resource or phase gets a bar of its own, and so does the copy
	// back of a replacement's second move (the count starts over).
	if key := resource + "\x00" + p.Phase; key != m.key || p.Copied < m.copied {
		m.done()
		total := int64(-1)
		if p.Total > 0 {
			total = int64(p.Total)
		}
		m.bar = m.f.NewProgress(total, fmt.Sprintf("%s: %s", resource, p.Phase), m.disabled)
		m.key = key
	}
	m.bar.Set(int64(p.Copied))
	m.copied = p.Copied
}

func (m *migrationProgress) finish() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done()
}

func (m *migrationProgress) done() {
	m.bar.Finish()
	m.bar, m.key, m.copied = nil, "", 0
}

// destructiveSummary is what apply refuses to do without --allow-destroy,
// each resource named once.
func destructiveSummary(pl *pkgplan.Plan) string {
	// A consumer replaced or deleted with its stream is named with the
	// stream ("replace stream "S" and its consumer "c""), not as an item
	// of its own.
	withStream := map[string][]string{}
	for _, r := range pl.Resources {
		if r.Destructive && r.Kind == pkgplan.KindConsumer && streamGoes(pl, r.Stream, r.Action) {
			withStream[r.Stream] = append(withStream[r.Stream], strconv.Quote(r.Name))
		}
	}
	var parts []string
	for _, r := range pl.Resources {
		if !r.Destructive {
			continue
		}
		what := r.Label()
		if r.Kind == pkgplan.KindConsumer {
			if streamGoes(pl, r.Stream, r.Action) {
				continue
			}
			what = fmt.Sprintf("consumer %q of stream %q", r.Name, r.Stream)
		}
		if cs := withStream[r.Name]; r.Kind == pkgplan.KindStream && len(cs) > 0 {
			what += " and its " + pluralWord(len(cs), "consumer") + " " + joinAnd(cs)
		}
		switch r.Action {
		case pkgplan.ActionReplace:
			parts = append(parts, "replace "+what)
		case pkgplan.ActionDelete:
			parts = append(parts, "delete "+what)
		default:
			parts = append(parts, "lose messages of "+what)
		}
	}
	if len(parts) > 3 {
		parts = append(parts[:3], fmt.Sprintf("%d more", len(parts)-3))
	}
	return strings.Join(parts, ", ")
}

// streamGoes reports whether the plan replaces or deletes (action) the
// stream itself.
func streamGoes(pl *pkgplan.Plan, stream string, action pkgplan.Action) bool {
	if action != pkgplan.ActionReplace && action != pkgplan.ActionDelete {
		return false
	}
	for _, r := range pl.Resources {
		if r.Kind == pkgplan.KindStream && r.Name == stream && r.Action == action {
			return true
		}
	}
	return false
}

// pluralWord is "consumer" or "consumers".
func pluralWord(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}

// joinAnd is "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// reportPartial lists what an apply that stopped did: done, the step that
// failed (or was interrupted), and what it did not start.
func reportPartial(f *factory.Factory, res *pkgplan.ApplyResult, interrupted bool) {
	w := f.IO.ErrOut
	if interrupted {
		fmt.Fprintf(w, "apply interrupted: %d done, 1 interrupted, %d not done\n", len(res.Done), len(res.NotDone))
	} else {
		fmt.Fprintf(w, "apply stopped: %d done, 1 failed, %d not done\n", len(res.Done), len(res.NotDone))
	}
	for _, st := range res.Done {
		fmt.Fprintf(w, "  done:     %s %s\n", st.Op, st.Resource)
	}
	if interrupted {
		fmt.Fprintf(w, "  interrupted: %s %s\n", res.Failed.Op, res.Failed.Resource)
	} else {
		fmt.Fprintf(w, "  failed:   %s %s: %s\n", res.Failed.Op, res.Failed.Resource, res.Failed.Error)
	}
	for _, st := range res.NotDone {
		fmt.Fprintf(w, "  not done: %s %s\n", st.Op, st.Resource)
	}
}

func readPlanFile(name string) (*pkgplan.Plan, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, exitcode.UsageErrorf("--plan-file %s: %v", name, unwrap(err))
	}
	var p pkgplan.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, exitcode.UsageErrorf("--plan-file %s: not a plan saved with jetctl plan -o json: %v", name, err)
	}
	if p.FormatVersion != pkgplan.FormatVersion {
		return nil, exitcode.UsageErrorf("--plan-file %s: plan format version %d, this jetctl reads version %d", name, p.FormatVersion, pkgplan.FormatVersion)
	}
	return &p, nil
}
