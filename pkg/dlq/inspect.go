package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// Entry is a message in a DLQ stream, described by its headers.
type Entry struct {
	DLQStream    string    `json:"dlq_stream"`
	DLQSeq       uint64    `json:"dlq_seq"`
	SourceStream string    `json:"source_stream"`
	SourceSeq    uint64    `json:"source_seq"`
	Subject      string    `json:"subject"`
	Consumer     string    `json:"consumer"`
	Reason       string    `json:"reason"`
	TermReason   string    `json:"term_reason"`
	Deliveries   uint64    `json:"deliveries"`
	SweptAt      time.Time `json:"swept_at"`
	Redrives     int       `json:"redrives"`
	Size         int       `json:"size"`
	// PayloadOmitted is the size of a payload too large to copy: the DLQ
	// message holds the headers only, the payload is in the source.
	PayloadOmitted int `json:"payload_omitted"`
	// Where the message was first stored, through any number of rounds
	// of redrive and death (the Jetctl-Dlq-Original-* headers); for a
	// message that died once, its source.
	OriginalStream  string    `json:"original_stream"`
	OriginalSeq     uint64    `json:"original_seq"`
	OriginalSubject string    `json:"original_subject"`
	OriginalTime    time.Time `json:"original_time"`
	// Message is the stored DLQ message.
	Message *envelope.Message `json:"-"`
}

// EntryFrom reads a DLQ message's headers.
func EntryFrom(m *envelope.Message) Entry {
	h := m.Header
	get := func(k string) string {
		if h == nil {
			return ""
		}
		return h.Get(k)
	}
	e := Entry{
		DLQStream: m.Stream, DLQSeq: m.Seq, SourceStream: get(envelope.SourceStream),
		Subject: get(envelope.SourceSubject), Consumer: get(HeaderConsumer), Reason: get(HeaderReason),
		TermReason: get(HeaderTermReason), Size: len(m.Data), Message: m,
	}
	e.SourceSeq, _ = strconv.ParseUint(get(envelope.SourceSeq), 10, 64)
	e.Deliveries, _ = strconv.ParseUint(get(HeaderDeliveries), 10, 64)
	e.Redrives, _ = strconv.Atoi(get(HeaderRedrives))
	e.PayloadOmitted, _ = strconv.Atoi(get(HeaderPayloadOmitted))
	if t, err := time.Parse(time.RFC3339Nano, get(HeaderSweptAt)); err == nil {
		e.SweptAt = t
	} else {
		e.SweptAt = m.Time
	}
	e.OriginalStream, e.OriginalSeq, e.OriginalSubject = e.SourceStream, e.SourceSeq, e.Subject
	e.OriginalTime, _ = time.Parse(time.RFC3339Nano, get(envelope.SourceTime))
	if s := get(HeaderOriginalStream); s != "" {
		e.OriginalStream, e.OriginalSubject = s, get(HeaderOriginalSubject)
		e.OriginalSeq, _ = strconv.ParseUint(get(HeaderOriginalSeq), 10, 64)
		e.OriginalTime, _ = time.Parse(time.RFC3339Nano, get(HeaderOriginalTime))
	}
	return e
}

// Redriven reports whether the message died after a redrive: where it
// was first stored is not its source.
func (e Entry) Redriven() bool {
	return e.OriginalStream != e.SourceStream || e.OriginalSeq != e.SourceSeq
}

// Generic is the entry as jq programs (--filter) see it: its JSON fields,
// plus the message's headers and data (decoded when JSON).
func (e Entry) Generic() map[string]any {
	g := e.Message.Generic()
	out := map[string]any{
		"dlq_stream": e.DLQStream, "dlq_seq": int(e.DLQSeq), "source_stream": e.SourceStream,
		"source_seq": int(e.SourceSeq), "subject": e.Subject, "consumer": e.Consumer, "reason": e.Reason,
		"term_reason": e.TermReason, "deliveries": int(e.Deliveries),
		"swept_at": e.SweptAt.UTC().Format(time.RFC3339Nano), "redrives": e.Redrives, "size": e.Size,
		"payload_omitted": e.PayloadOmitted, "original_stream": e.OriginalStream, "original_seq": int(e.OriginalSeq),
		"original_subject": e.OriginalSubject, "original_time": e.OriginalTime.UTC().Format(time.RFC3339Nano),
	}
	for _, k := range []string{"headers", "data", "data_b64"} {
		if v, ok := g[k]; ok {
			out[k] = v
		}
	}
	return out
}

// Detail is an entry with its message's headers and payload, as show
// prints it: the fields of Entry, in the same order and always present,
// then headers ({} when none) and data (the decoded JSON document or the
// text) or, for a payload that is not UTF-8, data_b64.
type Detail struct {
	Entry
	Headers map[string][]string `json:"headers"`
	Data    any                 `json:"data,omitempty"`
	DataB64 string              `json:"data_b64,omitempty"`
}

