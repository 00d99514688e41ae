// Package migrate implements `jetctl migrate`: move a stream to another
// name, server or JetStream domain without losing a message or a consumer
// position.
package migrate

import (
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
)

// NewCmd returns `jetctl migrate`.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "move a stream to another name, server or domain, keeping messages and consumer positions",
		Long: `Move a stream without losing a message or a consumer position: to another
name (--as), another server (--to-server, --to-context) or another
JetStream domain (--to-domain). The target's server copies the stream as a
mirror, which keeps sequence numbers, timestamps and headers; a workqueue
stream, which a mirror would drain, and a stream on a server with no route
to the target's are copied by jetctl instead (the original times in a
header), and a counter stream, which the server does not mirror, is
sourced by a counter stream (every subject's total kept and verified).
jetctl compares the copy with the source message by message while the
source keeps taking writes. With --cutover it then moves the subjects and the
durable consumers (same config, same position) to the target and deletes
the source, with a write outage of a few round trips.

To change what the server cannot change in place (retention to or from
workqueue, storage) under the same name, declare it in a plan and run
jetctl apply --migrate. See docs/migrate.md.`,
		Example: `  jetctl migrate stream ORDERS --as ORDERS_V2 --dry-run
  jetctl migrate stream ORDERS --as ORDERS_V2 --cutover --yes
  jetctl migrate stream ORDERS --to-domain hub --cutover --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdStream(f), newCmdUnlock(f))
	return cmd
}
