package migrate

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// msgHash is one stored message's hash: its subject, headers (sorted),
// payload and, when kept, its timestamp.
type msgHash struct {
	Seq  uint64
	Hash uint64
}

// hashOpts say what a message's hash takes in.
type hashOpts struct {
	// withTime: its timestamp (a mirror keeps it; jetctl's copy and the
	// counter way cannot).
	withTime bool
	// noBatch: not its Nats-Batch-* headers, which the server drops from
	// what it mirrors or sources (TestFactMirrorDropsBatchHeaders).
	noBatch bool
}

// The hashes of the three ways: the mirror's, jetctl's copy's (whose
// headers are mapped back: copyHash) and the counter way's.
var (
	mirrorHash  = hashOpts{withTime: true, noBatch: true}
	copiedHash  = hashOpts{}
	sourcedHash = hashOpts{noBatch: true}
)

// hashMsg hashes m without its Nats-Expected-* headers, which neither a
// mirror (TestFactMirrorDropsExpectedHeaders) nor jetctl's copy keeps, and
// as o says.
func hashMsg(m *envelope.Message, o hashOpts) uint64 {
	d := xxhash.New()
	var n [8]byte
	put := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		_, _ = d.Write(n[:])
		_, _ = d.Write(b)
	}
	put([]byte(m.Subject))
	keys := make([]string, 0, len(m.Header))
	for k := range m.Header {
		if isExpectation(k) || o.noBatch && isBatch(k) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		put([]byte(k))
		for _, v := range m.Header[k] {
			put([]byte(v))
		}
	}
	put(m.Data)
	if o.withTime {
		binary.BigEndian.PutUint64(n[:], uint64(m.Time.UnixNano()))
		_, _ = d.Write(n[:])
	}
	return d.Sum64()
}

// readHashes hashes the messages of stream from..to (inclusive).
func readHashes(ctx context.Context, js jetstream.JetStream, stream string, from, to uint64, o hashOpts) ([]msgHash, error) {
	var out []msgHash
	err := readHashesTo(ctx, js, stream, from, to, func(m *envelope.Message) uint64 { return hashMsg(m, o) }, func(h msgHash) error {
		out = append(out, h)
		return nil
	})
	return out, err
}

// readHashesTo reads stream from..to (inclusive) and passes each message's
// hash, by hash, to emit, in sequence order.
func readHashesTo(ctx context.Context, js jetstream.JetStream, stream string, from, to uint64, hash func(*envelope.Message) uint64, emit func(msgHash) error) error {
	if to < from || to == 0 {
		return nil
	}
	r, err := streamread.Resolve(ctx, js, streamread.Config{Stream: stream, FromSeq: from, ToSeq: to})
	if err != nil {
		return fmt.Errorf("stream %q: %w", stream, err)
	}
	err = streamread.Read(ctx, js, r, func(m *envelope.Message) error {
		return emit(msgHash{Seq: m.Seq, Hash: hash(m)})
	})
	if err != nil {
		return fmt.Errorf("stream %q: reading seq %d..%d: %w", stream, from, to, err)
	}
	return nil
}

// hashBuffer is how many hashes one side's reader may be ahead of the
// comparison (16 B each), passed on hashBatch at a time: the source is read
// at once while the target is read behind its copy.
const (
	hashBuffer = 1 << 16
	hashBatch  = 512
)

// hashStream is one side's hashes in sequence order, as the goroutine
// reading them passes them on, for a comparison that keeps none of them.
type hashStream struct {
	ch   chan []msgHash
	stop context.CancelFunc
	// err and end are set before ch is closed: why the reading ended,
	// and the last sequence it covered.
	err error
	end uint64

	batch []msgHash
	done  bool
}

// emitter passes hashes on, a batch at a time (flush passes on the batch
// begun).
type emitter struct {
	ctx   context.Context
	ch    chan<- []msgHash
	batch []msgHash
}

func (e *emitter) emit(h msgHash) error {
	if e.batch == nil {
		e.batch = make([]msgHash, 0, hashBatch)
	}
	if e.batch = append(e.batch, h); len(e.batch) == hashBatch {
		return e.flush()
	}
	return nil
}

func (e *emitter) flush() error {
	if len(e.batch) == 0 {
		return nil
	}
	select {
	case e.ch <- e.batch:
		e.batch = nil
		return nil
	case <-e.ctx.Done():
		return e.ctx.Err()
	}
}

