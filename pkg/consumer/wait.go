package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/retry"
)

// WaitConfig names a consumer and the one condition to wait for.
type WaitConfig struct {
	Stream   string
	Consumer string
	// CaughtUp: everything the stream held matching the consumer's filter
	// when the wait began has been acknowledged.
	CaughtUp bool
	// PendingBelow, when set: unprocessed plus ack pending below it.
	PendingBelow *uint64
	// AckFloor, when set: the ack floor's stream sequence at or above it.
	AckFloor *uint64
	// MinPoll and MaxPoll bound the polling interval, which starts at
	// MinPoll and doubles up to MaxPoll (defaults 250ms and 1s).
	MinPoll, MaxPoll time.Duration
	// Thresholds of the health model for the state reported, and those
	// of them given as flags (ListConfig.Fixed).
	Thresholds Thresholds
	Fixed      map[string]bool
	// Progress, if set, hears of each state read.
	Progress func(WaitProgress)
}

// WaitProgress is what a wait knows after each poll.
type WaitProgress struct {
	// State is the consumer's state as last read (nil before the first
	// answer).
	State *State
	// Target is the stream sequence --caught-up waits for the ack floor to
	// reach (0 for other conditions).
	Target uint64
	// Unanswered is set when this poll got no answer that counts (a
	// server restarting, a leader election: retry.Transient); the wait
	// polls again, and State is the last one read.
	Unanswered error
}

// WaitResult is the state that met the condition.
type WaitResult struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	// Condition is the condition met, e.g. "caught-up", "pending-below 10".
	Condition string `json:"condition"`
	// TargetStreamSeq is the last stream sequence matching the filter
	// when --caught-up began (0 for other conditions).
	TargetStreamSeq uint64 `json:"target_stream_seq"`
	// Polls counts the consumer info requests made.
	Polls  int    `json:"polls"`
	Waited string `json:"waited"`
	State  *State `json:"state"`
}

// ErrConsumerGone: the consumer was deleted while waiting. It wraps
// jetstream.ErrConsumerNotFound (exit 3).
var ErrConsumerGone = fmt.Errorf("%w (deleted while waiting)", jetstream.ErrConsumerNotFound)

// Condition describes cfg's condition, or an error (ErrInvalid) unless
// exactly one is set.
func (cfg WaitConfig) Condition() (string, error) {
	var set []string
	if cfg.CaughtUp {
		set = append(set, "caught-up")
	}
	if cfg.PendingBelow != nil {
		set = append(set, fmt.Sprintf("pending-below %d", *cfg.PendingBelow))
	}
	if cfg.AckFloor != nil {
		set = append(set, fmt.Sprintf("ack-floor %d", *cfg.AckFloor))
	}
	switch len(set) {
	case 1:
		return set[0], nil
	case 0:
		return "", fmt.Errorf("%w: give one condition: --caught-up, --pending-below N or --ack-floor SEQ", ErrInvalid)
	}
	return "", fmt.Errorf("%w: give one condition, not %d (--caught-up, --pending-below, --ack-floor)", ErrInvalid, len(set))
}

