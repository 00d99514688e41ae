package migrate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// msgHash is one stored message's hash: its subject, headers (sorted),
// payload and, when kept, its timestamp.
type msgHash struct {
	Seq  uint64
	Hash uint64
}

// hashMsg hashes m without its Nats-Expected-* headers, which neither a
// mirror (TestFactMirrorDropsExpectedHeaders) nor jetctl's copy keeps;
// withTime includes its timestamp (a mirror keeps it, jetctl's copy
// cannot).
func hashMsg(m *envelope.Message, withTime bool) uint64 {
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
		if isExpectation(k) {
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
	if withTime {
		binary.BigEndian.PutUint64(n[:], uint64(m.Time.UnixNano()))
		_, _ = d.Write(n[:])
	}
	return d.Sum64()
}

// readHashes hashes the messages of stream from..to (inclusive).
func readHashes(ctx context.Context, js jetstream.JetStream, stream string, from, to uint64, withTime bool) ([]msgHash, error) {
	return readHashesWith(ctx, js, stream, from, to, func(m *envelope.Message) uint64 { return hashMsg(m, withTime) })
}

// readHashesWith is readHashes with the hash function given.
func readHashesWith(ctx context.Context, js jetstream.JetStream, stream string, from, to uint64, hash func(*envelope.Message) uint64) ([]msgHash, error) {
	if to < from || to == 0 {
		return nil, nil
	}
	r, err := streamread.Resolve(ctx, js, streamread.Config{Stream: stream, FromSeq: from, ToSeq: to})
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", stream, err)
	}
	var out []msgHash
	err = streamread.Read(ctx, js, r, func(m *envelope.Message) error {
		out = append(out, msgHash{Seq: m.Seq, Hash: hash(m)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("stream %q: reading seq %d..%d: %w", stream, from, to, err)
	}
	return out, nil
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

// digest is a SHA-256 over the hashes of the messages present (not in
// deleted, not below first), in sequence order.
func digest(hs []msgHash, first uint64, deleted map[uint64]bool) (string, uint64) {
	d := sha256.New()
	var b [16]byte
	var n uint64
	for _, h := range hs {
		if h.Seq < first || deleted[h.Seq] {
			continue
		}
		binary.BigEndian.PutUint64(b[:8], h.Seq)
		binary.BigEndian.PutUint64(b[8:], h.Hash)
		_, _ = d.Write(b[:])
		n++
	}
	return hex.EncodeToString(d.Sum(nil)), n
}

// since is time.Since, rounded for a summary.
func since(t time.Time) time.Duration { return time.Since(t).Round(time.Microsecond) }

// maxRechecks bounds how many differences compare reads again.
const maxRechecks = 1000

// compare compares the hashes of the source and the target (exactly, or as
// a prefix of a live source). Direct gets may be answered by a replica
// that is behind (during a leader change, say), so a difference is read
// again from both leaders, coherently, before it counts.
func (m *mover) compare(ctx context.Context, src, dst []msgHash, exact bool) ([]msgHash, []msgHash, error) {
	for tries := 0; ; tries++ {
		seq, what, ok := compareHashes(src, dst, exact)
		if ok {
			return src, dst, nil
		}
		if tries >= maxRechecks {
			return src, dst, m.verifyError(what)
		}
		var changed bool
		var err error
		if src, changed, err = recheckWith(ctx, m.src.JS, m.srcName, src, seq, m.hasher(true)); err != nil {
			return src, dst, err
		}
		dstChanged := false
		if dst, dstChanged, err = recheckWith(ctx, m.dst.JS, m.dstName, dst, seq, m.hasher(false)); err != nil {
			return src, dst, err
		}
		if !changed && !dstChanged {
			return src, dst, m.verifyError(what)
		}
	}
}

// timedHash is hashMsg with the timestamp: a mirror keeps it.
func timedHash(m *envelope.Message) uint64 { return hashMsg(m, true) }

// hasher is how the messages read from the source (src) or the target are
// hashed: with the timestamp for a mirror; for jetctl's copy, without it
// and with the target's headers mapped back (clientcopy.go).
func (m *mover) hasher(src bool) func(*envelope.Message) uint64 {
	if m.sum == nil || m.sum.Mechanism != "copy" {
		return timedHash
	}
	if src {
		return sourceHash
	}
	return copyHash
}

// recheckWith reads seq from the stream's leader and puts what it holds
// (or that it holds nothing), hashed by hash, into hs, which stays in
// sequence order; it says whether that changed hs.
func recheckWith(ctx context.Context, js jetstream.JetStream, stream string, hs []msgHash, seq uint64, hash func(*envelope.Message) uint64) ([]msgHash, bool, error) {
	i, found := slices.BinarySearchFunc(hs, seq, func(h msgHash, s uint64) int { return cmp.Compare(h.Seq, s) })
	raw, err := getMsg(ctx, js, stream, seq)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		if !found {
			return hs, false, nil
		}
		return slices.Delete(hs, i, i+1), true, nil
	case err != nil:
		return hs, false, fmt.Errorf("stream %q: seq %d: %w", stream, seq, err)
	}
	h := msgHash{Seq: seq, Hash: hash(&envelope.Message{Subject: raw.Subject, Header: raw.Header, Data: raw.Data, Time: raw.Time})}
	if !found {
		return slices.Insert(hs, i, h), true, nil
	}
	if hs[i] == h {
		return hs, false, nil
	}
	hs[i] = h
	return hs, true, nil
}

// fillGapsWith reads from the leader every sequence of first..last that
// is not deleted and not in hs, when hs holds fewer than msgs of them,
// hashing with hash.
func fillGapsWith(ctx context.Context, js jetstream.JetStream, stream string, hs []msgHash, first, last, msgs uint64, deleted map[uint64]bool, hash func(*envelope.Message) uint64) ([]msgHash, error) {
	if _, n := digest(hs, first, deleted); n >= msgs || msgs == 0 {
		return hs, nil
	}
	var missing []uint64
	j := 0
	for seq := first; seq <= last; seq++ {
		for j < len(hs) && hs[j].Seq < seq {
			j++
		}
		if deleted[seq] || (j < len(hs) && hs[j].Seq == seq) {
			continue
		}
		if missing = append(missing, seq); len(missing) > maxRechecks {
			return hs, nil // too many: the count check names the difference
		}
	}
	for _, seq := range missing {
		var err error
		if hs, _, err = recheckWith(ctx, js, stream, hs, seq, hash); err != nil {
			return hs, err
		}
	}
	return hs, nil
}

// readBoth hashes from..to of the source and of the target, appending.
func (m *mover) readBoth(ctx context.Context, from, to uint64) error {
	type res struct {
		hs  []msgHash
		err error
	}
	ch := make(chan res, 1)
	go func() {
		hs, err := readHashes(ctx, m.dst.JS, m.dstName, from, to, true)
		ch <- res{hs, err}
	}()
	hs, err := readHashes(ctx, m.src.JS, m.srcName, from, to, true)
	r := <-ch
	if err != nil {
		return err
	}
	if r.err != nil {
		return r.err
	}
	m.srcHashes = append(m.srcHashes, hs...)
	m.dstHashes = append(m.dstHashes, r.hs...)
	return nil
}