// produce runs read in a goroutine of its own, passing what it emits on
// as a hashStream; read returns the last sequence it covered.
func produce(ctx context.Context, read func(ctx context.Context, e *emitter) (uint64, error)) *hashStream {
	ctx, cancel := context.WithCancel(ctx)
	s := &hashStream{ch: make(chan []msgHash, hashBuffer/hashBatch), stop: cancel}
	go func() {
		defer close(s.ch)
		e := &emitter{ctx: ctx, ch: s.ch}
		s.end, s.err = read(ctx, e)
		if s.err == nil {
			s.err = e.flush()
		}
	}()
	return s
}

// streamHashes reads from..to of a stream, hashing with hash.
func streamHashes(ctx context.Context, js jetstream.JetStream, stream string, from, to uint64, hash func(*envelope.Message) uint64) *hashStream {
	return produce(ctx, func(ctx context.Context, e *emitter) (uint64, error) {
		return to, readHashesTo(ctx, js, stream, from, to, hash, e.emit)
	})
}

// peek waits for the next hash; false once the stream has ended (err then
// says whether it failed).
func (s *hashStream) peek() (msgHash, bool) {
	for len(s.batch) == 0 && !s.done {
		b, ok := <-s.ch
		s.batch, s.done = b, !ok
	}
	if len(s.batch) == 0 {
		return msgHash{}, false
	}
	return s.batch[0], true
}

func (s *hashStream) pop() { s.batch = s.batch[1:] }

// close stops the reading and waits for it to end.
func (s *hashStream) close() {
	s.stop()
	for range s.ch {
	}
	s.done, s.batch = true, nil
}

// compareStreams compares the source's hashes with the target's as they
// come, both in sequence order, and adds each message found the same to
// the tally: a message in both must be the same, one in the source only
// was lost. One in the target only is a difference when exact (two frozen
// ranges); while the source is live it was deleted from the source since
// it was copied (the cutover deletes it from the target), and what the
// source holds past the target's end (dst.end, once the target's stream
// ended) is left for a later round. It returns once both streams have
// ended, or once the source's has and the target's end is past it. Direct gets may be answered by a
// replica that is behind (during a leader change, say), so a difference
// is read again from both leaders, coherently, before it counts.
func (m *mover) compareStreams(ctx context.Context, src, dst *hashStream, exact bool) error {
	rechecks := 0
	for {
		s, sok := src.peek()
		if !sok && src.err != nil {
			return src.err
		}
		if !sok && !exact {
			// The rest of the target's read is only in the target: let
			// it end, so that its end is known.
			for _, ok := dst.peek(); ok; _, ok = dst.peek() {
				dst.pop()
			}
			return dst.err
		}
		d, dok := dst.peek()
		if !dok && dst.err != nil {
			return dst.err
		}
		var seq uint64
		switch {
		case !sok && !dok:
			return nil
		case sok && dok && s.Seq == d.Seq:
			src.pop()
			dst.pop()
			if s.Hash == d.Hash {
				m.tally.add(s)
				continue
			}
			seq = s.Seq
		case sok && (dok && s.Seq < d.Seq || !dok && (exact || s.Seq <= dst.end)):
			src.pop()
			seq = s.Seq
		case sok && !dok:
			// Past the end of the target's read: a later round's.
			return nil
		default:
			dst.pop()
			if !exact {
				continue
			}
			seq = d.Seq
		}
		if rechecks++; rechecks > maxRechecks {
			return m.verifyError(differs(seq, sok && s.Seq == seq, dok && d.Seq == seq))
		}
		if err := m.recheck(ctx, seq, exact); err != nil {
			return err
		}
	}
}

// differs says how seq differs: in the source, in the target, or in both
// with other contents.
func differs(seq uint64, inSource, inTarget bool) string {
	switch {
	case inSource && inTarget:
		return fmt.Sprintf("seq %d has another subject, header, payload or timestamp", seq)
	case inSource:
		return fmt.Sprintf("seq %d is missing", seq)
	}
	return fmt.Sprintf("seq %d is not in the source", seq)
}

// recheck reads seq from both leaders and compares: the same, it is added
// to the tally; in neither, or in the target only while the source is live
// (exact false), it is let be; otherwise it is the difference.
func (m *mover) recheck(ctx context.Context, seq uint64, exact bool) error {
	sm, sIn, err := leaderMsg(ctx, m.src.JS, m.srcName, seq)
	if err != nil {
		return err
	}
	tm, tIn, err := m.targetLeaderMsg(ctx, seq)
	if err != nil {
		return err
	}
	switch {
	case sIn && tIn:
		sh, th := m.hasher(true)(sm), m.hasher(false)(tm)
		if sh == th {
			m.tally.add(msgHash{Seq: seq, Hash: sh})
			return nil
		}
		return m.verifyError(differs(seq, true, true) + ": " + m.whatDiffers(sm, tm))
	case sIn, tIn && exact:
		return m.verifyError(differs(seq, sIn, tIn))
	}
	return nil
}