// Detail is e whole.
func (e Entry) Detail() Detail {
	d := Detail{Entry: e, Headers: map[string][]string{}}
	if e.Message == nil {
		return d
	}
	for k, vs := range e.Message.Header {
		d.Headers[k] = append([]string{}, vs...)
	}
	if v, err := e.Message.Field("data_b64"); err == nil && v != nil {
		d.DataB64, _ = v.(string)
		return d
	}
	d.Data, _ = e.Message.Field("data")
	if d.Data == nil {
		// A JSON null payload is null, not a missing field.
		d.Data = json.RawMessage("null")
	}
	return d
}

// Select chooses DLQ entries.
type Select struct {
	// Consumer keeps entries of this consumer only.
	Consumer string
	// Since keeps entries swept at or after it.
	Since time.Time
	// Before keeps entries swept before it.
	Before time.Time
	// Filter keeps entries for which it returns true.
	Filter func(Entry) bool
}

func (s Select) keep(e Entry) bool {
	if s.Consumer != "" && e.Consumer != s.Consumer {
		return false
	}
	if !s.Since.IsZero() && e.SweptAt.Before(s.Since) {
		return false
	}
	if !s.Before.IsZero() && !e.SweptAt.Before(s.Before) {
		return false
	}
	return s.Filter == nil || s.Filter(e)
}

// DLQStreams names the DLQ streams: source's (or dlqStream, when given),
// or every stream jetctl dlq setup created.
func DLQStreams(ctx context.Context, js jetstream.JetStream, source, dlqStream string) ([]string, error) {
	if dlqStream != "" {
		if _, err := js.Stream(ctx, dlqStream); err != nil {
			return nil, fmt.Errorf("stream %q: %w", dlqStream, err)
		}
		return []string{dlqStream}, nil
	}
	if source != "" {
		n, err := Resolve(ctx, js, source)
		if err != nil {
			return nil, err
		}
		return []string{n.DLQ}, nil
	}
	var out []string
	l := js.ListStreams(ctx)
	for si := range l.Info() {
		if si.Config.Metadata[MetaRole] == roleDLQ {
			out = append(out, si.Config.Name)
		}
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// Each passes the selected entries of a DLQ stream to emit, in order, up
// to the last message stored when it starts.
func Each(ctx context.Context, js jetstream.JetStream, dlqStream string, sel Select, emit func(Entry) error) error {
	r, err := streamread.Resolve(ctx, js, streamread.Config{Stream: dlqStream})
	if err != nil {
		return err
	}
	return eachIn(ctx, js, r, sel, emit)
}

// eachIn is Each over a range resolved before: a redrive reads the same
// messages twice, to check them and to send them.
func eachIn(ctx context.Context, js jetstream.JetStream, r streamread.Range, sel Select, emit func(Entry) error) error {
	return streamread.Read(ctx, js, r, func(m *envelope.Message) error {
		e := EntryFrom(m)
		if !sel.keep(e) {
			return nil
		}
		return emit(e)
	})
}

// ErrNoSuchEntry: no DLQ message at that sequence (or for that source sequence).
var ErrNoSuchEntry = errkind.New(errkind.NotFound, "no such DLQ message")

// Get reads one DLQ entry by its DLQ sequence, or by its source sequence
// when sourceSeq is set.
func Get(ctx context.Context, js jetstream.JetStream, dlqStream string, seq, sourceSeq uint64) (Entry, error) {
	a := jsapi.New(js)
	reqs := []jsapi.MsgGetRequest{{Seq: seq}}
	what := fmt.Sprintf("sequence %d", seq)
	if sourceSeq > 0 {
		st, err := js.Stream(ctx, dlqStream)
		if err != nil {
			return Entry{}, fmt.Errorf("stream %q: %w", dlqStream, err)
		}
		// The source's name now, then the names it had before a move
		// (the entries swept then are under those), the latest first.
		md := st.CachedInfo().Config.Metadata
		names := []string{md[MetaSource]}
		former := movedFrom(md)
		for i := len(former) - 1; i >= 0; i-- {
			names = append(names, former[i])
		}
		reqs = reqs[:0]
		for _, name := range names {
			reqs = append(reqs, jsapi.MsgGetRequest{LastFor: fmt.Sprintf("dlq.%s.%d", name, sourceSeq)})
		}
		what = fmt.Sprintf("source sequence %d", sourceSeq)
	}
	for _, req := range reqs {
		m, err := a.MsgGet(ctx, dlqStream, req)
		if errors.Is(err, jsapi.ErrNoMessage) {
			continue
		}
		if err != nil {
			return Entry{}, err
		}
		return EntryFrom(m), nil
	}
	return Entry{}, fmt.Errorf("stream %q: %w at %s", dlqStream, ErrNoSuchEntry, what)
}
