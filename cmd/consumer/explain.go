package consumer

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
	"github.com/jetctl/jetctl/pkg/events"
	"github.com/jetctl/jetctl/pkg/units"
)

type explainOptions struct {
	exitCode bool
	health   HealthFlags
}

func newCmdExplain(f *factory.Factory) *cobra.Command {
	o := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain STREAM CONSUMER",
		Short: "say what is wrong with a consumer, with the evidence and the command that helps",
		Long: `Diagnose a consumer: read its state and its stream's, and name what is
wrong. Each finding has a stable id, the health word it gives (the word
"consumer ls", status, watch and wait show is the word of the most urgent
finding: one health model everywhere), a severity, the evidence read from
the server, and the command that fixes or investigates it:

  critical (messages are not being processed)
  no-leader                      no-leader  the cluster has no leader for the consumer or its stream
  stalled-max-ack-pending        stalled    ack pending has reached MaxAckPending
  no-worker-pulling              stalled    messages wait, nobody pulls (--inactive)
  push-no-subscriber             stalled    messages wait for a push consumer nobody subscribes to
  ack-floor-frozen               stalled    work waits, the ack floor has not moved for stall-critical (15m)
                                            (a warning from stall-warning, 5m)
  pinned-client-gone             stalled    messages wait for the client a priority group is pinned to,
                                            which has taken nothing for --inactive
  overflow-threshold-not-reached stalled    only overflow pulls wait, for a backlog above what there is,
                                            and nothing was delivered for --inactive
  nothing-acknowledged           failing    every message delivered since the ack floor is redelivered, none acked
  poison-message                 poison     one message holds the ack floor, redelivered again and again
  warning (needs a look)
  paused                         paused     the consumer is paused
  behind                         behind     the oldest unprocessed message is older than --behind
                                            (critical from lag-critical, when set)
  dead-letters                   dead-letters  dead letters wait: in the DLQ, not yet swept, or recorded only
                                            (critical from dead-letters-critical, when set)
  max-deliver-exceeded           dead-letters  messages past MaxDeliver still in a workqueue/interest stream
  replica-lagging                degraded   a replica is offline or behind
  filter-matches-nothing         misconfigured  a filter no stored message matches (a typo?)
  max-deliver-unlimited          misconfigured  MaxDeliver unlimited while redeliveries climb
  info
  idle                           idle       nothing pending, no worker seen for --inactive
  deliver-policy-skipped-backlog ok         the deliver policy started after older messages
  interest-held-only-here        ok         an interest stream keeps messages for this consumer alone
  replication-consumer           replication  the server's own consumer for a mirror or a source:
                                            shown, never judged like a worker's

The thresholds are --behind, --inactive, and the consumer's own in its
metadata (io.jetctl.check.lag-warning, lag-critical, stall-warning,
stall-critical, dead-letters-critical; a flag wins), as in every command
that shows its health.

A consumer with priority groups (nats-server 2.11+) has each group listed
with the client it is pinned to and since when; a stuck pin is freed with
"jetctl consumer unpin".

A healthy consumer gets one line (and its priority groups). It only reads: nothing is consumed,
acknowledged or changed. --exit-code exits 8 when a finding at warning or
above is present (as kv diff --exit-code does), so it can gate a deploy.
-o json lists the findings ([] when there are none).`,
		Example: `  jetctl consumer explain ORDERS billing
  jetctl consumer explain ORDERS billing --exit-code
  jetctl consumer explain ORDERS billing -o json --jq '.[].id'`,
		Args:              streamConsumerArgs,
		ValidArgsFunction: completeStreamConsumer(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExplain(cmd.Context(), f, o, args[0], args[1])
		},
	}
	cmd.Flags().BoolVar(&o.exitCode, "exit-code", false, "exit 8 when a finding at warning or above is present, 0 otherwise")
	o.health.Bind(cmd.Flags())
	// --idle was explain's name for --inactive.
	factory.DurationVar(cmd.Flags(), &o.health.inactive, "idle", pkgconsumer.DefaultThresholds.Inactive, "the same as --inactive").Positive()
	_ = cmd.Flags().MarkHidden("idle")
	return cmd
}

func runExplain(ctx context.Context, f *factory.Factory, o *explainOptions, stream, consumer string) error {
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	res, err := pkgconsumer.Explain(ctx, js, pkgconsumer.ExplainConfig{Stream: stream, Consumer: consumer, Thresholds: o.health.Thresholds(), Fixed: o.health.Fixed()})
	if err != nil {
		return err
	}
	if res.State != nil {
		ThresholdWarnings(f.IO.ErrOut, []*pkgconsumer.State{res.State})
	}
	if p.Format == "jsonl" {
		for _, finding := range res.Findings {
			if err := p.Item(finding); err != nil {
				return err
			}
		}
	} else if p.Format == "table" && f.Output.JQ == "" {
		w := bufio.NewWriter(f.IO.Out)
		writeExplanation(w, res)
		writeRecent(ctx, f, w, js, stream, consumer)
		if err := w.Flush(); err != nil {
			return err
		}
	} else if err := p.Print(res.Findings, nil); err != nil {
		return err
	}
	if o.exitCode && !res.Healthy() {
		return exitcode.Silent(exitcode.Changes)
	}
	if res.State != nil {
		return Unread([]*pkgconsumer.State{res.State})
	}
	return nil
}

