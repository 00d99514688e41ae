package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/recorder"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// The one dead-letter count. A consumer's dead letters are the messages
// it gave up on (MaxDeliver reached, or terminated by its worker) that
// still wait for someone, each counted once by its stream sequence, from
// every place jetctl keeps them, the furthest along first:
//
//  1. in the DLQ, swept and not yet redriven or purged;
//  2. captured (`jetctl dlq setup`) and not yet swept: the capture's
//     advisories after the sweep's checkpoint;
//  3. recorded only: the dead-letter advisories the recorder
//     (JETCTL_EVENTS, `jetctl events record`) holds that no capture holds.
//     No sweep has taken such a dead letter, so it waits while it can
//     still be taken: its message is still stored at that sequence (a
//     later ack removed it from a workqueue or interest stream, a limit
//     from any), the consumer has not been rewound before it (it would be
//     delivered again: not dead) and is the one that gave up on it (not an
//     earlier consumer of that name). On a limits stream a message
//     processed after its advisory cannot be told from one that was not:
//     it waits until it leaves the stream or is swept. `jetctl dlq setup`
//     captures the recorder's history and the next sweep takes them
//     (docs/dlq.md).
//
// The recorder is read once per listing, not per consumer: one info
// request for its per-subject counts, and where a consumer has recorded
// dead letters no capture holds, one read per advisory kind, filtered by
// the server (a watch reads only what is new since its last poll).

// MaxDLQScan is the largest DLQ whose entries are read to count each
// consumer's; past it, every entry counts for each consumer with dead
// letters captured.
const MaxDLQScan = 10000

// maxUnsweptScan bounds the unswept advisories read per consumer, and the
// gets that look whether recorded dead letters are still stored, per
// listing.
const maxUnsweptScan = 1000

// maxRecordedScan bounds the recorder's dead-letter advisories read per
// listing; past it the count is a lower bound (in_dlq_exact false).
const maxRecordedScan = 10000

const advisoryPrefix = "$JS.EVENT.ADVISORY.CONSUMER."

// deadPlace is where a dead letter waits; a larger one is further along.
type deadPlace uint8

const (
	placeRecorded deadPlace = iota + 1
	placeUnswept
	placeDLQ
)

// streamDead is what one source stream's consumers have of dead letters.
type streamDead struct {
	source string
	// capture is the advisory capture's config (nil without one), and
	// subjects are its filters.
	capture  *jetstream.StreamConfig
	subjects []string
	dlq      string
	// recorder names the recorder the recorded dead letters come from
	// ("" without one).
	recorder string
	// exact is false when a bound was reached: the DLQ too large to read
	// (dlqAll, its message count, then counts for each consumer with
	// dead letters captured), or the recorder's advisories or the gets
	// that check them.
	exact  bool
	dlqAll int64
	// captured are the consumers with advisories in the capture.
	captured map[string]bool
	// byConsumer holds each consumer's dead letters by stream sequence.
	byConsumer map[string]map[uint64]deadPlace
}

func newStreamDead(source string) *streamDead {
	return &streamDead{source: source, exact: true, captured: map[string]bool{}, byConsumer: map[string]map[uint64]deadPlace{}}
}

// add notes consumer's dead letter at seq in place, unless it is known
// further along.
func (d *streamDead) add(consumer string, seq uint64, p deadPlace) {
	m := d.byConsumer[consumer]
	if m == nil {
		m = map[uint64]deadPlace{}
		d.byConsumer[consumer] = m
	}
	if p > m[seq] {
		m[seq] = p
	}
}

// covers reports whether the capture takes consumer's advisories.
func (d *streamDead) covers(consumer string) bool {
	return d.capture != nil && dlq.FiltersCover(d.subjects, d.source, consumer)
}

