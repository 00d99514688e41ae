package events

import (
	"context"
	"errors"
	"fmt"
	"github.com/dustin/go-humanize"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/recorder"
	"github.com/jetctl/jetctl/pkg/setupresult"
	"github.com/jetctl/jetctl/pkg/streamread"
	"github.com/jetctl/jetctl/pkg/units"
)

// Defaults of the recorder's limits.
const (
	DefaultMaxAge   = 7 * 24 * time.Hour
	DefaultMaxBytes = int64(1 << 30)
	// DefaultMaxPerSubject bounds the events of one subject (one kind, of
	// one stream or consumer): a poison message NAKed in a hot loop sends
	// hundreds of thousands of NAK advisories a minute, all on one
	// subject, and without it they would push every older event and audit
	// record out of the recorder's MaxBytes.
	DefaultMaxPerSubject = int64(100_000)
)

// RecordConfig says how the recorder keeps what it captures.
type RecordConfig struct {
	// MaxAge and MaxBytes bound the recorder (the oldest events go
	// first); 0 takes the default, or an existing recorder's.
	MaxAge   time.Duration
	MaxBytes int64
	// MaxPerSubject bounds the events kept per subject (the newest);
	// 0 takes the default for a new recorder, an existing recorder's
	// otherwise.
	MaxPerSubject int64
	// Replicas of the recorder; 0 takes an existing recorder's, else 3
	// on a cluster and 1 on a single server.
	Replicas int
	DryRun   bool
	// At, if set, is called at the steps of the hand-over ("handover-
	// subscribed", "handover-adopted"): a test kills the run there.
	At func(step string)
}

// RecordResult says what the recorder captures, for how long, and what
// Record did.
type RecordResult struct {
	Stream   string   `json:"stream"`
	Subjects []string `json:"subjects"`
	// MaxAge is in seconds, as the server's stream info gives it in Go
	// duration nanoseconds; MaxAgeText says it for people ("7d").
	MaxAge     float64 `json:"max_age_seconds"`
	MaxAgeText string  `json:"max_age"`
	MaxBytes   int64   `json:"max_bytes"`
	// MaxPerSubject is the most events kept per subject (-1: no limit).
	MaxPerSubject int64                  `json:"max_per_subject"`
	Replicas      int                    `json:"replicas"`
	Changed       bool                   `json:"changed"`
	DryRun        bool                   `json:"dry_run"`
	Resources     []setupresult.Resource `json:"resources"`
	// Adopted are the DLQ captures that now read the recorder.
	Adopted []string `json:"adopted"`
	// Recovered counts the advisories the hand-over's safety net
	// published into the recorder (sent while neither stream owned their
	// subjects).
	Recovered int `json:"recovered"`
}

// Record makes the recorder, or brings an existing one to cfg, and hands
// every DLQ capture that owns its subjects over to it (handover.go). Run
// again with the same config it changes nothing. Everything that can
// refuse is checked before the first change.
func Record(ctx context.Context, js jetstream.JetStream, cfg RecordConfig) (*RecordResult, error) {
	if cfg.MaxAge < 0 || cfg.MaxBytes < 0 || cfg.MaxPerSubject < 0 || cfg.Replicas < 0 || cfg.Replicas > 5 {
		return nil, invalidf("limits must be positive and replicas between 1 and 5")
	}
	existing, err := recorder.Lookup(ctx, js)
	if errors.Is(err, recorder.ErrNotRecorder) {
		return nil, invalidf("%v; nothing was changed", err)
	}
	if err != nil {
		return nil, err
	}
	want := desired(js, existing, cfg)
	captures, err := adoptable(ctx, js)
	if err != nil {
		return nil, err
	}
	res := &RecordResult{Stream: recorder.Stream, Subjects: want.Subjects, MaxAge: want.MaxAge.Seconds(), MaxAgeText: units.FormatDuration(want.MaxAge),
		MaxBytes: want.MaxBytes, MaxPerSubject: want.MaxMsgsPerSubject, Replicas: want.Replicas, DryRun: cfg.DryRun, Resources: []setupresult.Resource{}, Adopted: []string{}}
	add := func(kind, name, action, detail string) {
		res.Resources = append(res.Resources, setupresult.Resource{Kind: kind, Name: name, Action: action, Detail: detail})
		if action != setupresult.ActionExists {
			res.Changed = true
		}
	}

	diff := ""
	if existing != nil {
		diff = configDiff(&existing.Config, want)
	}
	switch {
	case existing == nil && cfg.DryRun:
		add("stream", recorder.Stream, setupresult.ActionWouldCreate, limitsDetail(want))
	case existing == nil:
	case diff == "":
		add("stream", recorder.Stream, setupresult.ActionExists, limitsDetail(want))
	case cfg.DryRun:
		add("stream", recorder.Stream, setupresult.ActionWouldUpdate, diff)
	}
	for _, c := range captures {
		if cfg.DryRun {
			add("stream", c.Config.Name, setupresult.ActionWouldAdopt, adoptDetail(c))
		}
	}
	if cfg.DryRun {
		return res, nil
	}

	h := &handover{js: js, want: want, update: existing == nil || diff != "", captures: captures, at: cfg.At}
	if err := h.run(ctx); err != nil {
		return nil, err
	}
	switch {
	case existing == nil:
		add("stream", recorder.Stream, setupresult.ActionCreated, limitsDetail(want))
	case diff != "":
		add("stream", recorder.Stream, setupresult.ActionUpdated, diff)
	}
	for _, c := range captures {
		add("stream", c.Config.Name, setupresult.ActionAdopted, adoptDetail(c))
		res.Adopted = append(res.Adopted, c.Config.Name)
	}
	res.Recovered = h.recovered
	return res, nil
}

