package consumer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// evaluated runs the health model on a consumer info, without a server:
// the rules that read messages are left out.
func evaluated(t *testing.T, ci *jetstream.ConsumerInfo, lag *float64, dead *int64, th Thresholds) *State {
	t.Helper()
	s := FromInfo(ci)
	if lag != nil {
		s.LagSeconds = lag
	}
	if dead != nil {
		s.DeadLetters, s.dead = dead, &deadWaiting{inDLQ: *dead, exact: true}
	}
	if err := evaluate(context.Background(), &evaluation{t: th, s: s}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHealthWords(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	lag := func(d time.Duration) *float64 { s := d.Seconds(); return &s }
	n := func(v int64) *int64 { return &v }
	th := Thresholds{Behind: time.Minute, Inactive: 5 * time.Minute}
	pull := func(mod func(*jetstream.ConsumerInfo)) *jetstream.ConsumerInfo {
		ci := &jetstream.ConsumerInfo{Stream: "S", Name: "c", TimeStamp: now, Created: now.Add(-time.Hour),
			Config:    jetstream.ConsumerConfig{MaxAckPending: 1000, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1},
			Delivered: jetstream.SequenceInfo{Last: ago(time.Second)}}
		mod(ci)
		if ci.AckFloor.Last == nil && ci.Delivered.Last != nil {
			// Acknowledged as soon as delivered, unless the case says.
			last := *ci.Delivered.Last
			ci.AckFloor.Last = &last
		}
		return ci
	}
	push := func(mod func(*jetstream.ConsumerInfo)) *jetstream.ConsumerInfo {
		return pull(func(ci *jetstream.ConsumerInfo) { ci.Config.DeliverSubject = "deliver.c"; mod(ci) })
	}
	cases := []struct {
		name string
		ci   *jetstream.ConsumerInfo
		lag  *float64
		dead *int64
		want Health
		ids  []string
	}{
		{"caught up, recently active", pull(func(ci *jetstream.ConsumerInfo) {}), nil, nil, HealthOK, nil},
		{"working through a young backlog", pull(func(ci *jetstream.ConsumerInfo) { ci.NumPending = 50 }), lag(10 * time.Second), nil, HealthOK, nil},
		{"no leader beats everything", pull(func(ci *jetstream.ConsumerInfo) {
			ci.Cluster = &jetstream.ClusterInfo{RaftGroup: "C-1"}
			ci.NumAckPending = 1000
		}), nil, nil, HealthNoLeader, []string{FindingNoLeader}},
		{"ack pending at MaxAckPending", pull(func(ci *jetstream.ConsumerInfo) { ci.NumPending, ci.NumAckPending, ci.Config.MaxAckPending = 5, 4, 4 }),
			lag(time.Second), nil, HealthStalled, []string{FindingStalled}},
		{"at MaxAckPending beats behind", pull(func(ci *jetstream.ConsumerInfo) { ci.NumPending, ci.NumAckPending = 5, 1000 }),
			lag(time.Hour), nil, HealthStalled, []string{FindingStalled, FindingBehind}},
		{"unlimited MaxAckPending never stalls on acks", pull(func(ci *jetstream.ConsumerInfo) { ci.NumAckPending, ci.Config.MaxAckPending = 5000, -1 }),
			nil, nil, HealthOK, nil},
		{"paused with a backlog", pull(func(ci *jetstream.ConsumerInfo) { ci.NumPending, ci.Paused = 3, true }), lag(time.Second), nil, HealthPaused, []string{FindingPaused}},
		{"paused, nothing pending", pull(func(ci *jetstream.ConsumerInfo) { ci.Paused, ci.Delivered.Last = true, ago(time.Hour) }), nil, nil, HealthPaused, []string{FindingPaused}},
		{"push without subscriber, backlog", push(func(ci *jetstream.ConsumerInfo) { ci.NumPending = 3 }), lag(time.Second), nil, HealthStalled, []string{FindingPushNoSubscriber}},
		{"push with subscriber", push(func(ci *jetstream.ConsumerInfo) { ci.NumPending, ci.PushBound = 3, true }), lag(time.Second), nil, HealthOK, nil},
		{"push without subscriber, nothing pending", push(func(ci *jetstream.ConsumerInfo) {}), nil, nil, HealthIdle, []string{FindingIdle}},
		{"pull, backlog, no waiting pulls, inactive", pull(func(ci *jetstream.ConsumerInfo) { ci.NumPending, ci.Delivered.Last = 3, ago(10*time.Minute) }),
			lag(10 * time.Second), nil, HealthStalled, []string{FindingNoWorker}},
		{"pull, backlog, inactive but a pull is waiting", pull(func(ci *jetstream.ConsumerInfo) {
			ci.NumPending, ci.Delivered.Last, ci.NumWaiting = 3, ago(10*time.Minute), 1
		}), lag(10 * time.Second), nil, HealthOK, nil},
		{"never active, created long ago", pull(func(ci *jetstream.ConsumerInfo) { ci.NumPending, ci.Delivered.Last = 3, nil }),
			lag(time.Second), nil, HealthStalled, []string{FindingNoWorker}},
		// Right after a migration the consumers are new: not stalled yet.
		{"never active, created just now", pull(func(ci *jetstream.ConsumerInfo) {
			ci.NumPending, ci.Delivered.Last, ci.Created = 3, nil, now.Add(-time.Second)
		}), lag(time.Second), nil, HealthOK, nil},
		{"behind at the threshold", pull(func(ci *jetstream.ConsumerInfo) { ci.NumPending = 3 }), lag(time.Minute), nil, HealthBehind, []string{FindingBehind}},
		// An age that could not be read is not a finding (read_errors says why).
		{"lag unknown", pull(func(ci *jetstream.ConsumerInfo) { ci.NumPending = 3 }), nil, nil, HealthOK, nil},
		{"behind beats dead letters", pull(func(ci *jetstream.ConsumerInfo) { ci.NumPending = 3 }), lag(time.Hour), n(2), HealthBehind,
			[]string{FindingBehind, FindingDeadLetters}},
		{"dead letters wait", pull(func(ci *jetstream.ConsumerInfo) {}), nil, n(2), HealthDeadLetters, []string{FindingDeadLetters}},
		{"no dead letter waits", pull(func(ci *jetstream.ConsumerInfo) {}), nil, n(0), HealthOK, nil},
		{"dead letters beat idle", pull(func(ci *jetstream.ConsumerInfo) { ci.Delivered.Last = ago(time.Hour) }), nil, n(1), HealthDeadLetters,
			[]string{FindingDeadLetters, FindingIdle}},
		{"idle: nothing pending, no worker for long", pull(func(ci *jetstream.ConsumerInfo) { ci.Delivered.Last = ago(time.Hour) }), nil, nil, HealthIdle, []string{FindingIdle}},
		{"not idle while a pull waits", pull(func(ci *jetstream.ConsumerInfo) { ci.Delivered.Last, ci.NumWaiting = ago(time.Hour), 2 }), nil, nil, HealthOK, nil},
		{"a replica behind", pull(func(ci *jetstream.ConsumerInfo) {
			ci.Cluster = &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{{Name: "n2", Current: true}, {Name: "n3", Offline: true}}}
		}), nil, nil, HealthDegraded, []string{FindingReplicaLagging}},
		{"redeliveries climb with MaxDeliver unlimited", pull(func(ci *jetstream.ConsumerInfo) {
			ci.NumAckPending, ci.NumRedelivered = 1, 1
			ci.AckFloor = jetstream.SequenceInfo{Stream: 2, Consumer: 2}
			ci.Delivered = jetstream.SequenceInfo{Stream: 5, Consumer: 12, Last: ago(time.Second)}
		}), nil, nil, HealthMisconfigured, []string{FindingMaxDeliverNone}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := evaluated(t, c.ci, c.lag, c.dead, th)
			if s.Health != c.want {
				t.Errorf("health %s (%s), want %s", s.Health, s.HealthReason, c.want)
			}
			if s.Health != HealthOK && s.HealthReason == "" {
				t.Errorf("health %s has no reason", s.Health)
			}
			var ids []string
			for _, f := range s.Findings {
				ids = append(ids, f.ID)
				if f.Severity != WordOf(f.ID).Level() {
					t.Errorf("finding %s: severity %s, its word %s is %s", f.ID, f.Severity, WordOf(f.ID), WordOf(f.ID).Level())
				}
			}
			if !slices.Equal(ids, c.ids) {
				t.Errorf("findings %v, want %v", ids, c.ids)
			}
			// explain --exit-code passes exactly when the consumer's
			// severity is below warning; with these thresholds that is the
			// word's level.
			e := &Explanation{Findings: s.Findings}
			if e.Healthy() != s.Healthy() || s.Severity != s.Health.Level() && len(s.Findings) > 0 {
				t.Errorf("explain healthy %v, severity %s, word %s (%s)", e.Healthy(), s.Severity, s.Health, s.Health.Level())
			}
		})
	}
}

