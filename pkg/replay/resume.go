package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// targetFilter is a subject filter that every target subject of to
// matches: ">" when to's template cannot be expressed as one.
func targetFilter(to string) string {
	f := TargetSubject(to, ">")
	switch n := strings.Count(f, ">"); {
	case n == 0, n == 1 && strings.HasSuffix(f, ">"):
		return f
	}
	return ">"
}

// Prepare readies a republish before its first copy. It records where the
// streams that can store the target subjects stand, so that a checkpoint
// written before any acknowledgement still tells a re-run where to look.
// Resuming from cp, it looks in the target for copies of messages after
// cp.LastSeq that an earlier run stored but did not checkpoint (killed, or
// the server restarted), so that Write counts them as duplicates instead
// of storing them again, even outside the duplicate window.
func (p *Publisher) Prepare(ctx context.Context, cp *Checkpoint) (err error) {
	if p.prepared {
		return nil
	}
	p.prepared = true
	// The window listens to the connection from now on: a restart of the
	// server before the first copy is still noticed and reported.
	if err := p.start(); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = p.Close(context.Background())
		}
	}()
	base, err := p.streamPositions(ctx)
	if err != nil && cp == nil {
		// Only a lookup after a reconnect needs them: it falls back to
		// sending again.
		base = nil
	} else if err != nil {
		return fmt.Errorf("resuming: %w", err)
	}
	p.base = base
	if cp == nil || len(cp.TargetSeqs) == 0 {
		return nil
	}
	after := cp.LastSeq
	found, err := p.findStored(ctx, cp.TargetSeqs, func(k copyKey) bool { return k.seq > after })
	if err != nil {
		return fmt.Errorf("resuming: looking for copies already in the target: %w", err)
	}
	p.found = found
	p.keepFrom = cp.TargetSeqs
	for k := range found {
		p.keepUntil = max(p.keepUntil, k.seq)
	}
	return nil
}

// streamPositions returns the last sequence of every stream that can
// capture a target subject.
func (p *Publisher) streamPositions(ctx context.Context) (map[string]uint64, error) {
	lctx, cancel := context.WithTimeout(ctx, 2*p.timeout)
	defer cancel()
	out := make(map[string]uint64)
	list := p.js.ListStreams(lctx, jetstream.WithStreamListSubject(targetFilter(p.cfg.To)))
	for info := range list.Info() {
		out[info.Config.Name] = info.State.LastSeq
	}
	if err := list.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return nil, err
	}
	return out, nil
}

// findStored reads each target stream after its position in from (headers
// only, up to its current end) and returns the copies made with this
// publisher's message id prefix that want accepts.
func (p *Publisher) findStored(ctx context.Context, from map[string]uint64, want func(copyKey) bool) (map[copyKey]bool, error) {
	found := make(map[copyKey]bool)
	filter := targetFilter(p.cfg.To)
	for name, after := range from {
		s, err := p.js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("stream %q: %w", name, err)
		}
		last := s.CachedInfo().State.LastSeq
		if last <= after {
			continue
		}
		cfg := jetstream.ConsumerConfig{
			HeadersOnly:   true,
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:   after + 1,
		}
		if filter != ">" {
			cfg.FilterSubjects = []string{filter}
		}
		read := streamread.OrderedRead{Label: fmt.Sprintf("stream %q", name), Consumer: cfg, EndSeq: last}
		err = streamread.ReadOrdered(ctx, p.js, s, read, func(sm *streamread.StoredMsg) error {
			if k, ok := p.parseCopy(sm); ok && want(k) {
				found[k] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}

// parseCopy reads which source message a stored copy was made of, from
// its Nats-Msg-Id: <prefix>:<stream>:<seq>:<target subject>.
func (p *Publisher) parseCopy(sm *streamread.StoredMsg) (copyKey, bool) {
	id := sm.Header.Get(jetstream.MsgIDHeader)
	rest, ok := strings.CutPrefix(id, p.cfg.MsgIDPrefix+":")
	if !ok {
		return copyKey{}, false
	}
	// Provenance, when the copy has it, names stream and sequence even if
	// the target stream transformed the subject.
	if stream, seqText := sm.Header.Get(envelope.SourceStream), sm.Header.Get(envelope.SourceSeq); stream != "" {
		if seq, err := strconv.ParseUint(seqText, 10, 64); err == nil && strings.HasPrefix(rest, stream+":"+seqText+":") {
			return copyKey{stream, seq}, true
		}
	}
	rest, ok = strings.CutSuffix(rest, ":"+sm.Subject)
	if !ok {
		return copyKey{}, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return copyKey{}, false
	}
	seq, err := strconv.ParseUint(rest[i+1:], 10, 64)
	if err != nil {
		return copyKey{}, false
	}
	return copyKey{rest[:i], seq}, true
}

// keyOf reads which source message an outgoing copy was made of.
func (p *Publisher) keyOf(m *nats.Msg) (copyKey, bool) {
	return p.parseCopy(&streamread.StoredMsg{Subject: m.Subject, Header: m.Header})
}

// checkpointState fills in what a checkpoint of a republish records
// besides the sequence: the message id prefix, and for each target stream
// a sequence after which every copy of a message after cp.LastSeq is
// stored, where a re-run looks for them.
func (p *Publisher) checkpointState(cp *Checkpoint) {
	cp.MsgIDPrefix = p.cfg.MsgIDPrefix
	p.mu.Lock()
	var from map[string]uint64
	switch {
	case p.firstFailed > 0:
		// The checkpoint stays before the first failure; copies after it
		// may be stored.
		from = p.failedFrom
	case len(p.pending) > 0:
		from = p.pending[0].from
	case p.w != nil:
		from = p.positionsLocked(true)
	default:
		from = p.base
	}
	out := make(map[string]uint64, len(from)+1)
	for k, v := range from {
		out[k] = v
	}
	// A stream the positions did not know of yet (created while the
	// replay ran) is looked through from its start.
	for k := range p.acked {
		if _, ok := out[k]; !ok {
			out[k] = 0
		}
	}
	p.mu.Unlock()
	// Copies an earlier run stored beyond its checkpoint are found from
	// that checkpoint's positions until this run's floor passes them.
	if cp.LastSeq < p.keepUntil {
		for k, v := range p.keepFrom {
			if cur, ok := out[k]; !ok || v < cur {
				out[k] = v
			}
		}
	}
	cp.TargetSeqs = out
}
