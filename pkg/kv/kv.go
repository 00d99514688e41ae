// Package kv reads NATS KV buckets for jetctl: the history of keys, diffs
// between revisions, between a bucket's states at two times and between two
// buckets, and filtered tails.
//
// A bucket is the stream KV_<bucket>; key K is the subject $KV.<bucket>.K,
// its revisions are that subject's messages and their stream sequences.
// Deletes are read as nats.go's KV reads them: a KV-Operation header (DEL,
// PURGE, written by clients), else a subject delete marker's
// Nats-Marker-Reason (written by the server where a key's TTL or the
// bucket's max age removed its value in a bucket with limit markers:
// MaxAge, a PURGE; the reasons Purge and Remove, which 2.15 servers define
// but do not write, read as PURGE and DEL), kept as the revision's
// Reason (facts_test.go). A key that expired between two times is deleted
// in a diff between them, though the server no longer holds its value.
// Everything
// here reads that stream directly, through pkg/streamread's in-order pull
// reader and batched direct gets, so that whole-bucket work costs one pass
// rather than a request per key.
package kv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsonvalue"
)

// Op is the operation a revision records.
type Op string

// The KV operations.
const (
	OpPut   Op = "PUT"
	OpDel   Op = "DEL"
	OpPurge Op = "PURGE"
)

const operationHeader = "KV-Operation"

// Reasons of the subject delete markers the server writes, in
// Nats-Marker-Reason.
const (
	// ReasonMaxAge: a key's TTL, or the bucket's max age, passed.
	ReasonMaxAge = "MaxAge"
	ReasonPurge  = "Purge"
	ReasonRemove = "Remove"
)

// opOf is the operation a revision records, as nats.go's KV reads it: its
// KV-Operation; else, for a subject delete marker, its reason (MaxAge and
// Purge are PURGE, Remove is DEL), which reason returns; else PUT.
func opOf(h nats.Header) (op Op, reason string) {
	switch h.Get(operationHeader) {
	case "DEL":
		return OpDel, ""
	case "PURGE":
		return OpPurge, ""
	case "":
		switch r := h.Get(envelope.MarkerHeader); r {
		case ReasonMaxAge, ReasonPurge:
			return OpPurge, r
		case ReasonRemove:
			return OpDel, r
		}
	}
	return OpPut, ""
}

// Entry is one revision of one key.
type Entry struct {
	Bucket   string
	Key      string
	Revision uint64
	Op       Op
	// Reason is a subject delete marker's Nats-Marker-Reason (MaxAge,
	// Purge, Remove): the server removed the key; empty otherwise.
	Reason string
	Time   time.Time
	// Value is the stored value; empty for DEL and PURGE.
	Value []byte
}

// entryJSON is Entry's JSON form, shared by `kv history` and `kv tail`.
type entryJSON struct {
	Bucket   string          `json:"bucket"`
	Key      string          `json:"key"`
	Revision uint64          `json:"revision"`
	Op       Op              `json:"op"`
	Reason   string          `json:"reason,omitempty"`
	Time     string          `json:"time"`
	Size     int             `json:"size"`
	Value    json.RawMessage `json:"value,omitempty"`
	ValueB64 string          `json:"value_b64,omitempty"`
}