// leaderMsg reads seq from the stream's leader (STREAM.MSG.GET), with its
// headers as stored; in says whether the stream holds it. Not nats.go's
// Stream.GetMsg: on a stream with allow_direct it asks any replica, and
// leaves the four headers a direct get appends (Nats-Stream,
// Nats-Sequence, Nats-Subject, Nats-Time-Stamp) among the stored ones, so
// a recheck of a source with allow_direct against a target without found
// a difference that is not there.
func leaderMsg(ctx context.Context, js jetstream.JetStream, stream string, seq uint64) (m *envelope.Message, in bool, err error) {
	m, err = jsapi.New(js).MsgGet(ctx, stream, jsapi.MsgGetRequest{Seq: seq})
	switch {
	case errors.Is(err, jsapi.ErrNoMessage):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("stream %q: seq %d: %w", stream, seq, err)
	}
	return m, true, nil
}

// targetLeaderMsg reads the target's message of the source's seq from its
// leader: the same sequence, or for the counter way the one paired with
// it (none when none is).
func (m *mover) targetLeaderMsg(ctx context.Context, seq uint64) (*envelope.Message, bool, error) {
	if m.seqs != nil {
		tseq, ok := m.seqs.target(seq)
		if !ok {
			return nil, false, nil
		}
		seq = tseq
	}
	return leaderMsg(ctx, m.dst.JS, m.dstName, seq)
}

// whatDiffers says what differs between a source message and the target's,
// compared as the hashes compare them (the target's headers mapped back and
// no timestamp for jetctl's copy): the subjects and timestamps, the names
// of the headers, the payloads' sizes. Never header values or payloads.
func (m *mover) whatDiffers(src, dst *envelope.Message) string {
	withTime := m.sum == nil || m.sum.Mechanism == "mirror"
	switch {
	case m.seqs != nil:
		strip := func(e *envelope.Message) *envelope.Message {
			h := maps.Clone(e.Header)
			delete(h, headerStreamSource)
			delete(h, headerCounterSources)
			delete(h, headerIncr)
			maps.DeleteFunc(h, func(k string, _ []string) bool { return isBatch(k) })
			return &envelope.Message{Subject: e.Subject, Header: h, Data: e.Data}
		}
		src, dst = strip(src), strip(dst)
	case !withTime:
		dst = &envelope.Message{Subject: dst.Subject, Header: DecodeHeader(dst.Header), Data: dst.Data}
	default:
		// A mirror drops a batch's headers as it copies.
		strip := func(e *envelope.Message) *envelope.Message {
			h := maps.Clone(e.Header)
			maps.DeleteFunc(h, func(k string, _ []string) bool { return isBatch(k) })
			return &envelope.Message{Subject: e.Subject, Header: h, Data: e.Data, Time: e.Time}
		}
		src, dst = strip(src), strip(dst)
	}
	var parts []string
	if src.Subject != dst.Subject {
		parts = append(parts, fmt.Sprintf("subject %s in %s, %s in %s", src.Subject, m.srcName, dst.Subject, m.dstName))
	}
	if withTime && !src.Time.Equal(dst.Time) {
		parts = append(parts, fmt.Sprintf("timestamp %s in %s, %s in %s", src.Time.UTC().Format(time.RFC3339Nano), m.srcName, dst.Time.UTC().Format(time.RFC3339Nano), m.dstName))
	}
	if names := headersDiffering(src.Header, dst.Header); len(names) > 0 {
		parts = append(parts, "headers "+strings.Join(names, ", "))
	}
	if !bytes.Equal(src.Data, dst.Data) {
		parts = append(parts, fmt.Sprintf("payload of %d B in %s, %d B in %s", len(src.Data), m.srcName, len(dst.Data), m.dstName))
	}
	if len(parts) == 0 {
		return "nothing that can be named"
	}
	return strings.Join(parts, "; ")
}

