package kv

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// RevisionDiffConfig selects two revisions of a key. A zero ToRev is the
// latest revision; a zero FromRev is the revision before ToRev.
type RevisionDiffConfig struct {
	Bucket  string
	Key     string
	FromRev uint64
	ToRev   uint64
}

// RevisionDiff is the difference between two revisions of a key.
type RevisionDiff struct {
	Bucket string
	Key    string
	// From is nil when the key has no earlier revision (a new key, or a
	// bucket that keeps one revision per key).
	From    *Entry
	To      *Entry
	Changes []Change
}

// DiffRevisions compares two revisions of a key. A revision that does not
// exist, or that belongs to another key, is a NotFoundError.
func DiffRevisions(ctx context.Context, js jetstream.JetStream, cfg RevisionDiffConfig) (*RevisionDiff, error) {
	b, err := openBucket(ctx, js, cfg.Bucket)
	if err != nil {
		return nil, err
	}
	d := &RevisionDiff{Bucket: cfg.Bucket, Key: cfg.Key}
	if cfg.ToRev != 0 {
		d.To, err = b.revision(ctx, cfg.Key, cfg.ToRev)
	} else {
		d.To, err = b.latest(ctx, cfg.Key)
	}
	if err != nil {
		return nil, err
	}
	if cfg.FromRev != 0 {
		d.From, err = b.revision(ctx, cfg.Key, cfg.FromRev)
	} else {
		d.From, err = b.previous(ctx, js, cfg.Key, d.To.Revision)
	}
	if err != nil {
		return nil, err
	}
	d.Changes, err = Diff(ctx, valueOf(d.From), valueOf(d.To), revisionName(d.From), revisionName(d.To))
	if err != nil {
		return nil, err
	}
	return d, nil
}

// valueOf is an entry's value for diffing: nil when there is no value.
func valueOf(e *Entry) []byte {
	if e == nil || e.Op != OpPut {
		return nil
	}
	if e.Value == nil {
		return []byte{}
	}
	return e.Value
}

func revisionName(e *Entry) string {
	if e == nil {
		return "(none)"
	}
	return fmt.Sprintf("%s/%s@%d", e.Bucket, e.Key, e.Revision)
}

// revision reads one revision by its stream sequence and checks that it is
// the key's.
func (b *bucket) revision(ctx context.Context, key string, rev uint64) (*Entry, error) {
	m, err := b.stream.GetMsg(ctx, rev)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, &NotFoundError{Bucket: b.name, Key: key, Revision: rev}
		}
		return nil, fmt.Errorf("bucket %q: key %q: revision %d: %w", b.name, key, rev, err)
	}
	if m.Subject != b.subject(key) {
		other, ok := b.key(m.Subject)
		if !ok {
			other = m.Subject
		}
		return nil, &NotFoundError{Bucket: b.name, Key: key, Revision: rev, OtherKey: other}
	}
	e := b.entry(m.Subject, m.Sequence, m.Time, m.Header, m.Data)
	return &e, nil
}

func (b *bucket) latest(ctx context.Context, key string) (*Entry, error) {
	m, err := b.stream.GetLastMsgForSubject(ctx, b.subject(key))
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, &NotFoundError{Bucket: b.name, Key: key}
		}
		return nil, fmt.Errorf("bucket %q: key %q: %w", b.name, key, err)
	}
	e := b.entry(m.Subject, m.Sequence, m.Time, m.Header, m.Data)
	return &e, nil
}

// previous finds the key's revision before rev with one multi_last direct
// get bounded by up_to_seq; nil when there is none.
func (b *bucket) previous(ctx context.Context, js jetstream.JetStream, key string, rev uint64) (*Entry, error) {
	if rev <= 1 {
		return nil, nil
	}
	if !b.info.Config.AllowDirect {
		return b.previousByScan(ctx, js, key, rev)
	}
	var prev *Entry
	req := jsapi.MsgGetRequest{MultiLastFor: []string{b.subject(key)}, UpToSeq: rev - 1}
	err := streamread.DirectGet(ctx, js, b.info.Config.Name, req, func(m *envelope.Message) error {
		e := b.entry(m.Subject, m.Seq, m.Time, m.Header, m.Data)
		prev = &e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bucket %q: key %q: %w", b.name, key, err)
	}
	return prev, nil
}

// previousByScan is previous for buckets without direct get: a pass over
// the key's revisions.
func (b *bucket) previousByScan(ctx context.Context, js jetstream.JetStream, key string, rev uint64) (*Entry, error) {
	var prev *Entry
	err := b.scan(ctx, js, scanSpec{patterns: []string{key}, deliver: jetstream.DeliverAllPolicy}, func(e Entry) error {
		if e.Revision >= rev {
			return errStop
		}
		prev = &e
		return nil
	})
	return prev, err
}
