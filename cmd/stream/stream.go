// Package stream implements `jetctl stream` and its verbs.
package stream

import (
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
)

// NewCmd returns `jetctl stream`.
func NewCmd(f *factory.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "stream",
		Short:   "work with a stream's messages",
		Long:    `Commands on a stream's messages. To read a fixed range, see "jetctl replay".`,
		Example: `  jetctl stream tail ORDERS --since 5m`,
	}
	cmd.AddCommand(newCmdTail(f))
	return cmd
}