// MarshalJSON writes {bucket, key, revision, op, reason (a marker's
// only), time, size} and the value:
// `value` holds the JSON document when the value is JSON, else the text as
// a string; a binary value is `value_b64` instead; DEL and PURGE have none.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{
		Bucket: e.Bucket, Key: e.Key, Revision: e.Revision, Op: e.Op, Reason: e.Reason,
		Time: e.Time.UTC().Format(time.RFC3339Nano), Size: len(e.Value),
	}
	if e.Op == OpPut {
		switch KindOf(e.Value) {
		case KindJSON:
			j.Value = json.RawMessage(e.Value)
		case KindText:
			s, err := textJSON(e.Value)
			if err != nil {
				return nil, err
			}
			j.Value = s
		default:
			j.ValueB64 = base64.StdEncoding.EncodeToString(e.Value)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Generic is the entry's JSON form decoded, numbers in a value as
// json.Number: what a jq program sees. It is built directly rather than
// through MarshalJSON because a filtered tail calls it for every revision.
func (e *Entry) Generic() (any, error) {
	m := map[string]any{
		"bucket":   e.Bucket,
		"key":      e.Key,
		"revision": int(e.Revision),
		"op":       string(e.Op),
		"time":     e.Time.UTC().Format(time.RFC3339Nano),
		"size":     len(e.Value),
	}
	if e.Reason != "" {
		m["reason"] = e.Reason
	}
	name, v, err := e.genericValue()
	if err != nil {
		return nil, err
	}
	if name != "" {
		m[name] = v
	}
	return m, nil
}

// Field is one top-level field of Generic's document, nil when it has
// none, built alone: a --filter that reads only .size or .key never
// decodes the value (see pkg/jqpred).
func (e *Entry) Field(name string) (any, error) {
	switch name {
	case "bucket":
		return e.Bucket, nil
	case "key":
		return e.Key, nil
	case "revision":
		return int(e.Revision), nil
	case "op":
		return string(e.Op), nil
	case "reason":
		if e.Reason == "" {
			return nil, nil
		}
		return e.Reason, nil
	case "time":
		return e.Time.UTC().Format(time.RFC3339Nano), nil
	case "size":
		return len(e.Value), nil
	case "value", "value_b64":
		got, v, err := e.genericValue()
		if err != nil || got != name {
			return nil, err
		}
		return v, nil
	}
	return nil, nil
}

// genericValue is the value's field in Generic's document: "value" with
// the decoded JSON or the text, "value_b64" for a binary value, or no name
// for DEL and PURGE.
func (e *Entry) genericValue() (string, any, error) {
	if e.Op != OpPut {
		return "", nil, nil
	}
	if v, ok := jsonvalue.Decode(e.Value); ok {
		return "value", v, nil
	}
	if isText(e.Value) {
		return "value", string(e.Value), nil
	}
	return "value_b64", base64.StdEncoding.EncodeToString(e.Value), nil
}

// NotFoundError is a bucket, key or revision that does not exist. It
// unwraps to jetstream.ErrBucketNotFound or jetstream.ErrKeyNotFound, so
// that callers map it like the library's own errors.
type NotFoundError struct {
	Bucket   string
	Key      string
	Revision uint64
	// OtherKey is set when Revision exists but belongs to another key.
	OtherKey string
	// Place says where the bucket was looked for when that is not the
	// main connection's server: "context dr", a server URL.
	Place string
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bucket %q", e.Bucket)
	if e.Place != "" {
		fmt.Fprintf(&b, " (%s)", e.Place)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": key %q", e.Key)
	}
	if e.Revision != 0 {
		fmt.Fprintf(&b, ": revision %d", e.Revision)
	}
	if e.OtherKey != "" {
		fmt.Fprintf(&b, " belongs to key %q", e.OtherKey)
	} else {
		b.WriteString(": not found")
	}
	return b.String()
}

func (e *NotFoundError) Unwrap() error {
	if e.Key == "" {
		return jetstream.ErrBucketNotFound
	}
	return jetstream.ErrKeyNotFound
}

var (
	validBucket = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	validKey    = regexp.MustCompile(`^[-/_=.a-zA-Z0-9*>]+$`)
)

// ValidateBucket checks a bucket name as the server would.
func ValidateBucket(name string) error {
	if !validBucket.MatchString(name) {
		return fmt.Errorf("invalid bucket name %q: use letters, digits, '-' and '_'", name)
	}
	return nil
}

// ValidateKeyPattern checks a key or a key pattern: dot-separated tokens of
// letters, digits and -/_=, where a token may be * (any one token) and the
// last may be > (one or more tokens).
func ValidateKeyPattern(pattern string, wildcards bool) error {
	bad := func(why string) error {
		return fmt.Errorf("invalid key %q: %s", pattern, why)
	}
	if !validKey.MatchString(pattern) {
		return bad("use letters, digits, '-', '/', '_', '=' and '.'")
	}
	tokens := strings.Split(pattern, ".")
	for i, t := range tokens {
		if t == "" {
			return bad("empty token")
		}
		if strings.ContainsAny(t, "*>") {
			if !wildcards {
				return bad("wildcards are not allowed here")
			}
			if t != "*" && t != ">" || t == ">" && i != len(tokens)-1 {
				return bad("'*' must be a whole token and '>' the last one")
			}
		}
	}
	return nil
}

// bucket is an open bucket: its stream and the subject prefix of its keys.
type bucket struct {
	name   string
	stream jetstream.Stream
	info   *jetstream.StreamInfo
	prefix string
}

// openBucket looks the bucket's stream up; a missing stream is the bucket
// not found.
func openBucket(ctx context.Context, js jetstream.JetStream, name string) (*bucket, error) {
	s, err := js.Stream(ctx, "KV_"+name)
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, &NotFoundError{Bucket: name}
		}
		return nil, fmt.Errorf("bucket %q: %w", name, err)
	}
	b := &bucket{name: name, stream: s, info: s.CachedInfo(), prefix: "$KV." + name + "."}
	// A mirrored bucket keeps its origin's subjects.
	if m := b.info.Config.Mirror; m != nil && strings.HasPrefix(m.Name, "KV_") {
		b.prefix = "$KV." + strings.TrimPrefix(m.Name, "KV_") + "."
	}
	return b, nil
}

func (b *bucket) subject(key string) string { return b.prefix + key }

func (b *bucket) key(subject string) (string, bool) {
	return strings.CutPrefix(subject, b.prefix)
}

func (b *bucket) filters(patterns []string) []string {
	if len(patterns) == 0 {
		return []string{b.prefix + ">"}
	}
	out := make([]string, len(patterns))
	for i, p := range patterns {
		out[i] = b.prefix + p
	}
	return out
}

// entry turns a stream message of the bucket into an Entry.
func (b *bucket) entry(subject string, seq uint64, ts time.Time, h nats.Header, data []byte) Entry {
	key, _ := b.key(subject)
	op, reason := opOf(h)
	return Entry{Bucket: b.name, Key: key, Revision: seq, Op: op, Reason: reason, Time: ts, Value: data}
}

// history is how many revisions per key the bucket keeps.
func (b *bucket) history() int64 { return b.info.Config.MaxMsgsPerSubject }
