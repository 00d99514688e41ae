package consumer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		t    Thresholds
		want string // "" valid
	}{
		{"nothing given", Thresholds{}, ""},
		{"the defaults", DefaultThresholds, ""},
		{"both levels, in order", Thresholds{Behind: time.Minute, BehindCritical: 5 * time.Minute, Stall: time.Minute, StallCritical: time.Hour}, ""},
		{"equal levels", Thresholds{Behind: time.Minute, BehindCritical: time.Minute}, ""},
		// A warning level not given comes down to the critical level.
		{"critical alone, below the default warning", Thresholds{BehindCritical: 30 * time.Second, StallCritical: time.Second}, ""},
		{"lag warning above critical", Thresholds{Behind: 10 * time.Minute, BehindCritical: 5 * time.Minute},
			"--lag-warning 10m is above --lag-critical 5m"},
		{"stall warning above critical", Thresholds{Stall: time.Hour, StallCritical: 30 * time.Minute},
			"--stall-warning 1h is above --stall-critical 30m"},
		{"stall warning above the default critical", Thresholds{Stall: 20 * time.Minute},
			"--stall-warning 20m is above --stall-critical 15m (its default; give --stall-critical too)"},
		{"negative", Thresholds{StallCritical: -time.Second, DeadLettersCritical: -1},
			"--stall-critical -1s is negative; --dead-letters-critical -1 is negative"},
		{"negative inactive", Thresholds{Inactive: -time.Minute}, "--inactive -1m0s is negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.t.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || err.Error() != c.want {
				t.Fatalf("Validate: %v, want %q", err, c.want)
			}
			if !errors.Is(err, errkind.Invalid) {
				t.Errorf("Validate's error is not errkind.Invalid (exit 2)")
			}
		})
	}
}

