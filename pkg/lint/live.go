package lint

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/lease"
	"github.com/jetctl/jetctl/pkg/plan"
	"github.com/jetctl/jetctl/pkg/recorder"
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
	live.Limits = lim
	env := ServerEnv(live)
	server := env.Server
	own := &plan.Desired{}
	internal := map[string]bool{}
	for _, r := range server.Resources {
		if internal[r.Stream] || Internal(r) {
			internal[r.StreamName()] = true
			env.Internal++
			continue
		}
		own.Resources = append(own.Resources, r)
	}
	return own, env, nil
}

// ServerEnv is the Env of the live rules from what was read of the
// server: its limits (live.Limits: its cluster) and its streams (the DLQ
// captures among them), for lint --live and for plan, whose Make has read
// both already.
func ServerEnv(live *plan.Live) Env {
	lim := live.Limits
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
	return Env{
		Live:        true,
		ClusterSize: size,
		Clustered:   lim.Clustered,
		Cluster:     lim.Cluster,
		APILevel:    lim.APILevel,
		Captured: func(stream, consumer string) bool {
			for _, c := range captures {
				if dlq.Covers(c, stream, consumer) {
					return true
				}
			}
			return false
		},
		Server: live.Resources(),
	}
}

// Internal reports whether a live resource is jetctl's own bookkeeping:
// a DLQ capture or dead-letter stream (dlq setup), the events recorder,
// the lease bucket. Their settings are deliberate (a DLQ keeps dead
// letters until they are redriven or purged, the sweep retries an
// advisory until it is stored), so --live leaves them and their consumers
// out; dlq and events commands check them.
func Internal(r *plan.Resource) bool {
	switch r.Kind {
	case plan.KindStream:
		return r.StreamConfig.Metadata[dlq.MetaRole] != "" || r.Name == recorder.Stream
	case plan.KindKV:
		return r.Name == lease.Bucket
	}
	return false
}