// desired is the recorder's configuration: cfg's limits over an existing
// recorder's, over the defaults.
func desired(js jetstream.JetStream, existing *jetstream.StreamInfo, cfg RecordConfig) *jetstream.StreamConfig {
	want := &jetstream.StreamConfig{
		Name:              recorder.Stream,
		Description:       "JetStream advisories and jetctl audit records, kept by jetctl events record",
		Subjects:          recorder.Subjects(),
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Discard:           jetstream.DiscardOld,
		MaxAge:            DefaultMaxAge,
		MaxBytes:          DefaultMaxBytes,
		MaxMsgsPerSubject: DefaultMaxPerSubject,
		Replicas:          1,
		AllowDirect:       true,
		Metadata:          map[string]string{recorder.MetaRole: recorder.Role},
	}
	if js.Conn().ConnectedClusterName() != "" {
		want.Replicas = 3
	}
	if existing != nil {
		c := existing.Config
		want.MaxAge, want.MaxBytes, want.MaxMsgsPerSubject, want.Replicas = c.MaxAge, c.MaxBytes, c.MaxMsgsPerSubject, c.Replicas
	}
	if cfg.MaxPerSubject > 0 {
		want.MaxMsgsPerSubject = cfg.MaxPerSubject
	}
	if cfg.MaxAge > 0 {
		want.MaxAge = cfg.MaxAge
	}
	if cfg.MaxBytes > 0 {
		want.MaxBytes = cfg.MaxBytes
	}
	if cfg.Replicas > 0 {
		want.Replicas = cfg.Replicas
	}
	return want
}

// configDiff names what differs between the recorder's config and want,
// "" when nothing does.
func configDiff(have, want *jetstream.StreamConfig) string {
	var d []string
	if !sameSubjects(have.Subjects, want.Subjects) {
		d = append(d, "subjects "+strings.Join(want.Subjects, ", "))
	}
	if have.MaxAge != want.MaxAge {
		d = append(d, fmt.Sprintf("max_age %s → %s", units.FormatDuration(have.MaxAge), units.FormatDuration(want.MaxAge)))
	}
	if have.MaxBytes != want.MaxBytes {
		d = append(d, fmt.Sprintf("max_bytes %s → %s", bytesText(have.MaxBytes), bytesText(want.MaxBytes)))
	}
	if have.MaxMsgsPerSubject != want.MaxMsgsPerSubject {
		d = append(d, fmt.Sprintf("max_msgs_per_subject %s → %s", countText(have.MaxMsgsPerSubject), countText(want.MaxMsgsPerSubject)))
	}
	if have.Replicas != want.Replicas {
		d = append(d, fmt.Sprintf("replicas %d → %d", have.Replicas, want.Replicas))
	}
	if have.Discard != want.Discard {
		d = append(d, "discard old")
	}
	if !have.AllowDirect {
		d = append(d, "allow_direct")
	}
	return strings.Join(d, "; ")
}

func sameSubjects(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func limitsDetail(c *jetstream.StreamConfig) string {
	return fmt.Sprintf("%s for %s, at most %s (%s per subject), %d replica%s", strings.Join(c.Subjects, ", "), units.FormatDuration(c.MaxAge),
		bytesText(c.MaxBytes), countText(c.MaxMsgsPerSubject), c.Replicas, map[bool]string{true: "", false: "s"}[c.Replicas == 1])
}

func countText(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return humanize.Comma(n)
}

func bytesText(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return units.FormatSize(n)
}

func adoptDetail(c *jetstream.StreamInfo) string {
	return fmt.Sprintf("reads %s from %s; keeps its %d advisories and the sweep's checkpoint",
		strings.Join(dlq.CaptureFilters(&c.Config), ", "), recorder.Stream, c.State.Msgs)
}

// adoptable lists the DLQ captures that own their subjects (made before
// the recorder); it refuses, naming it, any other stream that captures
// subjects the recorder needs: the server would refuse the recorder.
func adoptable(ctx context.Context, js jetstream.JetStream) ([]*jetstream.StreamInfo, error) {
	var out []*jetstream.StreamInfo
	l := js.ListStreams(ctx)
	var refuse error
	for si := range l.Info() {
		cfg := &si.Config
		if recorder.IsRecorder(cfg) || len(cfg.Subjects) == 0 {
			continue
		}
		if dlq.IsCapture(cfg) {
			out = append(out, si)
			continue
		}
		for _, s := range cfg.Subjects {
			for _, r := range recorder.Subjects() {
				if refuse == nil && streamread.SubjectsOverlap(s, r) {
					refuse = invalidf("stream %q captures %s, which the recorder captures (%s): the server refuses two streams with overlapping subjects; "+
						"remove that subject from %q (or delete it) and run again; nothing was changed", cfg.Name, s, r, cfg.Name)
				}
			}
		}
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("listing streams: %w", err)
	}
	if refuse != nil {
		return nil, refuse
	}
	slices.SortFunc(out, func(a, b *jetstream.StreamInfo) int { return strings.Compare(a.Config.Name, b.Config.Name) })
	return out, nil
}
