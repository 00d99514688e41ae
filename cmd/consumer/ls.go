package consumer

import (
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
)

func newCmdLs(f *factory.Factory) *cobra.Command {
	sf := &selectFlags{}
	cmd := &cobra.Command{
		Use:   "ls [STREAM...]",
		Short: "list consumers with their positions, lag in time and health",
		Long: `List one row per consumer, of every stream or of the streams named:
stream, consumer, filter subjects, pull or push, unprocessed messages
(never delivered), ack pending against MaxAckPending, redelivered, waiting
pulls, last activity, the lag in time (the age of the oldest message not
yet delivered), its dead letters that wait (in the DLQ, not yet swept
from the capture of "jetctl dlq setup", or held by the recorder of "jetctl
events record" alone; each once), paused, and a one-word
health: the word of its most urgent finding, by the one health model
"consumer explain", status, watch and wait use (critical: no-leader,
stalled, failing, poison; warning: paused, behind, dead-letters,
degraded, misconfigured; info: idle; ok). -o json has the findings and
the severity that decides (a stall younger than stall-critical is a
warning; a lag past lag-critical is critical).

A consumer's metadata can set its own thresholds, keys
io.jetctl.check.NAME: lag-warning (what --behind sets; the flag wins),
lag-critical, stall-warning (default 5m), stall-critical (default 15m)
and dead-letters-critical; see docs/consumer.md.

KV buckets (KV_*), object stores (OBJ_*) and the streams of "jetctl dlq
setup" are hidden unless --all or named. --sort lag puts the worst first.
--filter keeps the consumers for which a jq program is true; it sees the
fields of -o json. Reading changes nothing.`,
		Example: `  jetctl consumer ls
  jetctl consumer ls ORDERS --sort lag
  jetctl consumer ls --filter '.health != "ok"' -o json
  jetctl consumer ls --all --jq '.[] | select(.unprocessed > 0) | .consumer'`,
		ValidArgsFunction: f.CompleteStreams(),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := sf.config(f, args)
			if err != nil {
				return err
			}
			p, err := f.Printer("table")
			if err != nil {
				return err
			}
			js, err := f.JetStream(cmd.Context())
			if err != nil {
				return err
			}
			states, err := pkgconsumer.List(cmd.Context(), js, sel.list)
			if err != nil {
				return err
			}
			states = sel.apply(states)
			ThresholdWarnings(f.IO.ErrOut, states)
			if p.Format == "table" && len(states) == 0 {
				fmt.Fprintln(f.IO.ErrOut, "jetctl: no consumers")
				return nil
			}
			if err := p.Print(states, func() []output.Table { return []output.Table{lsTable(states)} }); err != nil {
				return err
			}
			return Unread(states)
		},
	}
	sf.bind(cmd)
	return cmd
}

func lsTable(states []*pkgconsumer.State) output.Table {
	t := output.Table{Header: []string{"stream", "consumer", "filter", "kind", "unprocessed", "ack pending", "redelivered", "waiting", "last active", "lag", "dead", "paused", "groups", "health"}}
	for _, s := range states {
		t.Row(s.Stream, s.Consumer, FilterCell(s), kindCell(s), humanize.Comma(int64(s.Unprocessed)), AckPendingCell(s),
			s.Redelivered, s.WaitingPulls, LastActiveCell(s), LagCell(s), deadCell(s), pausedCell(s), GroupsCell(s), HealthCell(s))
	}
	return t
}
