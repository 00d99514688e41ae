// Package consumer implements `jetctl consumer`: the consumers' delivery
// state machines, diagnosed, rewound, paused and resumed.
package consumer

import (
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
)

// NewCmd returns `jetctl consumer`.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "consumer",
		Short: "diagnose, rewind, pause and resume consumers",
		Long: `A consumer is a delivery state machine: a delivered cursor, an ack floor,
messages pending acknowledgement against MaxAckPending, redeliveries and
waiting pulls. jetctl consumer reads and moves it:

  explain  named findings with their evidence and the command that helps
  rewind   deliver again from a sequence, a time or the stream's start
  pause    stop deliveries until a time; resume starts them again

rewind needs --yes when not run in a terminal, and has --dry-run.
See docs/consumer.md for every finding and the JSON fields.`,
		Example: `  jetctl consumer explain ORDERS billing
  jetctl consumer explain ORDERS billing --exit-code -o json
  jetctl consumer rewind ORDERS projector --to-start --dry-run
  jetctl consumer pause ORDERS billing --for 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdExplain(f), newCmdRewind(f), newCmdPause(f), newCmdResume(f))
	return cmd
}