func TestWith(t *testing.T) {
	meta := func(kv ...string) map[string]string {
		m := map[string]string{"team": "billing"}
		for i := 0; i < len(kv); i += 2 {
			m[MetaThresholdPrefix+kv[i]] = kv[i+1]
		}
		return m
	}
	type want struct {
		behind, behindCritical, stall, stallCritical time.Duration
		dead                                         int64
		source                                       map[string]string
		problems                                     []string
	}
	src := func(kv ...string) map[string]string {
		m := map[string]string{}
		for _, n := range ThresholdNames {
			m[n] = SourceDefault
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		name  string
		base  Thresholds
		meta  map[string]string
		fixed map[string]bool
		want  want
	}{
		{"no metadata: the defaults", Thresholds{}, nil, nil,
			want{time.Minute, 0, 5 * time.Minute, 15 * time.Minute, 0, src(), nil}},
		{"every key", Thresholds{}, meta(ThresholdLagWarning, "30s", ThresholdLagCritical, "2m", ThresholdStallWarning, "90s",
			ThresholdStallCritical, "1d", ThresholdDeadLettersCritical, "10"), nil,
			want{30 * time.Second, 2 * time.Minute, 90 * time.Second, 24 * time.Hour, 10,
				src(ThresholdLagWarning, SourceMetadata, ThresholdLagCritical, SourceMetadata, ThresholdStallWarning, SourceMetadata,
					ThresholdStallCritical, SourceMetadata, ThresholdDeadLettersCritical, SourceMetadata), nil}},
		{"a flag beats metadata", Thresholds{Behind: 5 * time.Minute}, meta(ThresholdLagWarning, "30s", ThresholdStallWarning, "2m"),
			map[string]bool{ThresholdLagWarning: true},
			want{5 * time.Minute, 0, 2 * time.Minute, 15 * time.Minute, 0,
				src(ThresholdLagWarning, SourceFlag, ThresholdStallWarning, SourceMetadata), nil}},
		// The default warning (5m) comes down to a critical level of 1s.
		{"critical alone pulls the default warning down", Thresholds{}, meta(ThresholdStallCritical, "1s", ThresholdLagCritical, "10s"), nil,
			want{10 * time.Second, 10 * time.Second, time.Second, time.Second, 0,
				src(ThresholdStallCritical, SourceMetadata, ThresholdLagCritical, SourceMetadata), nil}},
		// consumer ls passes --behind's default (1m) without fixing it.
		{"the command's default warning comes down too", Thresholds{Behind: time.Minute}, meta(ThresholdLagCritical, "10s"), nil,
			want{10 * time.Second, 10 * time.Second, 5 * time.Minute, 15 * time.Minute, 0, src(ThresholdLagCritical, SourceMetadata), nil}},
		{"values that do not parse", Thresholds{}, meta(ThresholdStallWarning, "soon", ThresholdLagCritical, "-5m",
			ThresholdDeadLettersCritical, "many", ThresholdStallCritical, "0"), nil,
			want{time.Minute, 0, 5 * time.Minute, 15 * time.Minute, 0, src(), []string{
				`metadata io.jetctl.check.lag-critical="-5m": not a positive duration (use e.g. 90s, 15m, 2h, 1d); ignored`,
				`metadata io.jetctl.check.stall-warning="soon": not a positive duration (use e.g. 90s, 15m, 2h, 1d); ignored`,
				`metadata io.jetctl.check.stall-critical="0": not a positive duration (use e.g. 90s, 15m, 2h, 1d); ignored`,
				`metadata io.jetctl.check.dead-letters-critical="many": not a count of 1 or more; ignored`}}},
		{"metadata warning above the default critical", Thresholds{}, meta(ThresholdStallWarning, "20m"), nil,
			want{time.Minute, 0, 5 * time.Minute, 15 * time.Minute, 0, src(), []string{
				`metadata io.jetctl.check.stall-warning="20m": above the stall-critical level 15m (default); ignored`}}},
		{"metadata critical below a flag's warning", Thresholds{Stall: 10 * time.Minute}, meta(ThresholdStallCritical, "1m"),
			map[string]bool{ThresholdStallWarning: true},
			want{time.Minute, 0, 10 * time.Minute, 15 * time.Minute, 0, src(ThresholdStallWarning, SourceFlag), []string{
				`metadata io.jetctl.check.stall-critical="1m": below the stall-warning level 10m (flag); ignored`}}},
		{"both from metadata, crossed", Thresholds{}, meta(ThresholdLagWarning, "1h", ThresholdLagCritical, "30m"), nil,
			want{time.Minute, 0, 5 * time.Minute, 15 * time.Minute, 0, src(), []string{
				`metadata io.jetctl.check.lag-warning="1h" is above io.jetctl.check.lag-critical="30m"; both ignored`}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			eff, source, problems := c.base.With(c.meta, c.fixed)
			got := want{eff.Behind, eff.BehindCritical, eff.Stall, eff.StallCritical, eff.DeadLettersCritical, source, problems}
			if got.behind != c.want.behind || got.behindCritical != c.want.behindCritical || got.stall != c.want.stall ||
				got.stallCritical != c.want.stallCritical || got.dead != c.want.dead {
				t.Errorf("levels lag %s/%s stall %s/%s dead %d, want %s/%s %s/%s %d", got.behind, got.behindCritical, got.stall,
					got.stallCritical, got.dead, c.want.behind, c.want.behindCritical, c.want.stall, c.want.stallCritical, c.want.dead)
			}
			if !maps.Equal(source, c.want.source) {
				t.Errorf("source %v, want %v", source, c.want.source)
			}
			if !slices.Equal(problems, c.want.problems) {
				t.Errorf("problems\n%s\nwant\n%s", strings.Join(problems, "\n"), strings.Join(c.want.problems, "\n"))
			}
			// The other thresholds keep their defaults.
			if eff.Inactive != DefaultThresholds.Inactive || eff.PoisonRedeliveries != DefaultThresholds.PoisonRedeliveries {
				t.Errorf("inactive %s, poison %d: not the defaults", eff.Inactive, eff.PoisonRedeliveries)
			}
		})
	}
}

// stallFixture is a pull consumer at now, created a day ago, given the
// thresholds' defaults unless the case sets them.
type stallFixture struct {
	now time.Time
}

func (f stallFixture) ago(d time.Duration) *time.Time { t := f.now.Add(-d); return &t }

func (f stallFixture) consumer(mod func(ci *jetstream.ConsumerInfo)) *jetstream.ConsumerInfo {
	ci := &jetstream.ConsumerInfo{Stream: "S", Name: "c", TimeStamp: f.now, Created: f.now.Add(-24 * time.Hour),
		Config: jetstream.ConsumerConfig{MaxAckPending: 1000, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 5, AckWait: time.Hour},
		// A pull waits: no-worker-pulling stays out of the way.
		NumWaiting: 1,
	}
	mod(ci)
	return ci
}

func ids(s *State) []string {
	var out []string
	for _, f := range s.Findings {
		out = append(out, f.ID+"/"+string(f.Severity))
	}
	return out
}

func TestAckFloorFrozen(t *testing.T) {
	f := stallFixture{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	lag := func(d time.Duration) *float64 { s := d.Seconds(); return &s }
	// A worker took 5 messages an age ago and holds them (never acks).
	holding := func(acked, delivered time.Duration) func(ci *jetstream.ConsumerInfo) {
		return func(ci *jetstream.ConsumerInfo) {
			ci.NumAckPending = 5
			ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(acked)}
			ci.Delivered = jetstream.SequenceInfo{Stream: 15, Consumer: 15, Last: f.ago(delivered)}
		}
	}
	for _, c := range []struct {
		name string
		ci   *jetstream.ConsumerInfo
		lag  *float64
		want []string
		age  *float64
	}{
		{"nothing pending, idle for a day", f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(24 * time.Hour)}
			ci.Delivered = ci.AckFloor
		}), nil, nil, lag(0)},
		{"nothing pending, never acked, created a day ago", f.consumer(func(ci *jetstream.ConsumerInfo) {}), nil, nil, lag(0)},
		{"pending, floor moved a minute ago", f.consumer(holding(time.Minute, time.Minute)), nil, nil, lag(time.Minute)},
		{"pending, floor frozen past stall-warning", f.consumer(holding(6*time.Minute, 6*time.Minute)), nil,
			[]string{"ack-floor-frozen/warning"}, lag(6 * time.Minute)},
		{"pending, floor frozen past stall-critical", f.consumer(holding(20*time.Minute, 20*time.Minute)), nil,
			[]string{"ack-floor-frozen/critical"}, lag(20 * time.Minute)},
		{"pending, never acked: counts from creation", f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.NumAckPending = 2
			ci.Delivered = jetstream.SequenceInfo{Stream: 2, Consumer: 2, Last: f.ago(23 * time.Hour)}
		}), nil, []string{"ack-floor-frozen/critical"}, lag(24 * time.Hour)},
		{"paused with work pending", f.consumer(func(ci *jetstream.ConsumerInfo) {
			holding(time.Hour, time.Hour)(ci)
			ci.Paused = true
		}), nil, []string{"paused/warning"}, lag(time.Hour)},
		// The first message after a quiet day arrived 10 s ago: the floor
		// had nothing to move for until then.
		{"a burst after a quiet day", f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.NumPending = 100
			ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(24 * time.Hour)}
			ci.Delivered = ci.AckFloor
		}), lag(10 * time.Second), nil, lag(10 * time.Second)},
		{"unprocessed work waiting past stall-critical", f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.NumPending = 100
			ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(24 * time.Hour)}
			ci.Delivered = ci.AckFloor
		}), lag(30 * time.Minute), []string{"ack-floor-frozen/critical", "behind/warning"}, lag(30 * time.Minute)},
		{"unprocessed, lag unknown: no stall called on a guess", f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.NumPending = 100
		}), nil, nil, nil},
		// An ack none consumer's floor follows its deliveries.
		{"ack none, delivering", f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.Config.AckPolicy, ci.Config.MaxAckPending = jetstream.AckNonePolicy, 0
			ci.NumPending = 100
			ci.Delivered = jetstream.SequenceInfo{Stream: 900, Consumer: 900, Last: f.ago(time.Second)}
			ci.AckFloor = jetstream.SequenceInfo{Stream: 900, Consumer: 900}
		}), lag(time.Hour), []string{"behind/warning"}, lag(time.Second)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := evaluated(t, c.ci, c.lag, nil, Thresholds{})
			if got := ids(s); !slices.Equal(got, c.want) {
				t.Errorf("findings %v, want %v", got, c.want)
			}
			switch {
			case c.age == nil && s.AckFloorAgeSeconds != nil:
				t.Errorf("ack_floor_age_seconds %v, want null", *s.AckFloorAgeSeconds)
			case c.age != nil && (s.AckFloorAgeSeconds == nil || *s.AckFloorAgeSeconds != *c.age):
				t.Errorf("ack_floor_age_seconds %s, want %v", ageText(s.AckFloorAgeSeconds), *c.age)
			}
		})
	}

	// The evidence and the summary.
	s := evaluated(t, f.consumer(holding(20*time.Minute, 20*time.Minute)), nil, nil, Thresholds{})
	fd := s.Findings[0]
	if s.Health != HealthStalled || s.Severity != SeverityCritical || s.HealthReason != fd.Summary {
		t.Errorf("health %s at %s (%s)", s.Health, s.Severity, s.HealthReason)
	}
	wantEvidence := map[string]any{"ack_floor_age_seconds": 1200.0, "last_ack": "2026-11-30T11:40:00Z", "ack_floor_stream_seq": uint64(10),
		"unprocessed": uint64(0), "ack_pending": 5, "stall_warning_seconds": 300.0, "stall_critical_seconds": 900.0}
	if !maps.Equal(fd.Evidence, wantEvidence) {
		t.Errorf("evidence %v, want %v", fd.Evidence, wantEvidence)
	}
	if want := "the ack floor (seq 10) has not moved for 20m (since 2026-11-30T11:40:00Z) while work waits: 0 unprocessed, 5 awaiting an ack; last ack at 2026-11-30T11:40:00Z"; fd.Summary != want {
		t.Errorf("summary %q, want %q", fd.Summary, want)
	}
	if fd.Command != "jetctl consumer explain S c" {
		t.Errorf("command %q", fd.Command)
	}
	never := evaluated(t, f.consumer(func(ci *jetstream.ConsumerInfo) { ci.NumAckPending = 1 }), nil, nil, Thresholds{})
	if got := never.Findings[0].Evidence["last_ack"]; got != nil {
		t.Errorf("last_ack %v for a consumer that never acked, want null", got)
	}
}

