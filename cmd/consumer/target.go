package consumer

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// streamConsumerArgs is the STREAM CONSUMER argument pair that explain,
// rewind, pause and resume take, checked before connecting.
func streamConsumerArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.ExactArgs(2)(cmd, args); err != nil {
		return err
	}
	if err := jsapi.ValidateStreamName(args[0]); err != nil {
		return exitcode.UsageErrorf("%v", err)
	}
	// Consumer names follow the stream name rules.
	if err := jsapi.ValidateStreamName(args[1]); err != nil {
		return exitcode.UsageErrorf("%s", strings.Replace(err.Error(), "stream name", "consumer name", 1))
	}
	return nil
}

// completeStreamConsumer completes the stream, then its consumers.
func completeStreamConsumer(f *factory.Factory) cobra.CompletionFunc {
	streams := f.CompleteStreams()
	consumers := f.CompleteConsumersOf(func(_ *cobra.Command, args []string) string { return args[0] })
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		switch len(args) {
		case 0:
			return streams(cmd, args, toComplete)
		case 1:
			return consumers(cmd, args, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}