// headersDiffering names the headers (Nats-Expected-* aside) whose values
// differ between a and b, or that only one has, sorted.
func headersDiffering(a, b map[string][]string) []string {
	var names []string
	for k, v := range a {
		if !isExpectation(k) && !slices.Equal(v, b[k]) {
			names = append(names, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && !isExpectation(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// acceptStreams compares a live round's hashes (see compareStreams), from
// seq from on, and marks what the target's read covered verified. Nothing
// of a round that fails is kept: it may be run again.
func (m *mover) acceptStreams(ctx context.Context, from uint64, src, dst *hashStream) error {
	defer src.close()
	defer dst.close()
	mk := m.tally.mark(from)
	if err := m.compareStreams(ctx, src, dst, false); err != nil {
		m.tally.rollback(mk)
		return err
	}
	if dst.end >= from {
		m.verified = dst.end
	}
	return nil
}

// compareFrozen compares the hashes of two frozen ranges exactly (see
// compareStreams).
func (m *mover) compareFrozen(ctx context.Context, src, dst *hashStream) error {
	defer src.close()
	defer dst.close()
	return m.compareStreams(ctx, src, dst, true)
}

// VerifyError names the first difference between the source and the
// target; it is an ErrVerify.
type VerifyError struct {
	Source, Target string
	What           string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("%s: %s differs from %s: %s", ErrVerify, e.Target, e.Source, e.What)
}

func (e *VerifyError) Unwrap() error { return ErrVerify }

// verifyError is a VerifyError of this move; a stream moving to another
// server under its own name is named with its server.
func (m *mover) verifyError(what string) *VerifyError {
	src, dst := m.srcName, m.dstName
	if src == dst {
		sc, dc := m.src.JS.Conn(), m.dst.JS.Conn()
		sn, dn := sc.ConnectedServerName(), dc.ConnectedServerName()
		if sn == "" || sn == dn {
			// Unnamed, or named alike: their URLs, without credentials.
			sn, dn = sc.ConnectedUrlRedacted(), dc.ConnectedUrlRedacted()
		}
		src, dst = src+" on "+sn, dst+" on "+dn
	}
	return &VerifyError{Source: src, Target: dst, What: what}
}

// compareHashes compares the hashes read from the source and the target,
// both in sequence order: a message in both must be the same, one in the
// source only was lost. One in the target only is a difference when exact
// (two frozen ranges); while the source is live it was deleted from the
// source since it was copied (the cutover deletes it from the target).
func compareHashes(src, dst []msgHash, exact bool) (uint64, string, bool) {
	i, j := 0, 0
	for i < len(src) || (exact && j < len(dst)) {
		switch {
		case j >= len(dst) || (i < len(src) && src[i].Seq < dst[j].Seq):
			return src[i].Seq, fmt.Sprintf("seq %d is missing", src[i].Seq), false
		case i >= len(src) || src[i].Seq > dst[j].Seq:
			if exact {
				return dst[j].Seq, fmt.Sprintf("seq %d is not in the source", dst[j].Seq), false
			}
			j++
		default:
			if src[i].Hash != dst[j].Hash {
				return src[i].Seq, fmt.Sprintf("seq %d has another subject, header, payload or timestamp", src[i].Seq), false
			}
			i++
			j++
		}
	}
	return 0, "", true
}

// since is time.Since, rounded for a summary.
func since(t time.Time) time.Duration { return time.Since(t).Round(time.Microsecond) }

// maxRechecks bounds how many differences compare reads again.
const maxRechecks = 1000

// timedHash is hashMsg with the timestamp: a mirror keeps it.
func timedHash(m *envelope.Message) uint64 { return hashMsg(m, mirrorHash) }

// isBatch says whether header name is one of a batch's (Nats-Batch-*).
func isBatch(name string) bool { return strings.HasPrefix(name, "Nats-Batch-") }

// hasher is how the messages read from the source (src) or the target are
// hashed: with the timestamp for a mirror; for jetctl's copy, without it
// and with the target's headers mapped back (clientcopy.go).
func (m *mover) hasher(src bool) func(*envelope.Message) uint64 {
	if m.seqs != nil {
		return counterHash
	}
	if m.sum == nil || m.sum.Mechanism != "copy" {
		return timedHash
	}
	if src {
		return sourceHash
	}
	return copyHash
}

// readBoth reads from..to of the source and of the target, hashed as a
// mirror keeps them, as two streams.
func (m *mover) readBoth(ctx context.Context, from, to uint64) (*hashStream, *hashStream) {
	return streamHashes(ctx, m.src.JS, m.srcName, from, to, timedHash), streamHashes(ctx, m.dst.JS, m.dstName, from, to, timedHash)
}
