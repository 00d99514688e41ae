package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/recorder"
	"github.com/jetctl/jetctl/pkg/retry"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// The hand-over of DLQ captures to the recorder.
//
// A DLQ capture made before the recorder owns its subjects
// ($JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<S>.<C>, ...), which fall in
// the recorder's $JS.EVENT.ADVISORY.CONSUMER.>; the server refuses two
// streams with overlapping subjects, so there is a moment when neither
// owns them, and an advisory the server sends then is stored by nobody.
// The safety net closes it:
//
//  1. The recorder is made (or updated) without the consumer family.
//  2. A core NATS subscription on every adopted capture's subjects (the
//     net) starts, confirmed by a flush: from here every advisory on them
//     reaches the net, whoever else stores it.
//  3. Each capture drops its subjects and sources the recorder on the same
//     filters, from the recorder's next sequence; it keeps its messages
//     and sequence numbers, so the sweep's durable and its ack floor (the
//     checkpoint) stay valid. Its metadata notes the last sequence it
//     captured itself (dlq.MetaOwnUntil): the timeline reads those from
//     the capture.
//  4. The recorder takes the consumer family.
//  5. After a grace for advisories already on their way, the net stops.
//  6. Every advisory the net received that neither the recorder (from the
//     sequence of step 3) nor the capture (its own, since step 2) holds
//     is published into the recorder, marked with Jetctl-Events-Recovered
//     and deduplicated on its id; the capture gets it from there.
//
// The residual risk: a run killed between steps 3 and 6 loses what the
// net held. Run again, Record finishes the hand-over (adopts what is left,
// gives the recorder the family), but advisories sent in the gap are gone.

// netGrace is how long the net stays after the recorder owns the
// subjects: an advisory the server queued before is still delivered to
// whoever was subscribed when it was sent.
const netGrace = time.Second

// maxNet bounds the advisories the net keeps; past it, the rest are
// counted, not kept.
const maxNet = 100_000

type handover struct {
	js        jetstream.JetStream
	want      *jetstream.StreamConfig
	update    bool
	captures  []*jetstream.StreamInfo
	at        func(string)
	recovered int
}

func (h *handover) step(name string) {
	if h.at != nil {
		h.at(name)
	}
}

func (h *handover) run(ctx context.Context) error {
	if len(h.captures) == 0 {
		if !h.update {
			return nil
		}
		return h.putRecorder(ctx, h.want)
	}
	// 1.
	partial := *h.want
	partial.Subjects = slices.DeleteFunc(slices.Clone(h.want.Subjects), func(s string) bool { return s == recorder.ConsumerFamily })
	if err := h.putRecorder(ctx, &partial); err != nil {
		return err
	}
	// 2.
	n, err := h.startNet()
	if err != nil {
		return err
	}
	defer n.stop()
	h.step("handover-subscribed")
	// 3.
	rec, err := h.js.Stream(ctx, recorder.Stream)
	if err != nil {
		return fmt.Errorf("stream %q: %w", recorder.Stream, err)
	}
	start := rec.CachedInfo().State.LastSeq + 1
	own := map[string][2]uint64{}
	for _, c := range h.captures {
		until, err := h.adopt(ctx, c, start)
		if err != nil {
			return err
		}
		own[c.Config.Name] = [2]uint64{c.State.LastSeq + 1, until}
	}
	h.step("handover-adopted")
	// 4.
	if err := h.putRecorder(ctx, h.want); err != nil {
		return err
	}
	// 5.
	if err := h.js.Conn().Flush(); err != nil {
		return fmt.Errorf("safety net: %w", err)
	}
	if err := retry.Sleep(ctx, netGrace); err != nil {
		return err
	}
	n.stop()
	// 6.
	return h.recover(ctx, n, start, own)
}

// putRecorder creates the recorder, or updates it to want.
func (h *handover) putRecorder(ctx context.Context, want *jetstream.StreamConfig) error {
	if _, err := h.js.CreateOrUpdateStream(ctx, *want); err != nil {
		return fmt.Errorf("stream %q: %w", recorder.Stream, err)
	}
	return nil
}

// adopt makes capture c read the recorder from start, and returns the
// last sequence it captured itself.
func (h *handover) adopt(ctx context.Context, c *jetstream.StreamInfo, start uint64) (uint64, error) {
	name := c.Config.Name
	s, err := h.js.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("stream %q: %w", name, err)
	}
	cfg := s.CachedInfo().Config
	guess := s.CachedInfo().State.LastSeq
	dlq.ReadRecorder(&cfg, dlq.CaptureFilters(&c.Config), start)
	// The timeline reads what the capture captured itself with direct
	// gets: a consumer would be one more event in the recorder.
	cfg.AllowDirect = true
	cfg.Metadata = maps(cfg.Metadata, dlq.MetaOwnUntil, strconv.FormatUint(guess, 10))
	if _, err := h.js.UpdateStream(ctx, cfg); err != nil {
		return 0, fmt.Errorf("stream %q: reading the recorder: %w", name, err)
	}
	// Advisories it captured between the look and the update: the
	// last sequence it captured itself is its last now (nothing comes
	// from the recorder before step 4).
	s, err = h.js.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("stream %q: %w", name, err)
	}
	last := s.CachedInfo().State.LastSeq
	if last != guess {
		cfg = s.CachedInfo().Config
		cfg.Metadata = maps(cfg.Metadata, dlq.MetaOwnUntil, strconv.FormatUint(last, 10))
		if _, err := h.js.UpdateStream(ctx, cfg); err != nil {
			return 0, fmt.Errorf("stream %q: %w", name, err)
		}
	}
	return last, nil
}

