package dlq

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/recorder"
	"github.com/jetctl/jetctl/pkg/retry"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// A capture stream either owns its advisory subjects (made before a
// recorder existed) or, when the account has a recorder (JETCTL_EVENTS,
// `jetctl events record`), owns none and sources the recorder, filtered
// to the same subjects: the server refuses two streams with overlapping
// subjects, and one capture that both read keeps every advisory once.
// Either way it holds the advisories under their own subjects, with its
// own sequence numbers, so the sweep's durable, its ack floor and every
// dlq command read it as before.

// MetaOwnUntil, on a capture that reads the recorder, is the last
// sequence it captured itself before it was adopted: the advisories up to
// it are the capture's own (the recorder never held them).
const MetaOwnUntil = "jetctl_dlq_own_until"

// CaptureFilters are the advisory subjects a capture captures: its own
// subjects, or the filters of its source when it reads the recorder.
func CaptureFilters(cfg *jetstream.StreamConfig) []string {
	if len(cfg.Subjects) > 0 {
		return cfg.Subjects
	}
	var out []string
	for _, s := range cfg.Sources {
		if s == nil || s.Name != recorder.Stream {
			continue
		}
		if s.FilterSubject != "" {
			out = append(out, s.FilterSubject)
		}
		for _, t := range s.SubjectTransforms {
			out = append(out, t.Source)
		}
	}
	return out
}

// ReadsRecorder reports whether a capture sources the recorder.
func ReadsRecorder(cfg *jetstream.StreamConfig) bool {
	if len(cfg.Subjects) > 0 {
		return false
	}
	for _, s := range cfg.Sources {
		if s != nil && s.Name == recorder.Stream {
			return true
		}
	}
	return false
}

// OwnUntil is the last sequence a capture that reads the recorder captured
// itself (0: none); for a capture that owns its subjects, all of them.
func OwnUntil(cfg *jetstream.StreamConfig) (uint64, bool) {
	if !ReadsRecorder(cfg) {
		return 0, false
	}
	n, _ := strconv.ParseUint(cfg.Metadata[MetaOwnUntil], 10, 64)
	return n, true
}

// MetaRecorderFrom, on a capture that reads the recorder, says from which
// recorder sequence on the capture holds the advisories of each subject it
// reads: "subject@seq" pairs, space-separated. Its sources say it too,
// until --all-consumers replaces them by one that starts at the recorder's
// next sequence: the pairs keep what the capture held before.
const MetaRecorderFrom = "jetctl_dlq_recorder_from"

// RecorderFrom maps each subject a capture reads from the recorder to the
// first recorder sequence it holds of it (its sources' starts and
// MetaRecorderFrom, the earliest). Empty for a capture that owns its
// subjects.
func RecorderFrom(cfg *jetstream.StreamConfig) map[string]uint64 {
	out := map[string]uint64{}
	if !ReadsRecorder(cfg) {
		return out
	}
	keep := func(subject string, seq uint64) {
		if have, ok := out[subject]; !ok || seq < have {
			out[subject] = seq
		}
	}
	for _, src := range cfg.Sources {
		if src == nil || src.Name != recorder.Stream {
			continue
		}
		start := max(src.OptStartSeq, 1)
		if src.FilterSubject != "" {
			keep(src.FilterSubject, start)
		}
		for _, t := range src.SubjectTransforms {
			keep(t.Source, start)
		}
	}
	for _, pair := range strings.Fields(cfg.Metadata[MetaRecorderFrom]) {
		subject, seq, ok := strings.Cut(pair, "@")
		if n, err := strconv.ParseUint(seq, 10, 64); ok && err == nil && subject != "" {
			keep(subject, n)
		}
	}
	return out
}

