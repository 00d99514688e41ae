// Package consumer implements `jetctl consumer`: the delivery state
// machines of JetStream consumers, listed, watched, waited for, diagnosed,
// rewound, paused and resumed.
package consumer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// NewCmd returns `jetctl consumer`.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consumer",
		Short: "see, explain, wait for, rewind, pause and resume consumers",
		Long: `A consumer is a delivery state machine: a delivered cursor, an ack floor,
unprocessed messages, messages delivered and not yet acknowledged (against
MaxAckPending), redeliveries and waiting pulls. jetctl consumer shows and
moves them:

  ls       one row per consumer, with the lag in time and a one-word health
  watch    the same, live, with rates between polls
  wait     wait until a consumer has caught up (for CI and runbooks)
  explain  named findings with their evidence and the command that helps
  rewind   deliver again from a sequence, a time or the stream's start
  pause    stop deliveries until a time; resume starts them again

ls, watch, wait and explain consume, acknowledge and change nothing.
rewind needs --yes when not run in a terminal, and has --dry-run.
See docs/consumer.md for the health rules, every finding and the JSON
fields.`,
		Example: `  jetctl consumer ls
  jetctl consumer ls ORDERS --sort lag
  jetctl consumer watch ORDERS
  jetctl consumer wait ORDERS billing --caught-up --wait 5m
  jetctl consumer explain ORDERS billing --exit-code -o json
  jetctl consumer rewind ORDERS projector --to-start --dry-run
  jetctl consumer pause ORDERS billing --for 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdLs(f), newCmdWatch(f), newCmdWait(f),
		newCmdExplain(f), newCmdRewind(f), newCmdPause(f), newCmdResume(f))
	return cmd
}

// selectFlags are the flags ls and watch share: which consumers, in which
// order, with which health thresholds.
type selectFlags struct {
	all      bool
	sort     string
	filter   string
	behind   time.Duration
	inactive time.Duration
}

func (s *selectFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&s.all, "all", false, "include KV, object store and DLQ streams (hidden by default)")
	fs.StringVar(&s.sort, "sort", "name", "order: lag (worst first), pending (most first), health (worst first) or name")
	fs.StringVar(&s.filter, "filter", "", "jq program: keep the consumers for which it is true (it sees the JSON fields)")
	factory.DurationVar(fs, &s.behind, "behind", time.Minute, "lag from which a consumer is behind").Positive()
	factory.DurationVar(fs, &s.inactive, "inactive", 5*time.Minute, "time without activity after which a consumer with no waiting pull is stalled (work pending) or idle")
	_ = cmd.RegisterFlagCompletionFunc("sort", cobra.FixedCompletions([]string{"lag", "pending", "health", "name"}, cobra.ShellCompDirectiveNoFileComp))
}

// selection is what selectFlags and the stream arguments turn into.
type selection struct {
	list   pkgconsumer.ListConfig
	sortBy pkgconsumer.SortBy
	keep   func(*pkgconsumer.State) bool
}

// config validates the flags and arguments, before anything connects.
func (s *selectFlags) config(f *factory.Factory, streams []string) (selection, error) {
	var sel selection
	var unique []string
	for _, name := range streams {
		if err := jsapi.ValidateStreamName(name); err != nil {
			return sel, exitcode.UsageErrorf("%v", err)
		}
		if !slices.Contains(unique, name) {
			unique = append(unique, name)
		}
	}
	streams = unique
	by, err := pkgconsumer.ParseSortBy(s.sort)
	if err != nil {
		return sel, exitcode.New(exitcode.Usage, err)
	}
	inactive := s.inactive
	if inactive == 0 {
		// 0 means "any inactivity": the smallest positive threshold.
		inactive = time.Nanosecond
	}
	filter, err := output.CompileFilter(s.filter, "consumers it fails on")
	if err != nil {
		return sel, err
	}
	sel.list = pkgconsumer.ListConfig{Streams: streams, All: s.all, Thresholds: pkgconsumer.Thresholds{Behind: s.behind, Inactive: inactive}}
	sel.sortBy = by
	sel.keep = func(*pkgconsumer.State) bool { return true }
	if filter != nil {
		warn := filter.WarnOnce(f.IO.ErrOut)
		sel.keep = func(st *pkgconsumer.State) bool {
			keep, err := filter.Keep(f.Context(), nil, func() (any, error) { return output.Generic(st) })
			if err != nil {
				warn(fmt.Sprintf("consumer %s > %s", st.Stream, st.Consumer), err)
			}
			return keep
		}
	}
	return sel, nil
}

// apply filters and sorts states as the selection says.
func (sel selection) apply(states []*pkgconsumer.State) []*pkgconsumer.State {
	kept := []*pkgconsumer.State{}
	for _, s := range states {
		if sel.keep(s) {
			kept = append(kept, s)
		}
	}
	pkgconsumer.Sort(kept, sel.sortBy)
	return kept
}

// Cells of the tables, shared by ls, watch and status.

// FilterCell is the filter subjects, or "-" for every subject.
func FilterCell(s *pkgconsumer.State) string {
	if len(s.FilterSubjects) == 0 {
		return "-"
	}
	return strings.Join(s.FilterSubjects, ",")
}

// AckPendingCell is "ack pending/max ack pending".
func AckPendingCell(s *pkgconsumer.State) string {
	if s.MaxAckPending <= 0 {
		return fmt.Sprintf("%d/-", s.AckPending)
	}
	return fmt.Sprintf("%d/%d", s.AckPending, s.MaxAckPending)
}

// LagCell is the lag, "-" when nothing is unprocessed, "?" when unknown.
func LagCell(s *pkgconsumer.State) string {
	if s.NoLeader {
		return "?"
	}
	if s.Unprocessed == 0 {
		return "-"
	}
	lag, ok := s.Lag()
	if !ok {
		return "?"
	}
	return pkgconsumer.ShortDuration(lag)
}

// LastActiveCell is how long ago the consumer delivered or got an ack.
func LastActiveCell(s *pkgconsumer.State) string {
	if s.LastActive == nil {
		return "never"
	}
	return pkgconsumer.ShortDuration(max(0, s.Time.Sub(*s.LastActive))) + " ago"
}

func deadCell(s *pkgconsumer.State) string {
	if s.DeadLetters == nil {
		return "-"
	}
	return fmt.Sprint(*s.DeadLetters)
}

func pausedCell(s *pkgconsumer.State) string {
	switch {
	case !s.Paused:
		return "-"
	case s.PausedUntil != nil:
		return "until " + s.PausedUntil.UTC().Format(time.RFC3339)
	}
	return "yes"
}

func kindCell(s *pkgconsumer.State) string {
	if s.NoLeader && s.Kind == "" {
		return "?"
	}
	return s.Kind
}
