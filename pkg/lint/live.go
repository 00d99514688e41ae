package lint

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/plan"
)

// FetchServer reads what --live needs from the server: every stream,
// consumer, KV bucket and object store it holds (as resources), and the
// Env of the live rules: its cluster and which consumers' dead letters a
// DLQ capture keeps. It only reads.
func FetchServer(ctx context.Context, js jetstream.JetStream, leaderWait time.Duration) (*plan.Desired, Env, error) {
	lim, err := plan.FetchServerLimits(ctx, js)
	if err != nil {
		return nil, Env{}, err
	}
	live, err := plan.FetchLive(ctx, js, func(string) bool { return true }, leaderWait)
	if err != nil {
		return nil, Env{}, err
	}
	var captures []*jetstream.StreamConfig
	for _, si := range live.Streams {
		if dlq.IsCapture(&si.Config) {
			captures = append(captures, &si.Config)
		}
	}
	size := lim.Servers
	if !lim.Clustered {
		size = 1
	}
	env := Env{
		Live:        true,
		ClusterSize: size,
		Clustered:   lim.Clustered,
		Cluster:     lim.Cluster,
		Captured: func(stream, consumer string) bool {
			for _, c := range captures {
				if dlq.Covers(c, stream, consumer) {
					return true
				}
			}
			return false
		},
	}
	server := live.Resources()
	env.Server = server
	return server, env, nil
}