func TestSeverityFromThresholds(t *testing.T) {
	f := stallFixture{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	lag := func(d time.Duration) *float64 { s := d.Seconds(); return &s }
	n := func(v int64) *int64 { return &v }
	backlog := f.consumer(func(ci *jetstream.ConsumerInfo) {
		ci.NumPending = 50
		ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(time.Second)}
		ci.Delivered = ci.AckFloor
	})
	quiet := f.consumer(func(ci *jetstream.ConsumerInfo) {
		ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(time.Second)}
		ci.Delivered = ci.AckFloor
	})
	for _, c := range []struct {
		name     string
		ci       *jetstream.ConsumerInfo
		lag      *float64
		dead     *int64
		th       Thresholds
		want     []string
		severity Severity
		word     Health
	}{
		{"behind, no critical level", backlog, lag(time.Hour), nil, Thresholds{}, []string{"behind/warning"}, SeverityWarning, HealthBehind},
		{"behind, below lag-critical", backlog, lag(2 * time.Minute), nil, Thresholds{BehindCritical: 5 * time.Minute},
			[]string{"behind/warning"}, SeverityWarning, HealthBehind},
		{"behind, at lag-critical", backlog, lag(5 * time.Minute), nil, Thresholds{BehindCritical: 5 * time.Minute},
			[]string{"behind/critical"}, SeverityCritical, HealthBehind},
		{"dead letters, no critical level", quiet, nil, n(50), Thresholds{}, []string{"dead-letters/warning"}, SeverityWarning, HealthDeadLetters},
		{"dead letters, below the critical count", quiet, nil, n(9), Thresholds{DeadLettersCritical: 10},
			[]string{"dead-letters/warning"}, SeverityWarning, HealthDeadLetters},
		{"dead letters, at the critical count", quiet, nil, n(10), Thresholds{DeadLettersCritical: 10},
			[]string{"dead-letters/critical"}, SeverityCritical, HealthDeadLetters},
		// Sorted by severity first: a critical lag outranks a warning
		// whose word comes earlier (stalled).
		{"a critical lag before a warning stall", f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.NumPending, ci.NumAckPending = 50, 5
			ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(6 * time.Minute)}
			ci.Delivered = jetstream.SequenceInfo{Stream: 15, Consumer: 15, Last: f.ago(6 * time.Minute)}
		}), lag(time.Hour), nil, Thresholds{BehindCritical: 30 * time.Minute},
			[]string{"behind/critical", "ack-floor-frozen/warning"}, SeverityCritical, HealthBehind},
		// Then by word: stalled before behind at the same severity.
		{"a warning stall before a warning lag", f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.NumPending, ci.NumAckPending = 50, 5
			ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(6 * time.Minute)}
			ci.Delivered = jetstream.SequenceInfo{Stream: 15, Consumer: 15, Last: f.ago(6 * time.Minute)}
		}), lag(time.Hour), n(1), Thresholds{},
			[]string{"ack-floor-frozen/warning", "behind/warning", "dead-letters/warning"}, SeverityWarning, HealthStalled},
		{"only notes: info", f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.NumWaiting = 0
			ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(time.Hour)}
			ci.Delivered = ci.AckFloor
		}), nil, nil, Thresholds{}, []string{"idle/info"}, SeverityInfo, HealthIdle},
		{"nothing: info, ok", quiet, nil, nil, Thresholds{}, nil, SeverityInfo, HealthOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := evaluated(t, c.ci, c.lag, c.dead, c.th)
			if got := ids(s); !slices.Equal(got, c.want) {
				t.Errorf("findings %v, want %v", got, c.want)
			}
			if s.Severity != c.severity || s.Health != c.word {
				t.Errorf("consumer %s at %s, want %s at %s", s.Health, s.Severity, c.word, c.severity)
			}
			e := &Explanation{State: s, Findings: s.Findings}
			if e.Healthy() != !c.severity.AtLeastWarning() {
				t.Errorf("explain healthy %v at severity %s", e.Healthy(), c.severity)
			}
		})
	}
}

