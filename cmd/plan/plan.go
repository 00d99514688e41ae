package plan

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/lint"
	pkgplan "github.com/jetctl/jetctl/pkg/plan"
)

// planOptions are `jetctl plan`'s flags.
type planOptions struct {
	fileOptions
	DetailedExitCode bool
}

// NewCmdPlan returns `jetctl plan`.
func NewCmdPlan(f *factory.Factory) *cobra.Command {
	o := &planOptions{}
	c := &cobra.Command{
		Use:   "plan -f FILE|DIR",
		Short: "show what apply would change to make the server match plan files",
		Long: `Compare the streams, consumers, KV buckets and object stores that plan files
declare with the server, and show what "jetctl apply" would do:

  +    create
  ~    update in place
  -/+  replace: delete and create again (the data is lost)
  <~>  migrate (--migrate): replace by a stream of the same name, keeping
       every message, sequence and consumer position
  -    delete (only with --prune, and only what jetctl created)

Each changed field shows its old and new value; "# forces replacement" marks
the field that cannot change in place, "# destructive" an in-place change
that loses messages (lowering limits, retention changes), with the number
of messages it removes. Changes made on the server outside jetctl since the
last apply are listed as drift.

A stream, KV bucket or object store that must be replaced (storage type,
retention to or from workqueue, ...) says whether "jetctl apply --migrate"
could keep its data instead, and how much there is, or why not (a mirror's
data belongs to its origin). --migrate plans those migrations: "<~>", not
destructive, with the messages and bytes to copy, the consumers to
re-seat, and the engine's estimate of the copy time and the write outage.

Server defaults and the server's own _nats.* metadata are normalised away,
so a plan right after apply shows no changes. Planning only reads.

What the server would refuse and can be known ahead (more replicas than
the server or cluster keeps, a workqueue consumer without explicit acks or
whose filters overlap another's, a setting above the server's JetStream
API level such as allow_batched on a 2.12 server, a counter stream with
discard: new, ...) is reported as file:line:column, exit 2, as are
problems in the files. Files that declare nothing are refused too (exit 2):
a plan of nothing would pass for in sync, as after "jetctl export >
live.yaml" without a selector; --allow-empty takes them (with --prune it
plans deleting everything jetctl manages).

The lint findings (see "jetctl lint") of the resources the plan creates or
changes, with what plan read of the server (its cluster, which consumers'
dead letters a DLQ capture keeps), are printed on stderr above the plan, and are the "lint" list of
-o json, so that nobody applies a known mistake unseen. They do not change
the exit code: run "jetctl lint" in CI for that.

-o json prints the versioned machine plan, which "jetctl apply --plan-file"
applies as long as the server still matches it.

--detailed-exitcode: exit 0 when in sync, 8 when changes are pending, 9 when
destructive changes (replace, delete, data loss) are pending. A migration
is a change, not a destructive one (8).`,
		Example: `  jetctl plan -f examples/orders.yaml
  jetctl plan -f plans/ --var ENV=prod --detailed-exitcode
  jetctl plan -f plans/ --prune -o json > plan.json
  jetctl plan -f plans/ --migrate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := f.Printer("table")
			if err != nil {
				return err
			}
			desired, err := o.load(f)
			if err != nil {
				return err
			}
			js, err := f.JetStream(cmd.Context())
			if err != nil {
				return err
			}
			pl, live, err := pkgplan.Make(cmd.Context(), js, desired, pkgplan.Options{Prune: o.Prune, Migrate: o.Migrate, LeaderWait: f.Conn.Timeout})
			if err != nil {
				return planError(f, err)
			}
			findings := lintChanged(f, desired, pl, live)
			if textOutput(f, p.Format) {
				printPlan(f.IO.Out, pl, false)
			} else if err := p.Print(planWithLint{pl, findings}, nil); err != nil {
				return err
			}
			return planExit(pl, o.DetailedExitCode)
		},
	}
	o.bind(c.Flags())
	c.Flags().BoolVar(&o.DetailedExitCode, "detailed-exitcode", false, "exit 0 in sync, 8 changes pending, 9 destructive changes pending")
	return c
}

func planExit(pl *pkgplan.Plan, detailed bool) error {
	if !detailed || !pl.Changed() {
		return nil
	}
	if pl.Summary.Destructive {
		return exitcode.Silent(exitcode.Destructive)
	}
	return exitcode.Silent(exitcode.Changes)
}

// planWithLint is plan -o json: the machine plan and the lint findings of
// what it changes ("apply --plan-file" reads the plan and ignores them).
type planWithLint struct {
	*pkgplan.Plan
	Lint []lint.Finding `json:"lint"`
}

// lintChanged lints the resources the plan creates, changes, replaces or
// migrates, with what plan read of the server (its cluster, its DLQ
// captures: the live rules run), prints the findings on stderr and
// returns them.
func lintChanged(f *factory.Factory, desired *pkgplan.Desired, pl *pkgplan.Plan, live *pkgplan.Live) []lint.Finding {
	changed := map[string]bool{}
	for _, r := range pl.Resources {
		if r.Action != pkgplan.ActionNone && r.Action != pkgplan.ActionDelete {
			changed[r.ID()] = true
		}
	}
	if len(changed) == 0 {
		return []lint.Finding{}
	}
	env := lint.ServerEnv(live)
	env.Only = func(r *pkgplan.Resource) bool { return changed[r.ID()] }
	res := lint.Lint(desired, env)
	if len(res.Findings) == 0 {
		return res.Findings
	}
	fmt.Fprintf(f.IO.ErrOut, "Lint: %s in what this plan changes (jetctl lint -f ... says more):\n", plural(len(res.Findings), "finding"))
	for _, fd := range res.Findings {
		fmt.Fprintln(f.IO.ErrOut, "  "+output.Escape(fd.String()))
	}
	fmt.Fprintln(f.IO.ErrOut)
	return res.Findings
}
