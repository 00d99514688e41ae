package migrate

// Live rounds, the mirror's and jetctl's copy alike: copy and compare
// while the source takes writes, until the tail left for a cutover is
// short.

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/logctx"
	"github.com/jetctl/jetctl/pkg/retry"
)

// liveRounds runs live rounds (each under liveRetry) while anotherRound
// says so: the mirror's and jetctl's copy alike.
func (m *mover) liveRounds(ctx context.Context, si *jetstream.StreamInfo, round func(context.Context, *jetstream.StreamInfo) error) error {
	for n := 0; ; n++ {
		if err := m.liveRetry(ctx, func(ctx context.Context) error { return round(ctx, si) }); err != nil {
			return err
		}
		var again bool
		var err error
		if si, again, err = m.anotherRound(ctx, si, n); err != nil || !again {
			return err
		}
	}
}

// liveRetry runs one live round, and again after a transient error (a
// reply lost while the connection came back after a server restart, no
// responders while JetStream starts) for up to a minute, warning once on
// stderr: no writer waits meanwhile, and the round starts from what was
// verified.
func (m *mover) liveRetry(ctx context.Context, round func(ctx context.Context) error) error {
	warned := false
	return retry.Do(ctx, retry.Policy{Within: mirrorErrorGrace, Pause: 250 * time.Millisecond, MaxPause: 2 * time.Second,
		Retryable: func(err error) bool {
			if !retry.Transient(err) || ctx.Err() != nil {
				return false
			}
			if !warned {
				warned = true
				logctx.From(ctx).Warn("copying: the server did not answer; trying again (a server restarting?)", "stream", m.srcName, "error", err)
			}
			return true
		}}, round)
}

// anotherRound says whether a live round should follow round: only before
// a cutover, while the source's unverified tail is long, for at most
// maxLiveRounds rounds. It returns the source's info it looked at.
func (m *mover) anotherRound(ctx context.Context, si *jetstream.StreamInfo, round int) (*jetstream.StreamInfo, bool, error) {
	logctx.From(ctx).Debug("live round", "stream", m.srcName, "round", round, "verified", m.verified, "source_last", si.State.LastSeq)
	if !m.cfg.Cutover || round >= maxLiveRounds {
		return si, false, nil
	}
	si, err := streamInfo(ctx, m.src.JS, m.srcName)
	if err != nil {
		return nil, false, err
	}
	return si, si.State.LastSeq > m.verified+shortTail, nil
}

// A cutover starts once the unverified tail is at most shortTail messages
// long, or after maxLiveRounds rounds of copying and comparing.
const (
	shortTail     = 2000
	maxLiveRounds = 5
)

// finishCopy ends a move without a cutover: the target stays a verified
// mirror, and a later run with a cutover continues from here.
// Its figures are the source's, as a cutover's are (see Summary.Bytes).
func (m *mover) finishCopy(ctx context.Context) (*Summary, error) {
	si, err := streamInfo(ctx, m.src.JS, m.srcName)
	if err != nil {
		return nil, err
	}
	m.sum.Messages, m.sum.Bytes = si.State.Msgs, si.State.Bytes
	m.sum.FirstSeq, m.sum.LastSeq = si.State.FirstSeq, si.State.LastSeq
	m.sum.Verified = true
	if m.seqs != nil {
		m.sum.SequencesKept = !m.seqs.renumbered()
	}
	if m.sum.Downstreams, err = m.findDownstreams(ctx); err != nil {
		return nil, err
	}
	m.explain(m.sum.Downstreams, false, m.finalConfig(si))
	m.sum.Elapsed = since(m.started)
	return m.sum, nil
}
