package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func apiError(code int, errCode jetstream.ErrorCode, desc string) *jetstream.APIError {
	return &jetstream.APIError{Code: code, ErrorCode: errCode, Description: desc}
}

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		// No reply in time.
		{"nats timeout", nats.ErrTimeout, true},
		{"deadline", context.DeadlineExceeded, true},
		{"deadline wrapped", fmt.Errorf("stream %q: %w", "ORDERS", context.DeadlineExceeded), true},
		{"canceled", context.Canceled, false},
		{"canceled wrapped", fmt.Errorf("reading: %w", context.Canceled), false},
		// No responders.
		{"no responders", nats.ErrNoResponders, true},
		{"no responders wrapped twice", fmt.Errorf("a: %w", fmt.Errorf("b: %w", nats.ErrNoResponders)), true},
		{"no stream response", jetstream.ErrNoStreamResponse, true},
		// The connection.
		{"disconnected", nats.ErrDisconnected, true},
		{"reconnecting", nats.ErrConnectionReconnecting, true},
		{"reconnect buffer full", nats.ErrReconnectBufExceeded, true},
		{"closed", nats.ErrConnectionClosed, false},
		{"jetstream closed", jetstream.ErrConnectionClosed, false},
		{"no servers", nats.ErrNoServers, false},
		// Pulls.
		{"server shutdown", jetstream.ErrServerShutdown, true},
		{"leadership change", jetstream.ErrConsumerLeadershipChanged, true},
		{"no heartbeat", jetstream.ErrNoHeartbeat, true},
		{"consumer deleted", jetstream.ErrConsumerDeleted, false},
		{"no messages", jetstream.ErrNoMessages, false},
		// API errors by error code.
		{"10008 cluster not available", apiError(503, 10008, "JetStream system temporarily unavailable"), true},
		{"10008 wrapped", fmt.Errorf("stream %q: %w", "ORDERS", apiError(503, 10008, "JetStream system temporarily unavailable")), true},
		{"10009 not leader", apiError(500, 10009, "JetStream cluster can not handle request"), true},
		{"10118 stream offline", apiError(500, 10118, "stream is offline"), true},
		{"10119 consumer offline", apiError(500, 10119, "consumer is offline"), true},
		{"10163 last seq per subject not ready", apiError(503, 10163, "expected last sequence per subject temporarily unavailable"), true},
		{"10158 duplicate in process", apiError(409, 10158, "duplicate message id is in process"), true},
		{"10194 offline for a reason", apiError(500, 10194, "stream is offline: unsupported"), false},
		{"10052 invalid config", apiError(500, 10052, "stream configuration invalid"), false},
		{"10012 consumer create", jetstream.ErrConsumerCreate, false},
		{"10057 already deleted", apiError(500, 10057, "no message found"), false},
		{"10063 sequence mismatch", apiError(503, 10063, "expected stream sequence does not match"), false},
		{"10023 insufficient resources", apiError(503, 10023, "insufficient resources"), false},
		{"10076 not enabled", jetstream.ErrJetStreamNotEnabled, false},
		{"10039 not enabled for account", jetstream.ErrJetStreamNotEnabledForAccount, false},
		{"10059 stream not found", jetstream.ErrStreamNotFound, false},
		{"10059 wrapped", fmt.Errorf("stream %q: %w", "ORDERS", jetstream.ErrStreamNotFound), false},
		{"10071 wrong last sequence", apiError(400, 10071, "wrong last sequence: 4"), false},
		{"permission", nats.ErrPermissionViolation, false},
		{"max payload", nats.ErrMaxPayload, false},
		{"other", errors.New("refused"), false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("%s (%v): Transient = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// Do with Transient retries what the server did not answer and returns an
// answer at once.
func TestDoTransient(t *testing.T) {
	p := Policy{Attempts: 5, Retryable: Transient}
	calls := 0
	err := Do(context.Background(), p, func(context.Context) error {
		if calls++; calls < 3 {
			return apiError(503, 10008, "JetStream system temporarily unavailable")
		}
		return jetstream.ErrStreamNotFound
	})
	if !errors.Is(err, jetstream.ErrStreamNotFound) || calls != 3 {
		t.Errorf("%v after %d calls; want stream not found after 3", err, calls)
	}
}

// A caller's context that ends gives context.DeadlineExceeded too, which
// Transient counts; Do stops all the same.
func TestDoStopsWhenCallersDeadlineEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := Do(ctx, Policy{Attempts: 5, Retryable: Transient}, func(ctx context.Context) error {
		calls++
		return context.DeadlineExceeded
	})
	if !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
		t.Errorf("%v after %d calls; want the deadline after 1", err, calls)
	}
}
