package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/lease"
)

// ReplaceOptions tune Replace.
type ReplaceOptions struct {
	DryRun   bool
	Progress func(Progress)
	// AtStep is Config.AtStep, with the move's number: "1:held".
	AtStep func(step string)
}

// Estimate is what replacing a stream would move, for a plan.
type Estimate struct {
	Messages  uint64 `json:"messages"`
	Bytes     uint64 `json:"bytes"`
	Consumers int    `json:"consumers"`
	// CopyTime is Messages at the copy rate measured on the server (two
	// copies for a replacement under the same name).
	CopyTime time.Duration `json:"copy_time_ns"`
	// Outage is the expected write outage: the cutover's round trips at
	// the measured round-trip time, plus the tail written meanwhile.
	Outage time.Duration `json:"outage_ns"`
}

// Migratable says whether a replacement of old by new can keep the data,
// and if not, why.
func Migratable(old, new jetstream.StreamConfig) error {
	if old.Name != new.Name {
		return fmt.Errorf("the name changes")
	}
	if new.Mirror != nil || old.Mirror != nil {
		return fmt.Errorf("a mirror's data belongs to its origin")
	}
	if len(old.Sources) > 0 || len(new.Sources) > 0 {
		return errors.New("sourced streams are not migrated yet")
	}
	if old.AllowMsgCounter != new.AllowMsgCounter {
		// A counter's messages are its increments and totals; a plain
		// stream's cannot become them, nor the other way round (the
		// counter way sources: TestFactCounterSourced).
		return errors.New("allow_msg_counter cannot change, not even by a migration")
	}
	return nil
}

// noDownstreams refuses a replacement of a stream that other streams
// source or mirror, before anything changes: the replacement deletes it
// and makes it again, and a stream sourcing one made again under its name
// sources it again from its start, storing every message twice
// (TestFactSourceOfRecreatedStreamStartsOver).
func noDownstreams(ctx context.Context, ep Endpoint, name, tmp string) error {
	ds, err := (&mover{src: ep, srcName: name, dstName: tmp}).findDownstreams(ctx)
	if err != nil || len(ds) == 0 {
		return err
	}
	var names []string
	for _, d := range ds {
		names = append(names, d.where())
	}
	return fmt.Errorf("%w: stream %q is read by %s (sourced or mirrored): a migration under its own name deletes it and makes it again, and a stream sourcing it would then copy every message again from its start; remove %q from their sources (or mirrors) first, and give it back after the migration, from the sequence after the last they sourced; nothing was changed",
		ErrInvalid, name, strings.Join(names, ", "), name)
}

// TempName is the stream a replacement of name passes through.
func TempName(name string) string { return name + "_JETCTL_MIGRATE" }