// setRecorderFrom writes from into cfg's MetaRecorderFrom.
func setRecorderFrom(cfg *jetstream.StreamConfig, from map[string]uint64) {
	pairs := make([]string, 0, len(from))
	for subject, seq := range from {
		pairs = append(pairs, subject+"@"+strconv.FormatUint(seq, 10))
	}
	slices.Sort(pairs)
	// A copy: cfg may share its map with a stream's cached info.
	md := maps.Clone(cfg.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	md[MetaRecorderFrom] = strings.Join(pairs, " ")
	cfg.Metadata = md
}

// HoldsRecorded reports whether capture cfg holds (or, while it catches
// up, will hold) the recorder's advisory at seq on subject: a subject it
// reads from the recorder takes it, from a sequence at or before seq.
func HoldsRecorded(cfg *jetstream.StreamConfig, subject string, seq uint64) bool {
	for f, from := range RecorderFrom(cfg) {
		if seq >= from && streamread.SubjectMatches(f, subject) {
			return true
		}
	}
	return false
}

// HistoryStart is where a capture starts to take the recorder's history:
// its first sequence (the next one when it holds nothing).
func HistoryStart(rec *jetstream.StreamInfo) uint64 {
	if rec.State.Msgs == 0 {
		return rec.State.LastSeq + 1
	}
	return max(rec.State.FirstSeq, 1)
}

// IsCapture reports whether cfg is a capture stream made by dlq setup.
func IsCapture(cfg *jetstream.StreamConfig) bool {
	return cfg.Metadata[MetaRole] == roleCapture && cfg.Metadata[MetaSource] != ""
}

// RecorderSource is the source by which a capture reads filters of the
// recorder from sequence start on.
func RecorderSource(filters []string, start uint64) *jetstream.StreamSource {
	src := &jetstream.StreamSource{Name: recorder.Stream, OptStartSeq: start}
	for _, f := range filters {
		src.SubjectTransforms = append(src.SubjectTransforms, jetstream.SubjectTransformConfig{Source: f})
	}
	return src
}

// ReadRecorder makes cfg, a capture, read filters of the recorder from
// start on instead of owning subjects (its other sources stay).
func ReadRecorder(cfg *jetstream.StreamConfig, filters []string, start uint64) {
	var kept []*jetstream.StreamSource
	for _, s := range cfg.Sources {
		if s != nil && s.Name != recorder.Stream {
			kept = append(kept, s)
		}
	}
	cfg.Subjects = nil
	cfg.Sources = append(kept, RecorderSource(filters, start))
}

// usableRecorder returns the recorder when captures should read it: it
// exists, was made by jetctl, and owns the consumer advisories. A
// recorder whose hand-over has not finished (see pkg/events) does not own
// them yet; a stream of that name that jetctl did not make is ignored.
func usableRecorder(ctx context.Context, js jetstream.JetStream) (*jetstream.StreamInfo, error) {
	info, err := recorder.Find(ctx, js)
	switch {
	case err != nil:
		return nil, err
	case info == nil || !recorder.Owns(&info.Config, recorder.ConsumerFamily):
		return nil, nil
	}
	return info, nil
}

// nextSourceSeq is the recorder sequence from which a capture that reads
// it goes on when its filters change: the server treats a source with
// other filters as a new source, which starts at its OptStartSeq. It
// starts after the last advisory the capture holds from the recorder (the
// Nats-Stream-Source header names its sequence there), so that nothing
// already sourced comes twice and nothing in between is missed.
func nextSourceSeq(ctx context.Context, js jetstream.JetStream, info *jetstream.StreamInfo) (uint64, error) {
	start := uint64(1)
	for _, s := range info.Config.Sources {
		if s != nil && s.Name == recorder.Stream {
			start = max(start, s.OptStartSeq)
		}
	}
	last := info.State.LastSeq
	if own, _ := OwnUntil(&info.Config); info.State.Msgs == 0 || last <= own {
		return start, nil
	}
	m, err := jsapi.New(js).MsgGet(ctx, info.Config.Name, jsapi.MsgGetRequest{Seq: last})
	if errors.Is(err, jsapi.ErrNoMessage) {
		return start, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stream %q: %w", info.Config.Name, err)
	}
	if seq := recorder.SourceHeaderSeq(m.Header.Get("Nats-Stream-Source")); seq > 0 {
		return max(start, seq+1), nil
	}
	return start, nil
}

// caughtUpWithin bounds how long caughtUp waits for the capture's sources.
const caughtUpWithin = 10 * time.Second

// caughtUp waits until capture holds every advisory the recorder holds on
// subjects (exact subjects, read from the recorder by its sources): the
// last one on each, in the recorder, is the last one on it in the capture
// (the Nats-Stream-Source header names its recorder sequence). It returns
// the recorder's next sequence as it was before the check: a source from
// there misses none of theirs. A source that does not catch up within
// caughtUpWithin is an error: nothing was changed.
func caughtUp(ctx context.Context, js jetstream.JetStream, capture *jetstream.StreamInfo, subjects []string) (uint64, error) {
	a := jsapi.New(js)
	rec, err := js.Stream(ctx, recorder.Stream)
	if err != nil {
		return 0, fmt.Errorf("stream %q: %w", recorder.Stream, err)
	}
	next := rec.CachedInfo().State.LastSeq + 1
	name := capture.Config.Name
	for deadline := time.Now().Add(caughtUpWithin); ; {
		behind := ""
		for _, s := range subjects {
			last, err := a.MsgGet(ctx, recorder.Stream, jsapi.MsgGetRequest{LastFor: s})
			if errors.Is(err, jsapi.ErrNoMessage) {
				continue
			}
			if err != nil {
				return 0, fmt.Errorf("stream %q: %w", recorder.Stream, err)
			}
			held, err := a.MsgGet(ctx, name, jsapi.MsgGetRequest{LastFor: s})
			switch {
			case errors.Is(err, jsapi.ErrNoMessage):
			case err != nil:
				return 0, fmt.Errorf("stream %q: %w", name, err)
			default:
				if recorder.SourceHeaderSeq(held.Header.Get("Nats-Stream-Source")) >= last.Seq {
					continue
				}
			}
			if HoldsRecorded(&capture.Config, s, last.Seq) {
				behind = s
			}
		}
		if behind == "" {
			return next, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("stream %q: it has not copied the recorder's advisories on %s yet (it reads %s); nothing was changed: run again", name, behind, recorder.Stream)
		}
		if err := retry.Sleep(ctx, 50*time.Millisecond); err != nil {
			return 0, err
		}
	}
}

// captureDetail says what a capture captures, for setup's table: its
// subjects, or the recorder's it reads.
func captureDetail(cfg *jetstream.StreamConfig) string {
	if ReadsRecorder(cfg) {
		return "from " + recorder.Stream + ": " + strings.Join(CaptureFilters(cfg), ", ")
	}
	return strings.Join(cfg.Subjects, ", ")
}

// FiltersCover reports whether capture filters (CaptureFilters) take the
// dead-letter advisories of consumer of the source stream: the one answer
// to "are this consumer's dead letters captured" for consumer health and
// lint.
func FiltersCover(filters []string, source, consumer string) bool {
	for _, advisory := range AdvisorySubjects(source, []string{consumer}) {
		for _, f := range filters {
			if streamread.SubjectMatches(f, advisory) {
				return true
			}
		}
	}
	return false
}

// Covers reports whether cfg is a capture (made by dlq setup) that keeps
// the dead letters of consumer of stream.
func Covers(cfg *jetstream.StreamConfig, stream, consumer string) bool {
	return IsCapture(cfg) && cfg.Metadata[MetaSource] == stream && FiltersCover(CaptureFilters(cfg), stream, consumer)
}

// RecordedDeadLetters counts, by subject, the dead-letter advisories
// (MAX_DELIVERIES and MSG_TERMINATED) the recorder holds of stream's
// consumers ("*": of every stream's), from one info request filtered by
// the server. Empty when rec is nil.
func RecordedDeadLetters(ctx context.Context, js jetstream.JetStream, rec *jetstream.StreamInfo, stream string) (map[string]uint64, error) {
	out := map[string]uint64{}
	if rec == nil {
		return out, nil
	}
	st, err := js.Stream(ctx, rec.Config.Name)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", rec.Config.Name, err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(advisoryPrefix+"*."+stream+".*"))
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", rec.Config.Name, err)
	}
	for subject, n := range info.State.Subjects {
		if IsDeadLetterSubject(subject) {
			out[subject] = n
		}
	}
	return out, nil
}

const advisoryPrefix = "$JS.EVENT.ADVISORY.CONSUMER."

// IsDeadLetterSubject reports whether subject is a consumer's
// MAX_DELIVERIES or MSG_TERMINATED advisory subject.
func IsDeadLetterSubject(subject string) bool {
	kind, _, _ := strings.Cut(strings.TrimPrefix(subject, advisoryPrefix), ".")
	return strings.HasPrefix(subject, advisoryPrefix) && (kind == "MAX_DELIVERIES" || kind == "MSG_TERMINATED")
}

// countRecorded sums counts over the subjects that match one of want and
// none of except.
func countRecorded(counts map[string]uint64, want, except []string) int {
	n := 0
	for subject, c := range counts {
		if len(want) > 0 && streamread.SubjectMatchesAny(want, subject) && (len(except) == 0 || !streamread.SubjectMatchesAny(except, subject)) {
			n += int(c)
		}
	}
	return n
}
