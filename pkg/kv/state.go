package kv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// DefaultValueBudget is how many bytes of values a bucket diff keeps in
// memory by default. Values past it are kept as a hash and read again by
// revision if a diff needs them, so memory stays bounded on any bucket.
const DefaultValueBudget = 64 << 20

// multiLastBatch is the most subjects one multi_last direct get may ask
// for: the server answers 413 Too Many Results past 1024.
const multiLastBatch = 1024

// multiLastMaxKeys is the most keys whose past values lastBefore reads with
// multi_last. The server answers a multi_last bounded by time by walking
// its blocks backwards for every request (about 0.2 s per 1,024 keys on a
// 2-core machine); past a few requests one pass over the
// older revisions is faster.
const multiLastMaxKeys = 2 * multiLastBatch

// record is what a bucket diff keeps of one key's state: the value while
// the budget lasts, else its hash, so that two states can be compared.
type record struct {
	rev    uint64
	op     Op
	reason string // a subject delete marker's
	time   time.Time
	// gone: a value the key had that the server no longer holds (it
	// expired, and a MaxAge marker took its place); rev and time are the
	// marker's.
	gone  bool
	value []byte
	// kept is true when value holds the value (it may be empty); when it
	// is false, hash is the value's SHA-256.
	kept bool
	hash [sha256.Size]byte
}

func (r *record) present() bool { return r != nil && r.op == OpPut }

// expired reports a subject delete marker the server wrote where the
// key's value expired.
func (r *record) expired() bool { return r != nil && r.reason == ReasonMaxAge }

// expiredValue is the value a key had before marker r: present, but no
// longer stored.
func expiredValue(r *record) *record {
	return &record{rev: r.rev, op: OpPut, reason: r.reason, time: r.time, gone: true}
}

// sum is the value's SHA-256.
func (r *record) sum() [sha256.Size]byte {
	if r.kept {
		return sha256.Sum256(r.value)
	}
	return r.hash
}

// sameValue reports whether two present records hold the same bytes.
func sameValue(a, b *record) bool {
	if a.kept && b.kept {
		return bytes.Equal(a.value, b.value)
	}
	return a.sum() == b.sum()
}

// state is one side of a bucket diff, and the memory it may use.
type state struct {
	b      *bucket
	budget *int64
}

func (s state) record(e Entry) *record {
	r := &record{}
	s.update(r, e)
	return r
}

// update sets r to a revision: its value while the budget lasts, else its
// hash. A record overwritten by a later revision gives its value's memory
// back first: most revisions a pass reads are overwritten so.
func (s state) update(r *record, e Entry) {
	s.release(r)
	*r = record{rev: e.Revision, op: e.Op, reason: e.Reason, time: e.Time}
	if e.Op != OpPut {
		return
	}
	if int64(len(e.Value)) <= *s.budget {
		*s.budget -= int64(len(e.Value))
		r.value, r.kept = e.Value, true
	} else {
		r.hash = sha256.Sum256(e.Value)
	}
}

// release lets a kept value go and gives its memory back to the budget.
func (s state) release(r *record) {
	if r == nil || !r.kept {
		return
	}
	*s.budget += int64(len(r.value))
	r.value, r.kept = nil, false
}

// value returns a present record's value, reading it again by revision
// when it was not kept.
func (s state) value(ctx context.Context, r *record) ([]byte, error) {
	if !r.present() || r.gone {
		return nil, nil
	}
	if r.kept {
		if r.value == nil {
			return []byte{}, nil
		}
		return r.value, nil
	}
	m, err := s.b.stream.GetMsg(ctx, r.rev)
	if err != nil {
		return nil, fmt.Errorf("bucket %q: revision %d: %w", s.b.name, r.rev, err)
	}
	if m.Data == nil {
		return []byte{}, nil
	}
	return m.Data, nil
}

// lastBefore reads, for each key, its last revision strictly before t.
// Keys without one are absent from the result. A few keys are read with
// multi_last direct gets bounded by up_to_time, 1024 keys a request (a
// request that the server cut short at its max_bytes is repeated for the
// keys it did not answer); many keys, or a bucket without direct get, with
// one pass over the revisions before t.
func (s state) lastBefore(ctx context.Context, js jetstream.JetStream, keys, patterns []string, t time.Time, stats *Stats) (map[string]*record, error) {
	if !s.b.info.Config.AllowDirect || len(keys) > multiLastMaxKeys {
		return s.lastBeforeByScan(ctx, js, keys, patterns, t, stats)
	}
	out := make(map[string]*record, len(keys))
	for start := 0; start < len(keys); start += multiLastBatch {
		missing := make(map[string]bool, multiLastBatch)
		for _, k := range keys[start:min(start+multiLastBatch, len(keys))] {
			missing[k] = true
		}
		for len(missing) > 0 {
			subjects := make([]string, 0, len(missing))
			for k := range missing {
				subjects = append(subjects, s.b.subject(k))
			}
			got, err := s.multiLast(ctx, js, subjects, t, func(e Entry) {
				stats.add(e)
				out[e.Key] = s.record(e)
				delete(missing, e.Key)
			})
			if err != nil {
				return nil, err
			}
			if got == 0 {
				break
			}
		}
	}
	return out, nil
}

func (s state) multiLast(ctx context.Context, js jetstream.JetStream, subjects []string, t time.Time, fn func(Entry)) (int, error) {
	n := 0
	req := jsapi.MsgGetRequest{MultiLastFor: subjects, UpToTime: &t}
	err := streamread.DirectGet(ctx, js, s.b.info.Config.Name, req, func(m *envelope.Message) error {
		fn(s.b.entry(m.Subject, m.Seq, m.Time, m.Header, m.Data))
		n++
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("bucket %q: reading the state at %s: %w", s.b.name, t.UTC().Format(time.RFC3339), err)
	}
	return n, nil
}

// lastBeforeByScan is lastBefore as one pass from the start of the stream
// up to t, over the keys matching patterns, keeping only the wanted keys.
func (s state) lastBeforeByScan(ctx context.Context, js jetstream.JetStream, keys, patterns []string, t time.Time, stats *Stats) (map[string]*record, error) {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	out := make(map[string]*record, len(keys))
	err := s.b.scan(ctx, js, scanSpec{patterns: patterns, deliver: jetstream.DeliverAllPolicy}, func(e Entry) error {
		if !e.Time.Before(t) {
			return errStop
		}
		stats.add(e)
		if want[e.Key] {
			if old := out[e.Key]; old != nil {
				s.update(old, e)
			} else {
				out[e.Key] = s.record(e)
			}
		}
		return nil
	})
	return out, err
}

// Stats counts what a bucket diff read.
type Stats struct {
	Messages int
	Bytes    int64
	Elapsed  time.Duration
	// onRead, if set, hears the count of revisions read every
	// progressEvery of them.
	onRead func(messages int)
}

// progressEvery is how often a bucket diff reports the revisions it read.
const progressEvery = 4096

func (s *Stats) add(e Entry) {
	s.Messages++
	s.Bytes += int64(len(e.Value))
	if s.onRead != nil && s.Messages%progressEvery == 0 {
		s.onRead(s.Messages)
	}
}