// Replace replaces the stream cfg.Name by a stream of the same name with
// cfg, keeping every message, sequence, timestamp and consumer position:
// two moves through TempName(cfg.Name), each with a short write outage.
// Between the two the stream's subjects are served by the temporary
// stream and its consumers wait, paused, for the second move. Killed and
// run again, it continues from the state kept on the streams.
func Replace(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, opts ReplaceOptions) (_ *Summary, err error) {
	name, tmp := cfg.Name, TempName(cfg.Name)
	if err := jsapi.ValidateStreamName(name); err != nil {
		return nil, err
	}
	ep := Endpoint{JS: js}
	xst, xok, err := stateOf(ctx, js, name)
	if err != nil {
		return nil, err
	}
	tst, tok, err := stateOf(ctx, js, tmp)
	if err != nil {
		return nil, err
	}
	secondOnly := (xok && xst != nil && xst.Source == tmp) || (!xok && tok && tst != nil && tst.Phase == phaseHeld)
	if xok && !tok {
		if err := noDownstreams(ctx, ep, name, tmp); err != nil {
			return nil, err
		}
	}
	if !opts.DryRun {
		var release func()
		if ctx, release, err = takeLease(ctx, js, name); err != nil {
			return nil, err
		}
		defer release()
		defer func() { err = lease.Explain(ctx, err) }()
	}
	h := hop{lockHeld: true}
	var first *Summary
	if !secondOnly {
		tcfg := cfg
		tcfg.Name = tmp
		tcfg.AllowDirect = true // read by the second move
		if cfg.Retention == jetstream.WorkQueuePolicy {
			// The temporary stream keeps limits retention, so that the
			// second move can copy it with a mirror (which keeps the
			// timestamps) without draining it; a workqueue source would
			// be copied by jetctl. The consumers must fit a workqueue
			// before the first move starts.
			tcfg.Retention = jetstream.LimitsPolicy
			if cs, err := durables(ctx, js, name); err == nil {
				if err := workqueueConsumers(cs); err != nil {
					return nil, fmt.Errorf("%w: stream %q: %v; nothing was changed", ErrInvalid, name, err)
				}
			}
		}
		first, err = stream(ctx, ep, ep, Config{Stream: name, Target: tmp, TargetConfig: &tcfg, Cutover: true, DryRun: opts.DryRun, Progress: opts.Progress, AtStep: numbered(opts.AtStep, 1)}, hop{lockHeld: true, hold: true})
		if err != nil {
			return nil, err
		}
		if opts.DryRun {
			first.Target = name
			// The stream keeps its name, and its DLQ stays as it is: the
			// capture names the stream, and the consumers, paused between
			// the two moves, send no advisory under the temporary name.
			first.DLQ, _ = dlq.PlanMove(ctx, js, name, name)
			return first, nil
		}
	}
	second, err := stream(ctx, ep, ep, Config{Stream: tmp, Target: name, TargetConfig: &cfg, Cutover: true, DryRun: opts.DryRun, Progress: opts.Progress, AtStep: numbered(opts.AtStep, 2)}, h)
	if err != nil {
		return nil, err
	}
	second.Stream = name
	// Described, not changed: a failure to look is no failed replacement.
	second.DLQ, _ = dlq.PlanMove(ctx, js, name, name)
	if first != nil {
		second.Consumers = first.Consumers
		second.WriteOutage += first.WriteOutage
		second.Elapsed += first.Elapsed
		second.Verified = second.Verified && first.Verified
		second.Resumed = second.Resumed || first.Resumed
	} else {
		second.Resumed = true
	}
	return second, nil
}

func numbered(f func(string), n int) func(string) {
	if f == nil {
		return nil
	}
	return func(step string) { f(fmt.Sprintf("%d:%s", n, step)) }
}

// stateOf returns a stream's move state, and whether the stream exists.
func stateOf(ctx context.Context, js jetstream.JetStream, name string) (*state, bool, error) {
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("stream %q: %w", name, err)
	}
	st, err := readState(s.CachedInfo())
	return st, true, err
}

// copyRate is the messages per second one move copies and verifies on
// one server: bench/migrate.sh measured 43k-95k msgs/s (1,000,000
// messages of 128 B) on the 2-core machines jetctl is developed on,
// depending on their load; plans use it to say how long a copy takes.
const copyRate = 60_000

// cutoverRounds is the requests a cutover makes after the subjects are
// taken off the source, without those per consumer (3 each).
const cutoverRounds = 16

// The rest of a cutover's time, fitted to bench/migrate.sh and the
// migrate testscripts on 2 cores: about 10 ms of polls and updates, and
// the final digest and comparison at about 75 ns a message (86-108 ms
// for 1,000,000 messages).
const (
	cutoverFixed  = 10 * time.Millisecond
	cutoverPerMsg = 75 * time.Nanosecond
)

// EstimateReplace measures what replacing the stream name would move: its
// messages, bytes and durable consumers, how long the two copies take at
// the measured copy rate, and the write outage from the cutovers' round
// trips at the round-trip time measured now, plus the cutover's own work.
func EstimateReplace(ctx context.Context, js jetstream.JetStream, name string) (*Estimate, error) {
	si, err := streamInfo(ctx, js, name)
	if err != nil {
		return nil, err
	}
	cs, err := durables(ctx, js, name)
	if err != nil {
		return nil, err
	}
	rtt := time.Duration(1<<63 - 1)
	for range 3 {
		t := time.Now()
		if _, err := js.AccountInfo(ctx); err != nil {
			return nil, err
		}
		rtt = min(rtt, time.Since(t))
	}
	e := &Estimate{Messages: si.State.Msgs, Bytes: si.State.Bytes, Consumers: len(cs)}
	e.CopyTime = time.Duration(2 * float64(si.State.Msgs) / copyRate * float64(time.Second))
	e.Outage = 2 * (time.Duration(cutoverRounds+3*len(cs))*rtt + cutoverFixed + time.Duration(si.State.Msgs)*cutoverPerMsg)
	return e, nil
}
