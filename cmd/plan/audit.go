package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/audit"
	pkgplan "github.com/jetctl/jetctl/pkg/plan"
)

// auditApply records what apply did: one record per stream, consumer,
// bucket or object store it changed, in the order it changed them, with
// apply's error on each when it failed. A resource whose only step failed
// changed nothing and has no record, unless that step was a migration,
// whose state stays on the server.
func auditApply(ctx context.Context, f *factory.Factory, pl *pkgplan.Plan, res *pkgplan.ApplyResult, err error) {
	if res == nil {
		return
	}
	plans := map[string]*pkgplan.ResourcePlan{}
	for _, rp := range pl.Resources {
		plans[rp.Label()] = rp
	}
	var order []string
	steps := map[string][]pkgplan.Step{}
	for _, st := range res.Done {
		if _, seen := steps[st.Resource]; !seen {
			order = append(order, st.Resource)
		}
		steps[st.Resource] = append(steps[st.Resource], st)
	}
	if st := res.Failed; st != nil {
		if _, done := steps[st.Resource]; done || st.Op == pkgplan.ActionMigrate {
			if !done {
				order = append(order, st.Resource)
			}
			steps[st.Resource] = append(steps[st.Resource], *st)
		}
	}
	changes := make([]audit.Change, 0, len(order))
	for _, label := range order {
		changes = append(changes, applyChange(plans[label], label, steps[label], err))
	}
	auditlog.Write(ctx, f, changes...)
}

// applyChange is the record of one resource's steps.
func applyChange(rp *pkgplan.ResourcePlan, label string, steps []pkgplan.Step, err error) audit.Change {
	c := audit.Change{Err: err, Counts: map[string]int64{}}
	if rp != nil {
		c.Action = string(rp.Action)
		switch rp.Kind {
		case pkgplan.KindConsumer:
			c.Stream, c.Consumer = rp.Stream, rp.Name
		case pkgplan.KindKV:
			c.Stream, c.Bucket = "KV_"+rp.Name, rp.Name
		case pkgplan.KindObjectStore:
			c.Stream, c.Bucket = "OBJ_"+rp.Name, rp.Name
		default:
			c.Stream = rp.Name
		}
		if rp.Action == pkgplan.ActionUpdate {
			c.Counts["fields_changed"] = int64(len(rp.Changes))
		}
	}
	var parts []string
	for _, st := range steps {
		if c.Action == "" {
			c.Action = string(st.Op)
		}
		if st.Error != "" {
			parts = append(parts, fmt.Sprintf("%s failed: %s", st.Op, st.Error))
			continue
		}
		parts = append(parts, pastTense[st.Op]+migratedLine(st.Migration))
		if sum := st.Migration; sum != nil {
			c.Counts["messages"] = int64(sum.Messages)
			c.Counts["first_seq"] = int64(sum.FirstSeq)
			c.Counts["last_seq"] = int64(sum.LastSeq)
			c.Counts["consumers"] = int64(len(sum.Consumers))
		}
	}
	c.Summary = label + ": " + strings.Join(parts, ", then ")
	if rp != nil && rp.Reason != "" && (rp.Action == pkgplan.ActionDelete || rp.Action == pkgplan.ActionReplace) {
		c.Summary += " (" + rp.Reason + ")"
	}
	return c
}