// of returns consumer's dead letters that wait, and false when nothing
// jetctl reads would know of them: no capture covers it, no recorder
// records its advisories, and the DLQ holds none of its.
func (d *streamDead) of(consumer string) (deadWaiting, bool) {
	set := d.byConsumer[consumer]
	if !d.covers(consumer) && d.recorder == "" && len(set) == 0 {
		return deadWaiting{}, false
	}
	w := deadWaiting{dlq: d.dlq, exact: d.exact, recorder: d.recorder}
	for _, p := range set {
		switch p {
		case placeDLQ:
			w.inDLQ++
		case placeUnswept:
			w.unswept++
		case placeRecorded:
			w.recorded++
		}
	}
	if d.dlqAll > 0 && d.captured[consumer] {
		w.inDLQ = d.dlqAll
	}
	w.covered = d.covers(consumer)
	return w, true
}

// deadLetters finds, for the streams of states, each consumer's dead
// letters that wait (the rules above): from the capture and DLQ of each
// stream in captures (source stream → capture), and from the recorder
// rec (nil: none). A stream whose dead letters could not all be read is
// in the second map, with why.
func deadLetters(r *reads, js jetstream.JetStream, client *jsapi.Client, states []*State, infos, captures map[string]*jetstream.StreamInfo, rec *jetstream.StreamInfo, workers int, cache *LagCache) (map[string]*streamDead, map[string]string) {
	sources := make([]string, 0, len(captures))
	for source := range captures {
		sources = append(sources, source)
	}
	found := make([]*streamDead, len(sources))
	errs := make([]error, len(sources))
	var letters []recordedLetter
	var recExact bool
	var recErr error
	parallel(len(sources)+1, workers, func(i int) {
		if i == len(sources) {
			letters, recExact, recErr = recordedDead(r, js, client, rec, states, captures, cache)
			return
		}
		found[i], errs[i] = capturedDead(r, js, client, sources[i], captures[sources[i]], cache)
	})
	out, failed := map[string]*streamDead{}, map[string]string{}
	for i, d := range found {
		if errs[i] != nil {
			failed[sources[i]] = errs[i].Error()
		} else if d != nil {
			out[sources[i]] = d
		}
	}
	if rec == nil {
		return out, failed
	}
	if recErr != nil {
		// Every listed stream's count lacks the recorder's part.
		for _, s := range states {
			if _, ok := failed[s.Stream]; !ok {
				failed[s.Stream] = recErr.Error()
			}
		}
		return out, failed
	}
	for _, s := range states {
		if _, ok := failed[s.Stream]; ok {
			continue
		}
		if out[s.Stream] == nil {
			out[s.Stream] = newStreamDead(s.Stream)
		}
		out[s.Stream].recorder = rec.Config.Name
		if !recExact {
			out[s.Stream].exact = false
		}
	}
	for _, l := range letters {
		if d := out[l.stream]; d != nil && d.recorder != "" {
			d.add(l.consumer, l.seq, placeRecorded)
		}
	}
	stillStored(r, client, out, infos, cache)
	return out, failed
}

