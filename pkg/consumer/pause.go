package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PauseState is a consumer's pause after a pause or resume.
type PauseState struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Paused   bool   `json:"paused"`
	// PauseUntil is when the server resumes it by itself; nil when not
	// paused.
	PauseUntil *time.Time `json:"pause_until"`
	// PauseRemainingSeconds is the time left, as the server counts it.
	PauseRemainingSeconds float64 `json:"pause_remaining_seconds"`
	// WasPaused is whether the consumer was paused before: with Paused,
	// it says what changed (a resume of a consumer that was not paused
	// changes nothing).
	WasPaused bool `json:"was_paused"`
	// DryRun: nothing was changed; the fields say what would be.
	DryRun bool `json:"dry_run"`
}

// Pause stops the server delivering from a consumer until a time (the
// server's pause API, 2.11+). Messages keep arriving in the stream; acks
// of messages already delivered still count.
func Pause(ctx context.Context, js jetstream.JetStream, stream, consumer string, until time.Time, dryRun bool) (*PauseState, error) {
	was, err := pausedNow(ctx, js, stream, consumer)
	if err != nil {
		return nil, err
	}
	if dryRun {
		t := until.UTC()
		return &PauseState{Stream: stream, Consumer: consumer, Paused: true, PauseUntil: &t,
			PauseRemainingSeconds: time.Until(until).Seconds(), DryRun: true, WasPaused: was}, nil
	}
	resp, err := js.PauseConsumer(ctx, stream, consumer, until.UTC())
	if err != nil {
		return nil, fmt.Errorf("stream %q: consumer %q: pause: %w", stream, consumer, err)
	}
	st := pauseState(stream, consumer, resp)
	st.WasPaused = was
	return st, nil
}

// Resume lets a paused consumer deliver again at once. Resuming one that
// is not paused changes nothing. With dryRun it only checks the consumer
// exists.
func Resume(ctx context.Context, js jetstream.JetStream, stream, consumer string, dryRun bool) (*PauseState, error) {
	was, err := pausedNow(ctx, js, stream, consumer)
	if err != nil {
		return nil, err
	}
	if dryRun {
		return &PauseState{Stream: stream, Consumer: consumer, DryRun: true, WasPaused: was}, nil
	}
	resp, err := js.ResumeConsumer(ctx, stream, consumer)
	if err != nil {
		return nil, fmt.Errorf("stream %q: consumer %q: resume: %w", stream, consumer, err)
	}
	st := pauseState(stream, consumer, resp)
	st.WasPaused = was
	return st, nil
}

// pausedNow reads whether the consumer is paused; the not-found errors
// get their resource names.
func pausedNow(ctx context.Context, js jetstream.JetStream, stream, consumer string) (bool, error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return false, fmt.Errorf("stream %q: %w", stream, err)
	}
	ci, err := readConsumer(ctx, st, consumer)
	if err != nil {
		return false, fmt.Errorf("stream %q: consumer %q: %w", stream, consumer, err)
	}
	return ci.Paused, nil
}

func pauseState(stream, consumer string, resp *jetstream.ConsumerPauseResponse) *PauseState {
	s := &PauseState{Stream: stream, Consumer: consumer, Paused: resp.Paused, PauseRemainingSeconds: resp.PauseRemaining.Seconds()}
	if resp.Paused {
		t := resp.PauseUntil.UTC()
		s.PauseUntil = &t
	}
	return s
}