// Every finding gives a word, and every word but ok comes from a finding.
func TestEveryFindingHasAWord(t *testing.T) {
	ids := []string{FindingNoLeader, FindingStalled, FindingNoWorker, FindingPushNoSubscriber, FindingAckFloorFrozen, FindingNothingAcked, FindingPoison,
		FindingPaused, FindingBehind, FindingDeadLetters, FindingMaxDeliverReached, FindingReplicaLagging, FindingFilterNoMatch,
		FindingMaxDeliverNone, FindingIdle, FindingSkippedBacklog, FindingInterestHeld,
		FindingPinnedClientGone, FindingOverflowNotReached, FindingReplication}
	words := map[Health]bool{}
	for _, id := range ids {
		if _, ok := findingWord[id]; !ok {
			t.Errorf("finding %s has no word", id)
		}
		words[WordOf(id)] = true
	}
	if len(findingWord) != len(ids) {
		t.Errorf("%d findings have words, %d are listed here", len(findingWord), len(ids))
	}
	for _, w := range healthOrder {
		if !words[w] {
			t.Errorf("word %s comes from no finding", w)
		}
	}
}

func TestSeverityOrder(t *testing.T) {
	for i := 1; i < len(healthOrder); i++ {
		a, b := healthOrder[i-1], healthOrder[i]
		if a.Severity() >= b.Severity() {
			t.Errorf("%s should sort before %s", a, b)
		}
		rank := map[Severity]int{SeverityCritical: 0, SeverityWarning: 1, SeverityInfo: 2}
		if rank[a.Level()] > rank[b.Level()] {
			t.Errorf("%s (%s) sorts before %s (%s)", a, a.Level(), b, b.Level())
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