// capturedDead reads source's capture (one info request, and the
// advisories after the sweep's checkpoint) and its DLQ.
func capturedDead(r *reads, js jetstream.JetStream, client *jsapi.Client, source string, capture *jetstream.StreamInfo, cache *LagCache) (*streamDead, error) {
	name := capture.Config.Name
	ctx := r.of(name)
	fail := func(stream string, ctx context.Context, err error) error {
		return fmt.Errorf("stream %q: %s", stream, readError(ctx, err))
	}
	// One info request, with the advisories' subjects counted.
	var info struct {
		jetstream.StreamInfo
		Error *jetstream.APIError `json:"error,omitempty"`
	}
	if err := client.Request(ctx, "STREAM.INFO."+name, map[string]string{"subjects_filter": advisoryPrefix + "*." + source + ".*"}, &info); err != nil {
		return nil, fail(name, ctx, err)
	}
	if info.Error != nil {
		if info.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound {
			return nil, nil
		}
		return nil, fail(name, ctx, info.Error)
	}
	d := newStreamDead(source)
	d.capture, d.subjects, d.dlq = &info.Config, dlq.CaptureFilters(&info.Config), dlq.DefaultNames(source, "").DLQ
	if m := info.Config.Metadata[dlq.MetaDLQ]; m != "" {
		d.dlq = m
	}
	for subject, n := range info.State.Subjects {
		kind, rest, _ := strings.Cut(strings.TrimPrefix(subject, advisoryPrefix), ".")
		if n > 0 && (kind == "MAX_DELIVERIES" || kind == "MSG_TERMINATED") {
			d.captured[strings.TrimPrefix(rest, source+".")] = true
		}
	}
	if len(d.captured) > 0 {
		if err := unsweptDead(ctx, client, name, source, d); err != nil {
			return nil, fail(name, ctx, err)
		}
	}
	// The DLQ's entries, by consumer.
	ctx = r.of(d.dlq)
	dst, err := js.Stream(ctx, d.dlq)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return d, nil
	}
	if err != nil {
		return nil, fail(d.dlq, ctx, err)
	}
	ds := dst.CachedInfo().State
	if ds.Msgs == 0 {
		return d, nil
	}
	key := fmt.Sprintf("%s %d %d %d", d.dlq, ds.FirstSeq, ds.LastSeq, ds.Msgs)
	entries, ok := cache.dlqEntries(key)
	if !ok && ds.Msgs > MaxDLQScan {
		d.exact, d.dlqAll = false, int64(ds.Msgs)
		return d, nil
	}
	if !ok {
		entries = map[string][]uint64{}
		err := dlq.Each(ctx, js, d.dlq, dlq.Select{}, func(e dlq.Entry) error {
			entries[e.Consumer] = append(entries[e.Consumer], e.SourceSeq)
			return nil
		})
		if err != nil {
			return nil, fail(d.dlq, ctx, err)
		}
		cache.putDLQEntries(key, entries)
	}
	for consumer, seqs := range entries {
		for _, seq := range seqs {
			d.add(consumer, seq, placeDLQ)
		}
	}
	return d, nil
}

// unsweptDead notes the dead letters captured after the sweep's
// checkpoint for each consumer with advisories captured: the ack floor of
// the sweep durable that reads its advisories. Those the server sends of
// its own when it deletes a pending message are no dead letters; the
// capture's older advisories (kept for its retention, 7 days by default)
// are history, not dead letters that wait.
func unsweptDead(ctx context.Context, client *jsapi.Client, capture, source string, d *streamDead) error {
	type checkpoint struct {
		floor   uint64
		filters []string
	}
	var checkpoints []checkpoint
	durables, err := (&api{client: client}).listConsumers(ctx, capture)
	if err != nil {
		return err
	}
	for _, c := range durables {
		if strings.HasPrefix(c.Consumer, dlq.SweepDurable) && c.Info != nil {
			checkpoints = append(checkpoints, checkpoint{c.AckFloorStreamSeq, c.FilterSubjects})
		}
	}
	for consumer := range d.captured {
		var from uint64
		subject := advisoryPrefix + "*." + source + "." + consumer
		for _, c := range checkpoints {
			if len(c.filters) == 0 || filtersOverlap(c.filters, []string{subject}) {
				from = max(from, c.floor)
			}
		}
		seq := from + 1
		for i := 0; i < maxUnsweptScan; i++ {
			m, err := client.MsgGet(ctx, capture, jsapi.MsgGetRequest{Seq: seq, NextFor: subject})
			if errors.Is(err, jsapi.ErrNoMessage) {
				break
			}
			if err != nil {
				return err
			}
			seq = m.Seq + 1
			a, err := dlq.ParseAdvisory(m.Data)
			if err != nil || a.ServerCaused() || a.Stream != source {
				continue
			}
			d.add(consumer, a.StreamSeq, placeUnswept)
		}
	}
	return nil
}

// recordedLetter is a dead letter the recorder holds and no capture does.
type recordedLetter struct {
	stream, consumer string
	seq              uint64
}

