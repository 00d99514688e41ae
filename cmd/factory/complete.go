package factory

import (
	"context"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
)

// completionTimeout keeps shell completion snappy when the server is slow
// or absent: completion then simply offers nothing.
const completionTimeout = 1500 * time.Millisecond

// CompleteStreams completes stream names (KV and object store streams
// excluded) from the server.
func (f *Factory) CompleteStreams() cobra.CompletionFunc {
	return f.completeNames(func(ctx context.Context, js jetstream.JetStream, _ []string) []string {
		return streamNames(ctx, js, func(name string) (string, bool) {
			return name, !strings.HasPrefix(name, "KV_") && !strings.HasPrefix(name, "OBJ_")
		})
	})
}

// CompleteBuckets completes KV bucket names from the server.
func (f *Factory) CompleteBuckets() cobra.CompletionFunc {
	return f.completeNames(func(ctx context.Context, js jetstream.JetStream, _ []string) []string {
		return streamNames(ctx, js, func(name string) (string, bool) {
			return strings.TrimPrefix(name, "KV_"), strings.HasPrefix(name, "KV_")
		})
	})
}

// CompleteConsumersOf completes consumer names of the stream that
// streamName returns (from an argument or a flag).
func (f *Factory) CompleteConsumersOf(streamName func(cmd *cobra.Command, args []string) string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		stream := streamName(cmd, args)
		if stream == "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f.completeNames(func(ctx context.Context, js jetstream.JetStream, _ []string) []string {
			s, err := js.Stream(ctx, stream)
			if err != nil {
				return nil
			}
			var names []string
			l := s.ConsumerNames(ctx)
			for n := range l.Name() {
				names = append(names, n)
			}
			return names
		})(cmd, args, toComplete)
	}
}

func streamNames(ctx context.Context, js jetstream.JetStream, keep func(string) (string, bool)) []string {
	var names []string
	l := js.StreamNames(ctx)
	for n := range l.Name() {
		if name, ok := keep(n); ok {
			names = append(names, name)
		}
	}
	return names
}

// CompleteNames completes the names list returns from the server (given
// the arguments so far), as the stream and consumer completions do.
func (f *Factory) CompleteNames(list func(ctx context.Context, js jetstream.JetStream, args []string) []string) cobra.CompletionFunc {
	return f.completeNames(list)
}

func (f *Factory) completeNames(list func(ctx context.Context, js jetstream.JetStream, args []string) []string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if f.Conn.Timeout <= 0 || f.Conn.Timeout > completionTimeout {
			f.Conn.Timeout = completionTimeout
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
		defer cancel()
		defer f.Close()
		js, err := f.JetStream(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, n := range list(ctx, js, args) {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