// Wait polls the consumer's info until the condition holds, and returns
// the state that met it. It reads only: nothing is consumed or changed.
// It ends with ctx (the caller's deadline is --wait), with an error
// wrapping jetstream.ErrStreamNotFound or ErrConsumerNotFound when either
// does not exist at the start, and ErrConsumerGone when the consumer is
// deleted while waiting.
func Wait(ctx context.Context, js jetstream.JetStream, cfg WaitConfig) (*WaitResult, error) {
	condition, err := cfg.Condition()
	if err != nil {
		return nil, err
	}
	if cfg.MinPoll <= 0 {
		cfg.MinPoll = 250 * time.Millisecond
	}
	if cfg.MaxPoll < cfg.MinPoll {
		cfg.MaxPoll = max(time.Second, cfg.MinPoll)
	}
	start := time.Now()
	res := &WaitResult{Stream: cfg.Stream, Consumer: cfg.Consumer, Condition: condition}
	var last *State
	// Each request waits at most the request timeout, and one the server
	// does not answer for the moment is made again after the next pause:
	// a wait spans restarts and elections, and a request lost with the
	// connection must not wait for the end of --wait.
	ask := func(what string, request func(ctx context.Context) error) error {
		err := retry.Do(ctx, retry.Policy{Pause: cfg.MinPoll, MaxPause: cfg.MaxPoll, Retryable: retry.Transient, AttemptTimeout: requestTimeout(js)},
			func(ctx context.Context) error {
				err := request(ctx)
				if retry.Transient(err) {
					logctx.From(ctx).Debug("consumer wait: not answered, asking again", "stream", cfg.Stream, "consumer", cfg.Consumer, "request", what, "error", err)
					if cfg.Progress != nil {
						cfg.Progress(WaitProgress{State: last, Target: res.TargetStreamSeq, Unanswered: err})
					}
				}
				return err
			})
		if err != nil && ctx.Err() != nil {
			// --wait ran out (or the command was stopped) while the
			// server did not answer.
			return fmt.Errorf("%w (the last request: %v)", ctx.Err(), err)
		}
		return err
	}
	var stream jetstream.Stream
	if err := ask("stream info", func(ctx context.Context) (err error) {
		stream, err = js.Stream(ctx, cfg.Stream)
		return err
	}); err != nil {
		return nil, fmt.Errorf("stream %q: %w", cfg.Stream, err)
	}
	var info *jetstream.ConsumerInfo
	poll := func() error {
		return ask("consumer info", func(ctx context.Context) (err error) {
			res.Polls++
			info, err = consumerInfo(ctx, stream, cfg)
			return err
		})
	}
	if err := poll(); err != nil {
		return nil, err
	}
	if cfg.CaughtUp {
		if err := ask("last message", func(ctx context.Context) (err error) {
			res.TargetStreamSeq, err = lastMatching(ctx, js, stream.CachedInfo(), FilterSubjects(info.Config))
			return err
		}); err != nil {
			return nil, err
		}
	}
	pause := cfg.MinPoll
	for {
		s := FromInfo(info)
		last = s
		logctx.From(ctx).Debug("consumer wait poll", "stream", cfg.Stream, "consumer", cfg.Consumer, "condition", condition,
			"ack_floor", s.AckFloorStreamSeq, "target", res.TargetStreamSeq, "unprocessed", s.Unprocessed, "ack_pending", s.AckPending)
		if cfg.Progress != nil {
			cfg.Progress(WaitProgress{State: s, Target: res.TargetStreamSeq})
		}
		if met(cfg, s, res.TargetStreamSeq) {
			// The state that met the condition, as consumer ls shows it:
			// lag, dead letters, findings and health.
			if err := ask("consumer state", func(ctx context.Context) (err error) {
				res.State, err = assessOne(ctx, js, stream, info, cfg.Thresholds, cfg.Fixed)
				return err
			}); err != nil {
				return nil, err
			}
			res.Waited = ShortDuration(time.Since(start))
			return res, nil
		}
		if err := retry.Sleep(ctx, pause); err != nil {
			return nil, err
		}
		pause = min(pause*2, cfg.MaxPoll)
		err := poll()
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, cfg.Consumer, ErrConsumerGone)
		}
		if err != nil {
			return nil, err
		}
	}
}

// requestTimeout is how long one request of a wait waits for its answer:
// the JetStream context's timeout (--timeout).
func requestTimeout(js jetstream.JetStream) time.Duration {
	if t := js.Options().DefaultTimeout; t > 0 {
		return t
	}
	return 5 * time.Second
}

// met reports whether s satisfies cfg's condition.
func met(cfg WaitConfig, s *State, target uint64) bool {
	switch {
	case cfg.CaughtUp:
		return s.AckFloorStreamSeq >= target || (s.Unprocessed == 0 && s.AckPending == 0)
	case cfg.PendingBelow != nil:
		return s.Unprocessed+uint64(s.AckPending) < *cfg.PendingBelow
	case cfg.AckFloor != nil:
		return s.AckFloorStreamSeq >= *cfg.AckFloor
	}
	return false
}

// consumerInfo reads the consumer, pull or push (readConsumer).
func consumerInfo(ctx context.Context, stream jetstream.Stream, cfg WaitConfig) (*jetstream.ConsumerInfo, error) {
	info, err := readConsumer(ctx, stream, cfg.Consumer)
	if err != nil {
		return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, cfg.Consumer, err)
	}
	return info, nil
}

// lastMatching is the last stream sequence whose subject matches one of
// filters (the stream's last sequence when there are none), 0 when no
// message matches.
func lastMatching(ctx context.Context, js jetstream.JetStream, si *jetstream.StreamInfo, filters []string) (uint64, error) {
	if len(filters) == 0 {
		return si.State.LastSeq, nil
	}
	client := jsapi.New(js)
	var last uint64
	for _, f := range filters {
		m, err := client.MsgGet(ctx, si.Config.Name, jsapi.MsgGetRequest{LastFor: f})
		if errors.Is(err, jsapi.ErrNoMessage) {
			continue
		}
		if err != nil {
			return 0, err
		}
		last = max(last, m.Seq)
	}
	return last, nil
}