// recordedDead reads the recorder's dead-letter advisories of the
// consumers in states that no capture holds (dlq.HoldsRecorded), and
// returns those of the consumer that gave up on them (stored since it
// was created) that it has not been rewound before. exact is false when
// more than maxRecordedScan were there to read.
func recordedDead(r *reads, js jetstream.JetStream, client *jsapi.Client, rec *jetstream.StreamInfo, states []*State, captures map[string]*jetstream.StreamInfo, cache *LagCache) ([]recordedLetter, bool, error) {
	if rec == nil {
		return nil, true, nil
	}
	ctx := r.of(rec.Config.Name)
	fail := func(err error) error {
		return fmt.Errorf("stream %q: %s", rec.Config.Name, readError(ctx, err))
	}
	byName := map[string]*State{}
	streams := map[string]bool{}
	for _, s := range states {
		if s.Info != nil && s.Replication == nil {
			byName[s.Stream+" "+s.Consumer] = s
			streams[s.Stream] = true
		}
	}
	if len(byName) == 0 {
		return nil, true, nil
	}
	token := "*"
	if len(streams) == 1 {
		for s := range streams {
			token = s
		}
	}
	var info struct {
		jetstream.StreamInfo
		Error *jetstream.APIError `json:"error,omitempty"`
	}
	if err := client.Request(ctx, "STREAM.INFO."+rec.Config.Name, map[string]string{"subjects_filter": advisoryPrefix + "*." + token + ".*"}, &info); err != nil {
		return nil, false, fail(err)
	}
	if info.Error != nil {
		return nil, false, fail(info.Error)
	}
	first := max(info.State.FirstSeq, 1)
	// The subjects to read: a listed consumer's dead-letter advisories
	// that a capture does not hold from the record's start on.
	candidates := map[string]uint64{}
	kinds := map[string][]string{}
	for subject, n := range info.State.Subjects {
		kind, stream, consumer, ok := deadLetterSubject(subject)
		if !ok || n == 0 || byName[stream+" "+consumer] == nil {
			continue
		}
		if c := captures[stream]; c != nil && dlq.HoldsRecorded(&c.Config, subject, first) {
			continue
		}
		candidates[subject] = n
		kinds[kind] = append(kinds[kind], subject)
	}
	var out []recordedLetter
	exact := true
	for kind, subjects := range kinds {
		filter := readFilter(kind, subjects)
		letters, complete, err := readRecorded(ctx, js, rec, filter, first, info.State.LastSeq, candidates, cache)
		if err != nil {
			return nil, false, fail(err)
		}
		exact = exact && complete
		for _, l := range letters {
			s := byName[l.stream+" "+l.consumer]
			if s == nil || candidates[l.subject] == 0 || l.serverCaused {
				continue
			}
			if c := captures[l.stream]; c != nil && dlq.HoldsRecorded(&c.Config, l.subject, l.recSeq) {
				continue
			}
			ci := s.Info
			// An earlier consumer of that name gave up on it; or this
			// one was rewound before it and will deliver it again.
			if l.at.Before(ci.Created) || l.seq > ci.Delivered.Stream {
				continue
			}
			out = append(out, recordedLetter{stream: l.stream, consumer: l.consumer, seq: l.seq})
		}
	}
	return out, exact, nil
}