// writeExplanation renders a diagnosis for people: one line when healthy,
// otherwise each finding with its evidence and the command that helps.
func writeExplanation(w io.Writer, res *pkgconsumer.Explanation) {
	name := output.Escape(res.Stream + " > " + res.Consumer)
	if len(res.Findings) == 0 {
		ci := res.Info
		fmt.Fprintf(w, "%s: healthy: %d unprocessed, %d ack pending, %d redelivered, ack floor at seq %d\n",
			name, ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.AckFloor.Stream)
		writeLastAck(w, res.State)
		writeGroups(w, res.State)
		return
	}
	if s := res.State; s != nil && s.Replication != nil && s.Health == pkgconsumer.HealthReplication {
		fmt.Fprintf(w, "%s: %s; not judged like a worker's consumer\n", name, output.Escape(s.Replication.Describe(res.Stream)))
		writeFindings(w, res.Findings)
		return
	}
	counts := map[pkgconsumer.Severity]int{}
	for _, fd := range res.Findings {
		counts[fd.Severity]++
	}
	var parts []string
	for _, s := range []pkgconsumer.Severity{pkgconsumer.SeverityCritical, pkgconsumer.SeverityWarning, pkgconsumer.SeverityInfo} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	verdict := "needs attention"
	if res.Healthy() {
		verdict = "healthy, with notes"
	}
	if word := pkgconsumer.WordOf(res.Findings[0].ID); word != pkgconsumer.HealthOK {
		verdict += " (" + string(word) + ")"
	}
	fmt.Fprintf(w, "%s: %s: %s (%s)\n", name, verdict, english.Plural(len(res.Findings), "finding", "findings"), strings.Join(parts, ", "))
	writeLastAck(w, res.State)
	writeGroups(w, res.State)
	writeFindings(w, res.Findings)
}

// writeLastAck says when the last ack time is unknown (after a server
// restart): the stall rule is then silent, and explain says why.
func writeLastAck(w io.Writer, s *pkgconsumer.State) {
	if s != nil && s.LastAckUnknown && (s.Unprocessed > 0 || s.AckPending > 0) {
		fmt.Fprintf(w, "%s (the stall rule resumes then; the ack floor is at seq %d)\n", pkgconsumer.LastAckUnknownText, s.AckFloorStreamSeq)
	}
}

// writeGroups lists a consumer's priority groups: each group's pinned
// client and since when (pinned_client), or the policy.
func writeGroups(w io.Writer, s *pkgconsumer.State) {
	if s == nil || len(s.PriorityGroups) == 0 {
		return
	}
	if s.PriorityPolicy != pkgconsumer.PolicyPinnedClient {
		names := make([]string, len(s.PriorityGroups))
		for i, g := range s.PriorityGroups {
			names[i] = g.Group
		}
		fmt.Fprintf(w, "priority groups (%s): %s\n", output.Escape(s.PriorityPolicy), output.Escape(strings.Join(names, ", ")))
		return
	}
	timeout := ""
	if s.PriorityTimeoutSeconds != nil {
		timeout = ", priority_timeout " + units.FormatDuration(time.Duration(*s.PriorityTimeoutSeconds*float64(time.Second)))
	}
	fmt.Fprintf(w, "priority groups (pinned_client%s):\n", timeout)
	for _, g := range s.PriorityGroups {
		pin := "not pinned"
		if g.PinnedClientID != "" {
			pin = "pinned to client " + g.PinnedClientID + " " + pinnedSince(g.PinnedSince, g.PinnedSeconds)
		}
		fmt.Fprintf(w, "  %-16s  %s\n", output.Escape(g.Group), output.Escape(pin))
	}
}

// writeFindings prints each finding with its evidence and the command
// that helps.
func writeFindings(w io.Writer, findings []pkgconsumer.Finding) {
	for _, fd := range findings {
		fmt.Fprintf(w, "\n%-8s  %s\n", strings.ToUpper(string(fd.Severity)), fd.ID)
		fmt.Fprintf(w, "  %s\n", output.Escape(fd.Summary))
		fmt.Fprintf(w, "  evidence: %s\n", output.Escape(evidenceText(fd.Evidence)))
		fmt.Fprintf(w, "  try:      %s\n", output.Escape(fd.Command))
	}
}

// writeRecent adds what the event record says happened to the consumer
// in the last hour, where the account has a recorder (jetctl events
// record); a record that cannot be read is left out, said at --verbose.
func writeRecent(ctx context.Context, f *factory.Factory, w io.Writer, js jetstream.JetStream, stream, consumer string) {
	r, err := events.ReadRecent(ctx, js, events.RecentConfig{Stream: stream, Consumer: consumer})
	if err != nil {
		f.Logger().Debug("consumer explain: the event record", "error", err)
	}
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nrecorded in the last hour (jetctl events timeline --stream %s --consumer %s --since 1h):\n", stream, consumer)
	lines := r.Lines(events.RecentWindow)
	if len(lines) == 0 {
		lines = []string{"no leader election, dead letter or jetctl change"}
	}
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", output.Escape(l))
	}
}

// evidenceText is key=value pairs, keys sorted.
func evidenceText(ev map[string]any) string {
	keys := make([]string, 0, len(ev))
	for k := range ev {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v := ev[k]
		if s, ok := v.([]string); ok {
			v = strings.Join(s, ",")
		}
		parts[i] = fmt.Sprintf("%s=%v", k, v)
	}
	return strings.Join(parts, " ")
}
