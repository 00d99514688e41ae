package consumer

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestClassify(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	lag := func(d time.Duration) *float64 { s := d.Seconds(); return &s }
	n := func(v int64) *int64 { return &v }
	th := Thresholds{Behind: time.Minute, Inactive: 5 * time.Minute}
	pull := func(mod func(*State)) *State {
		s := &State{Kind: KindPull, MaxAckPending: 1000, Time: now, LastActive: ago(time.Second), LagSeconds: lag(0)}
		mod(s)
		return s
	}
	cases := []struct {
		name string
		s    *State
		want Health
	}{
		{"caught up, recently active", pull(func(s *State) {}), HealthOK},
		{"working through a young backlog", pull(func(s *State) { s.Unprocessed, s.LagSeconds = 50, lag(10*time.Second) }), HealthOK},
		{"no leader beats everything", pull(func(s *State) { s.NoLeader, s.AckPending = true, 1000 }), HealthNoLeader},
		{"ack pending at MaxAckPending", pull(func(s *State) { s.Unprocessed, s.AckPending, s.MaxAckPending = 5, 4, 4 }), HealthStalled},
		{"at MaxAckPending beats behind", pull(func(s *State) {
			s.Unprocessed, s.AckPending, s.LagSeconds = 5, 1000, lag(time.Hour)
		}), HealthStalled},
		{"unlimited MaxAckPending never stalls on acks", pull(func(s *State) { s.AckPending, s.MaxAckPending = 5000, -1 }), HealthOK},
		{"paused with a backlog", pull(func(s *State) { s.Unprocessed, s.Paused = 3, true }), HealthStalled},
		{"paused, nothing pending, no worker", pull(func(s *State) { s.Paused, s.LastActive = true, ago(time.Hour) }), HealthIdle},
		{"push without subscriber, backlog", &State{Kind: KindPush, Time: now, Unprocessed: 3, LagSeconds: lag(time.Second)}, HealthStalled},
		{"push with subscriber", &State{Kind: KindPush, PushBound: true, Time: now, Unprocessed: 3, LagSeconds: lag(time.Second)}, HealthOK},
		{"push without subscriber, nothing pending", &State{Kind: KindPush, Time: now, LagSeconds: lag(0)}, HealthIdle},
		{"pull, backlog, no waiting pulls, inactive", pull(func(s *State) {
			s.Unprocessed, s.LastActive, s.LagSeconds = 3, ago(10*time.Minute), lag(10*time.Second)
		}), HealthStalled},
		{"pull, backlog, inactive but a pull is waiting", pull(func(s *State) {
			s.Unprocessed, s.LastActive, s.WaitingPulls, s.LagSeconds = 3, ago(10*time.Minute), 1, lag(10*time.Second)
		}), HealthOK},
		{"never active, created long ago", pull(func(s *State) {
			s.Unprocessed, s.LastActive, s.LagSeconds = 3, nil, lag(time.Second)
			s.Info = &jetstream.ConsumerInfo{Created: now.Add(-time.Hour)}
		}), HealthStalled},
		{"never active, created just now", pull(func(s *State) {
			s.Unprocessed, s.LastActive, s.LagSeconds = 3, nil, lag(time.Second)
			s.Info = &jetstream.ConsumerInfo{Created: now.Add(-time.Second)}
		}), HealthOK},
		{"behind at the threshold", pull(func(s *State) { s.Unprocessed, s.LagSeconds = 3, lag(time.Minute) }), HealthBehind},
		{"behind, lag unknown", pull(func(s *State) { s.Unprocessed, s.LagSeconds = 3, nil }), HealthBehind},
		{"behind beats dead letters", pull(func(s *State) {
			s.Unprocessed, s.LagSeconds, s.DeadLetters = 3, lag(time.Hour), n(2)
		}), HealthBehind},
		{"dead letters", pull(func(s *State) { s.DeadLetters = n(2) }), HealthDeadLetters},
		{"dead letters counted 0", pull(func(s *State) { s.DeadLetters = n(0) }), HealthOK},
		{"dead letters beat idle", pull(func(s *State) { s.DeadLetters, s.LastActive = n(1), ago(time.Hour) }), HealthDeadLetters},
		{"idle: nothing pending, no worker for long", pull(func(s *State) { s.LastActive = ago(time.Hour) }), HealthIdle},
		{"not idle while a pull waits", pull(func(s *State) { s.LastActive, s.WaitingPulls = ago(time.Hour), 2 }), HealthOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.s.Classify(th)
			if c.s.Health != c.want {
				t.Errorf("health %s (%s), want %s", c.s.Health, c.s.HealthReason, c.want)
			}
			if c.s.Health != HealthOK && c.s.HealthReason == "" {
				t.Errorf("health %s has no reason", c.s.Health)
			}
		})
	}
}

func TestSeverityOrder(t *testing.T) {
	order := []Health{HealthNoLeader, HealthStalled, HealthBehind, HealthDeadLetters, HealthIdle, HealthOK}
	for i := 1; i < len(order); i++ {
		if order[i-1].Severity() >= order[i].Severity() {
			t.Errorf("%s should sort before %s", order[i-1], order[i])
		}
	}
}

func TestRatesBetween(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	prev := &State{Time: t0, DeliveredConsumerSeq: 100, AckFloorConsumerSeq: 90, Unprocessed: 50, Redelivered: 2, AckPending: 10}
	cur := &State{Time: t0.Add(2 * time.Second), DeliveredConsumerSeq: 120, AckFloorConsumerSeq: 96, Unprocessed: 60, Redelivered: 1, AckPending: 24}
	r := RatesBetween(prev, cur)
	want := Rates{DeliveredPerSec: 10, AckedPerSec: 3, RedeliveredPerSec: -0.5, UnprocessedPerSec: 5, AckPendingPerSec: 7}
	if r == nil || *r != want {
		t.Fatalf("rates %+v, want %+v", r, want)
	}
	// A recreated consumer (sequences went back) has no rates.
	if r := RatesBetween(cur, prev); r != nil {
		t.Errorf("rates across a recreation: %+v", r)
	}
	if r := RatesBetween(nil, cur); r != nil {
		t.Errorf("rates without a previous poll: %+v", r)
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Millisecond:         "850ms",
		12 * time.Second:               "12s",
		5*time.Minute + 10*time.Second: "5m10s",
		5 * time.Minute:                "5m",
		2*time.Hour + 5*time.Minute:    "2h5m",
		3*24*time.Hour + 4*time.Hour:   "3d4h",
	} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