func TestSortBySeverity(t *testing.T) {
	states := []*State{
		{Stream: "S", Consumer: "a-idle", Health: HealthIdle, Severity: SeverityInfo},
		{Stream: "S", Consumer: "b-stall-warning", Health: HealthStalled, Severity: SeverityWarning},
		{Stream: "S", Consumer: "c-behind-critical", Health: HealthBehind, Severity: SeverityCritical},
		{Stream: "S", Consumer: "d-paused", Health: HealthPaused, Severity: SeverityWarning},
		{Stream: "S", Consumer: "e-poison", Health: HealthPoison, Severity: SeverityCritical},
		{Stream: "S", Consumer: "f-ok", Health: HealthOK, Severity: SeverityInfo},
	}
	Sort(states, SortHealth)
	var got []string
	for _, s := range states {
		got = append(got, s.Consumer)
	}
	want := []string{"e-poison", "c-behind-critical", "b-stall-warning", "d-paused", "a-idle", "f-ok"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// A consumer's metadata sets its thresholds in the health model itself,
// so every command that evaluates it gets them.
func TestMetadataThresholds(t *testing.T) {
	f := stallFixture{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	stuck := func(meta map[string]string) *jetstream.ConsumerInfo {
		return f.consumer(func(ci *jetstream.ConsumerInfo) {
			ci.Config.Metadata = meta
			ci.NumAckPending = 5
			ci.AckFloor = jetstream.SequenceInfo{Stream: 10, Consumer: 10, Last: f.ago(2 * time.Second)}
			ci.Delivered = jetstream.SequenceInfo{Stream: 15, Consumer: 15, Last: f.ago(2 * time.Second)}
		})
	}
	run := func(ci *jetstream.ConsumerInfo, th Thresholds, fixed map[string]bool) *State {
		s := FromInfo(ci)
		if err := evaluate(t.Context(), &evaluation{t: th, fixed: fixed, s: s}); err != nil {
			t.Fatal(err)
		}
		return s
	}

	s := run(stuck(nil), Thresholds{}, nil)
	if got := ids(s); got != nil || s.ThresholdSource[ThresholdStallWarning] != SourceDefault || s.Thresholds.Stall != 5*time.Minute {
		t.Errorf("no metadata: findings %v, stall-warning %s from %s", got, s.Thresholds.Stall, s.ThresholdSource[ThresholdStallWarning])
	}
	s = run(stuck(map[string]string{MetaThresholdPrefix + ThresholdStallWarning: "1s"}), Thresholds{}, nil)
	if got := ids(s); !slices.Equal(got, []string{"ack-floor-frozen/warning"}) || s.ThresholdSource[ThresholdStallWarning] != SourceMetadata {
		t.Errorf("stall-warning 1s: findings %v, source %v", got, s.ThresholdSource)
	}
	s = run(stuck(map[string]string{MetaThresholdPrefix + ThresholdStallCritical: "1s"}), Thresholds{}, nil)
	if got := ids(s); !slices.Equal(got, []string{"ack-floor-frozen/critical"}) || s.Severity != SeverityCritical {
		t.Errorf("stall-critical 1s: findings %v", got)
	}
	// A flag beats the metadata.
	s = run(stuck(map[string]string{MetaThresholdPrefix + ThresholdStallWarning: "1s"}), Thresholds{Stall: time.Minute},
		map[string]bool{ThresholdStallWarning: true})
	if got := ids(s); got != nil || s.ThresholdSource[ThresholdStallWarning] != SourceFlag {
		t.Errorf("--stall-warning 1m over metadata 1s: findings %v, source %v", got, s.ThresholdSource)
	}
	// A bad value is noted, not a value left unread, and changes nothing.
	s = run(stuck(map[string]string{MetaThresholdPrefix + ThresholdStallWarning: "soon"}), Thresholds{}, nil)
	want := `metadata io.jetctl.check.stall-warning="soon": not a positive duration (use e.g. 90s, 15m, 2h, 1d); ignored`
	if !slices.Equal(s.ReadErrors, []string{want}) || !slices.Equal(s.ThresholdNotes(), []string{want}) || len(s.Unreadable()) != 0 {
		t.Errorf("read errors %q, notes %q, unreadable %q", s.ReadErrors, s.ThresholdNotes(), s.Unreadable())
	}
	if got := ids(s); got != nil || s.Health != HealthOK {
		t.Errorf("bad metadata: findings %v, health %s", got, s.Health)
	}
}

// With messages awaiting an ack, the floor had nothing to move for before
// the first of them arrived: evaluate reads it (one get), and a watch
// does not read it again while the floor stands still. The consumer here
// is a day old and never acknowledged anything, seen ten minutes after
// its messages arrived: stalled for ten minutes (a warning), not a day.
func TestAckFloorAgeReadsTheFirstPendingMessage(t *testing.T) {
	js := embeddedtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := js.Publish(ctx, "orders.created", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	// Taken, never acknowledged.
	batch, err := cons.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	taken := 0
	for range batch.Messages() {
		taken++
	}
	if taken != 3 {
		t.Fatalf("fetched %d messages, want 3", taken)
	}

	settled := countGets(t, ctx, js)

	cache := &LagCache{}
	assessed := func() *State {
		ci, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ci.NumAckPending != 3 || ci.AckFloor.Last != nil {
			t.Fatalf("ack pending %d, last ack %v: want 3 and none", ci.NumAckPending, ci.AckFloor.Last)
		}
		ci.Created = ci.Created.Add(-24 * time.Hour)
		ci.TimeStamp = ci.TimeStamp.Add(10 * time.Minute)
		s := FromInfo(ci)
		if err := evaluate(ctx, &evaluation{s: s, api: jsapi.New(js), cache: cache}); err != nil {
			t.Fatal(err)
		}
		cache.rotate()
		return s
	}
	s := assessed()
	if s.AckFloorAgeSeconds == nil || *s.AckFloorAgeSeconds < 600 || *s.AckFloorAgeSeconds > 3600 {
		t.Fatalf("ack_floor_age_seconds %s, want ten minutes and a little (not a day)", ageText(s.AckFloorAgeSeconds))
	}
	if got := ids(s); !slices.Equal(got, []string{"ack-floor-frozen/warning"}) {
		t.Errorf("findings %v, want a warning", got)
	}
	if n := settled(); n != 1 {
		t.Errorf("%d gets, want 1", n)
	}
	again := assessed()
	if n := settled(); n != 1 {
		t.Errorf("the floor unmoved, read again: %d gets in all, want still 1", n)
	}
	if *again.AckFloorAgeSeconds < *s.AckFloorAgeSeconds {
		t.Errorf("the second age %v is below the first %v", *again.AckFloorAgeSeconds, *s.AckFloorAgeSeconds)
	}
}

func ageText(age *float64) string {
	if age == nil {
		return "null"
	}
	return fmt.Sprint(*age)
}