// deadLetterSubject splits a dead-letter advisory subject.
func deadLetterSubject(subject string) (kind, stream, consumer string, ok bool) {
	if !dlq.IsDeadLetterSubject(subject) {
		return "", "", "", false
	}
	parts := strings.Split(strings.TrimPrefix(subject, advisoryPrefix), ".")
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// readFilter is the one subject filter, for the server, that reads every
// subject of one kind: the subject itself, the kind's subjects of one
// stream, or all of the kind.
func readFilter(kind string, subjects []string) string {
	if len(subjects) == 1 {
		return subjects[0]
	}
	_, stream, _, _ := deadLetterSubject(subjects[0])
	for _, s := range subjects[1:] {
		if _, other, _, _ := deadLetterSubject(s); other != stream {
			return advisoryPrefix + kind + ".>"
		}
	}
	return advisoryPrefix + kind + "." + stream + ".*"
}

// recordedAdvisory is a dead-letter advisory as read from the recorder.
type recordedAdvisory struct {
	recSeq           uint64
	at               time.Time
	subject          string
	stream, consumer string
	seq              uint64
	serverCaused     bool
}

// errEnoughRecorded ends a read of the recorder at maxRecordedScan.
var errEnoughRecorded = errors.New("enough")

// readRecorded reads filter's advisories from the recorder, first..last,
// with the server filtering (batched direct gets): what the cache holds
// from an earlier call, and what came since. It checks what it holds
// against the recorder's per-subject counts (counts), and reads all again
// when they differ (the per-subject limit removed some in the middle).
// complete is false at maxRecordedScan.
func readRecorded(ctx context.Context, js jetstream.JetStream, rec *jetstream.StreamInfo, filter string, first, last uint64, counts map[string]uint64, cache *LagCache) ([]recordedAdvisory, bool, error) {
	held, from := cache.recorded(filter, first)
	for attempt := 0; attempt < 2; attempt++ {
		reader := streamread.ReaderGet
		if rec.Config.AllowDirect {
			reader = streamread.ReaderDirect
		}
		rng := streamread.Range{Stream: rec.Config.Name, First: max(from, first), Last: last, Subjects: []string{filter}, Reader: reader}
		complete := true
		err := streamread.Read(ctx, js, rng, func(m *envelope.Message) error {
			if len(held) >= maxRecordedScan {
				complete = false
				return errEnoughRecorded
			}
			_, stream, consumer, ok := deadLetterSubject(m.Subject)
			if !ok {
				return nil
			}
			a := recordedAdvisory{recSeq: m.Seq, at: m.Time, subject: m.Subject, stream: stream, consumer: consumer}
			if adv, err := dlq.ParseAdvisory(m.Data); err == nil {
				a.seq, a.serverCaused = adv.StreamSeq, adv.ServerCaused()
			}
			held = append(held, a)
			return nil
		})
		if err != nil && !errors.Is(err, errEnoughRecorded) {
			return nil, false, err
		}
		if !complete {
			return held, false, nil
		}
		// What is held matches the recorder's counts of the subjects the
		// filter reads: complete.
		got := map[string]uint64{}
		for _, a := range held {
			got[a.subject]++
		}
		same := true
		for subject, n := range counts {
			if streamread.SubjectMatches(filter, subject) && got[subject] != n {
				same = false
			}
		}
		if same || attempt == 1 {
			cache.putRecorded(filter, last, held)
			return held, true, nil
		}
		held, from = nil, first
	}
	return held, true, nil
}

// stillStored drops the recorded dead letters whose message is no longer
// stored (a sequence below the stream's first, or a get that finds
// nothing), up to maxUnsweptScan gets a listing; past it the rest count,
// and the count is a lower bound no more (exact false). A message found
// gone stays gone (sequences are not used again): the LagCache keeps it.
func stillStored(r *reads, client *jsapi.Client, dead map[string]*streamDead, infos map[string]*jetstream.StreamInfo, cache *LagCache) {
	gets := 0
	for stream, d := range dead {
		var firstSeq uint64
		if si := infos[stream]; si != nil {
			firstSeq = si.State.FirstSeq
		}
		ctx := r.of(stream)
		for _, set := range d.byConsumer {
			for seq, p := range set {
				if p != placeRecorded {
					continue
				}
				switch {
				case seq < firstSeq || cache.gone(stream, seq):
					delete(set, seq)
					continue
				case gets >= maxUnsweptScan:
					d.exact = false
					continue
				}
				gets++
				_, err := client.MsgGet(ctx, stream, jsapi.MsgGetRequest{Seq: seq})
				switch {
				case errors.Is(err, jsapi.ErrNoMessage):
					cache.putGone(stream, seq)
					delete(set, seq)
				case err != nil:
					// Unknown: it counts, as a dead letter may.
					d.exact = false
				}
			}
		}
	}
}

// usableRecorder is rec when it records the consumer advisories (the
// hand-over of the DLQ captures has finished), else nil.
func usableRecorder(rec *jetstream.StreamInfo) *jetstream.StreamInfo {
	if rec == nil || !recorder.Owns(&rec.Config, recorder.ConsumerFamily) {
		return nil
	}
	return rec
}
