// Package retry is jetctl's one way to try again: a Policy (how often, how
// long, which errors), Do for a request retried until it answers, Backoff
// for loops that decide themselves when to go on, and Sleep, a pause that
// ends with the context. Every wait here ends when the context does.
package retry

import (
	"context"
	"time"
)

// Policy says how to try again.
type Policy struct {
	// Attempts bounds the tries, the first included; 0 does not.
	Attempts int
	// Within bounds the whole: no pause starts that would end after it
	// (counted from the first try); 0 does not.
	Within time.Duration
	// Pause is the first pause; each next one doubles, up to MaxPause
	// (no bound when 0).
	Pause    time.Duration
	MaxPause time.Duration
	// Retryable says whether an error is worth another try; nil retries
	// every error.
	Retryable func(error) bool
	// AttemptTimeout, when set, bounds each try: fn's ctx ends after it.
	// A stream or consumer group electing a leader leaves a request
	// unanswered, so a try that waited for the caller's whole context (a
	// tail's --wait) would miss the leader elected a moment later.
	AttemptTimeout time.Duration
}

// Do runs fn until it returns nil or an error the policy does not retry,
// the attempts or the time run out, or ctx ends; it returns fn's last
// error (nil on success). Between tries it pauses as the policy says.
func Do(ctx context.Context, p Policy, fn func(ctx context.Context) error) error {
	// A value, not p.Backoff(): Do runs once per request of a sweep, and
	// most requests are answered at the first try.
	b := Backoff{p: p, pause: p.Pause}
	if p.Within > 0 {
		b.deadline = time.Now().Add(p.Within)
	}
	for attempt := 1; ; attempt++ {
		err := try(ctx, p.AttemptTimeout, fn)
		if err == nil || (p.Retryable != nil && !p.Retryable(err)) ||
			(p.Attempts > 0 && attempt >= p.Attempts) || ctx.Err() != nil || !b.Fits() {
			return err
		}
		if b.Wait(ctx) != nil {
			return err
		}
	}
}

// try runs fn once, its ctx bounded by timeout when it is set.
func try(ctx context.Context, timeout time.Duration, fn func(ctx context.Context) error) error {
	if timeout <= 0 {
		return fn(ctx)
	}
	attempt, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return fn(attempt)
}

// Backoff is a policy's growing pause, for a loop that decides itself
// whether to try again.
type Backoff struct {
	p        Policy
	pause    time.Duration
	deadline time.Time
}

// Backoff starts the policy's pauses; Within counts from now.
func (p Policy) Backoff() *Backoff {
	b := &Backoff{p: p, pause: p.Pause}
	if p.Within > 0 {
		b.deadline = time.Now().Add(p.Within)
	}
	return b
}

// Fits reports whether the next pause ends within the policy's time.
func (b *Backoff) Fits() bool {
	return b.deadline.IsZero() || !time.Now().Add(b.pause).After(b.deadline)
}

// Reset goes back to the first pause: the loop made progress.
func (b *Backoff) Reset() { b.pause = b.p.Pause }

// Next is the pause Wait would take.
func (b *Backoff) Next() time.Duration { return b.pause }

// Wait pauses, then doubles the next pause (up to MaxPause). It returns
// ctx's error if ctx ends first.
func (b *Backoff) Wait(ctx context.Context) error {
	if err := Sleep(ctx, b.pause); err != nil {
		return err
	}
	b.pause *= 2
	if b.p.MaxPause > 0 && b.pause > b.p.MaxPause {
		b.pause = b.p.MaxPause
	}
	return nil
}

// Sleep waits for d, or until ctx ends with ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
