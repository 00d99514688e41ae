// Package consumer implements `jetctl consumer`: the delivery state
// machines of JetStream consumers, listed, watched, waited for, diagnosed,
// rewound, paused and resumed.
package consumer

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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
		Short: "see, explain, wait for, rewind, pause, resume and unpin consumers",
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
  unpin    free a priority group pinned to a client that is gone

ls, watch, wait and explain consume, acknowledge and change nothing.
rewind and unpin need --yes when not run in a terminal, and have
--dry-run.
See docs/consumer.md for the health rules, every finding and the JSON
fields.`,
		Example: `  jetctl consumer ls
  jetctl consumer ls ORDERS --sort lag
  jetctl consumer watch ORDERS
  jetctl consumer wait ORDERS billing --caught-up --wait 5m
  jetctl consumer explain ORDERS billing --exit-code -o json
  jetctl consumer rewind ORDERS projector --to-start --dry-run
  jetctl consumer pause ORDERS billing --for 10m
  jetctl consumer unpin JOBS workers --group jobs --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdLs(f), newCmdWatch(f), newCmdWait(f),
		newCmdExplain(f), newCmdRewind(f), newCmdPause(f), newCmdResume(f), newCmdUnpin(f))
	return cmd
}

// selectFlags are the flags ls and watch share: which consumers, in which
// order, with which health thresholds.
type selectFlags struct {
	all    bool
	sort   string
	filter string
	health HealthFlags
}

// HealthFlags are the thresholds of the health model, the same flags in
// every command that shows a consumer's health (consumer ls, watch, wait,
// explain, and status) so that they can give the same answer.
type HealthFlags struct {
	behind   time.Duration
	inactive time.Duration
	fs       *pflag.FlagSet
}

// Bind adds --behind and --inactive to fs.
func (h *HealthFlags) Bind(fs *pflag.FlagSet) {
	h.fs = fs
	d := pkgconsumer.DefaultThresholds
	factory.DurationVar(fs, &h.behind, "behind", d.Behind, "lag (age of the oldest unprocessed message) from which a consumer is behind").Positive()
	factory.DurationVar(fs, &h.inactive, "inactive", d.Inactive, "time without activity after which a consumer with no worker is stalled (messages wait) or idle (0: at once)")
}

// Thresholds are the flags as the health model takes them.
func (h *HealthFlags) Thresholds() pkgconsumer.Thresholds {
	inactive := h.inactive
	if inactive == 0 {
		// 0 means "any inactivity": the smallest positive threshold.
		inactive = time.Nanosecond
	}
	return pkgconsumer.Thresholds{Behind: h.behind, Inactive: inactive}
}

// Fixed names the thresholds given as flags, which a consumer's metadata
// does not override: --behind is the lag-warning threshold
// (io.jetctl.check.lag-warning).
func (h *HealthFlags) Fixed() map[string]bool {
	fixed := map[string]bool{}
	if h.fs != nil && h.fs.Changed("behind") {
		fixed[pkgconsumer.ThresholdLagWarning] = true
	}
	return fixed
}

func (s *selectFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.BoolVar(&s.all, "all", false, "include KV, object store and DLQ streams (hidden by default)")
	fs.StringVar(&s.sort, "sort", "name", "order: lag (worst first), pending (most first), health (worst first) or name")
	fs.StringVar(&s.filter, "filter", "", "jq program: keep the consumers for which it is true (it sees the JSON fields)")
	s.health.Bind(fs)
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
	filter, err := output.CompileFilter(s.filter, "consumers it fails on")
	if err != nil {
		return sel, err
	}
	sel.list = pkgconsumer.ListConfig{Streams: streams, All: s.all, Thresholds: s.health.Thresholds(), Fixed: s.health.Fixed()}
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

// GroupsCell is the priority groups: "jobs: pinned 5m" (pinned_client:
// the group pinned, for how long), "jobs: not pinned", "jobs (overflow)";
// "-" for none.
func GroupsCell(s *pkgconsumer.State) string {
	if len(s.PriorityGroups) == 0 {
		return "-"
	}
	parts := make([]string, len(s.PriorityGroups))
	for i, g := range s.PriorityGroups {
		switch {
		case s.PriorityPolicy != pkgconsumer.PolicyPinnedClient:
			parts[i] = fmt.Sprintf("%s (%s)", g.Group, s.PriorityPolicy)
		case g.PinnedClientID == "":
			parts[i] = g.Group + ": not pinned"
		case g.PinnedSeconds == nil:
			parts[i] = g.Group + ": pinned"
		default:
			parts[i] = g.Group + ": pinned " + pkgconsumer.ShortDuration(time.Duration(*g.PinnedSeconds*float64(time.Second)))
		}
	}
	return strings.Join(parts, ", ")
}

// HealthCell is the health word; for a replication consumer, which
// stream reads through it, as a mirror or a source ("replication to AGG
// (source)").
func HealthCell(s *pkgconsumer.State) string {
	if r := s.Replication; r != nil && s.Health == pkgconsumer.HealthReplication {
		return fmt.Sprintf("replication to %s (%s)", r.Stream, r.Kind)
	}
	return string(s.Health)
}

func kindCell(s *pkgconsumer.State) string {
	if s.NoLeader && s.Kind == "" {
		return "?"
	}
	return s.Kind
}

// Unread is the error that ends a listing some of whose values could not
// be read (the lag, where the user may not get messages): exit 4,
// partial, after the output, in one line naming the first reason. The
// values are shown as unknown and the findings that needed them are left
// out. nil when everything was read. Threshold metadata that was ignored
// is not a value left unread (see ThresholdWarnings).
func Unread(states []*pkgconsumer.State) error {
	n, first := 0, ""
	for _, s := range states {
		if unread := s.Unreadable(); len(unread) > 0 {
			if n == 0 {
				first = s.Stream + " > " + s.Consumer + ": " + unread[0]
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return exitcode.Newf(exitcode.Partial, "could not read everything for %s (shown as unknown; their findings left out): %s",
		english.Plural(n, "consumer", "consumers"), output.Escape(first))
}

// ThresholdWarnings prints on w one warning per threshold metadata value
// a consumer has that was ignored (it does not parse, or puts a warning
// level above its critical level): the consumer was judged without it,
// and the command does not fail for it.
func ThresholdWarnings(w io.Writer, states []*pkgconsumer.State) {
	for _, s := range states {
		for _, note := range s.ThresholdNotes() {
			fmt.Fprintf(w, "jetctl: warning: %s > %s: %s\n", output.Escape(s.Stream), output.Escape(s.Consumer), output.Escape(note))
		}
	}
}