func maps(m map[string]string, k, v string) map[string]string {
	out := map[string]string{}
	for mk, mv := range m {
		out[mk] = mv
	}
	out[k] = v
	return out
}

// safetyNet is the safety net: what a core subscription on the adopted
// captures' subjects received.
type safetyNet struct {
	mu      sync.Mutex
	subs    []*nats.Subscription
	got     []*nats.Msg
	dropped int
}

func (h *handover) startNet() (*safetyNet, error) {
	n := &safetyNet{}
	nc := h.js.Conn()
	for _, c := range h.captures {
		for _, f := range dlq.CaptureFilters(&c.Config) {
			sub, err := nc.Subscribe(f, n.receive)
			if err != nil {
				n.stop()
				return nil, fmt.Errorf("safety net on %s: %w", f, err)
			}
			n.subs = append(n.subs, sub)
		}
	}
	if err := nc.Flush(); err != nil {
		n.stop()
		return nil, fmt.Errorf("safety net: %w", err)
	}
	return n, nil
}

func (n *safetyNet) receive(m *nats.Msg) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.got) >= maxNet {
		n.dropped++
		return
	}
	n.got = append(n.got, m)
}

func (n *safetyNet) stop() {
	n.mu.Lock()
	subs := n.subs
	n.subs = nil
	n.mu.Unlock()
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
}

// recover publishes into the recorder what the net received and nobody
// holds: not the recorder from start on, not the capture's own
// advisories since the net started (own: capture → [first, last]).
func (h *handover) recover(ctx context.Context, n *safetyNet, start uint64, own map[string][2]uint64) error {
	n.mu.Lock()
	got := n.got
	n.mu.Unlock()
	if len(got) == 0 {
		return nil
	}
	held := map[string]bool{}
	var filters []string
	for _, c := range h.captures {
		filters = append(filters, dlq.CaptureFilters(&c.Config)...)
	}
	if err := readIDs(ctx, h.js, recorder.Stream, start, 0, filters, held); err != nil {
		return err
	}
	for name, r := range own {
		if r[1] >= r[0] {
			if err := readIDs(ctx, h.js, name, r[0], r[1], nil, held); err != nil {
				return err
			}
		}
	}
	for _, m := range got {
		id := advisoryID(m.Data)
		if id == "" || held[id] {
			continue
		}
		held[id] = true
		msg := nats.NewMsg(m.Subject)
		msg.Data = m.Data
		msg.Header.Set(HeaderRecovered, h.captureOf(m.Subject))
		msg.Header.Set(jetstream.MsgIDHeader, "jetctl-recovered:"+id)
		if _, err := h.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(recorder.Stream)); err != nil {
			return fmt.Errorf("safety net: publishing the advisory %s into %q: %w", id, recorder.Stream, err)
		}
		h.recovered++
	}
	if n.dropped > 0 {
		return fmt.Errorf("safety net: %d advisories sent during the hand-over were more than it keeps (%d) and may be missing", n.dropped, maxNet)
	}
	return nil
}

// captureOf names the adopted capture whose filters match subject.
func (h *handover) captureOf(subject string) string {
	for _, c := range h.captures {
		if streamread.SubjectMatchesAny(dlq.CaptureFilters(&c.Config), subject) {
			return c.Config.Name
		}
	}
	return recorder.Stream
}

// readIDs adds to ids the advisory ids stream holds from first to last
// (0: its end) on filters (nil: all).
func readIDs(ctx context.Context, js jetstream.JetStream, stream string, first, last uint64, filters []string, ids map[string]bool) error {
	for _, f := range orAll(filters) {
		r, err := streamread.Resolve(ctx, js, streamread.Config{Stream: stream, FromSeq: first, ToSeq: last, Subjects: subjectsOf(f), Reader: streamread.ReaderDirect})
		if err != nil {
			return fmt.Errorf("stream %q: %w", stream, err)
		}
		err = streamread.Read(ctx, js, r, func(m *envelope.Message) error {
			if id := advisoryID(m.Data); id != "" {
				ids[id] = true
			}
			return nil
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("stream %q: %w", stream, err)
		}
	}
	return nil
}

func orAll(filters []string) []string {
	if len(filters) == 0 {
		return []string{""}
	}
	return filters
}

func subjectsOf(f string) []string {
	if f == "" {
		return nil
	}
	return []string{f}
}

func advisoryID(data []byte) string {
	var a struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(data, &a) != nil {
		return ""
	}
	return a.ID
}
