// Package events implements `jetctl events`: the record of what happened
// to streams and consumers (JetStream's advisories and jetctl's audit
// records), kept by the server in the recorder stream, as a timeline and a
// live tail.
package events

import (
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
)

// NewCmd returns `jetctl events`.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "record what happens to streams and consumers, and show it as a timeline",
		Long: `JetStream says what happens as it happens, in advisories (max deliveries,
terminated messages, consumers and streams created, updated and deleted,
leaders elected, quorum lost, ...), but they are core NATS messages: whoever
is not subscribed at that moment never sees them. jetctl events makes the
server itself keep them, with jetctl's own audit records (what each changing
command did, by whom), in one bounded stream, JETCTL_EVENTS:

  record    create (or verify) the recorder; run once
  timeline  what happened, in order, per stream or consumer
  tail      follow the events live, optionally until a condition is met

The DLQ captures of "jetctl dlq setup" read the recorder when it exists
(see docs/events.md).`,
		Example: `  jetctl events record
  jetctl events timeline --stream ORDERS --consumer projector --since 1h
  jetctl events tail --stream ORDERS --type stream_leader_elected --count 1 --wait 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdRecord(f), newCmdTimeline(f), newCmdTail(f))
	return cmd
}
