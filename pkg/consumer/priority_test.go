package consumer

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The priority-group rules and the replication consumer, on consumer
// infos as the server reports them (facts_test.go pins what it reports).
func TestPriorityAndReplicationFindings(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	lag := func(d time.Duration) *float64 { s := d.Seconds(); return &s }
	// Inactive 1m; behind and the stall thresholds out of the way.
	th := Thresholds{Behind: 24 * time.Hour, Inactive: time.Minute, Stall: 24 * time.Hour, StallCritical: 48 * time.Hour}
	consumer := func(policy jetstream.PriorityPolicy, mod func(*jetstream.ConsumerInfo)) *jetstream.ConsumerInfo {
		ci := &jetstream.ConsumerInfo{Stream: "S", Name: "c", TimeStamp: now, Created: now.Add(-time.Hour),
			Config: jetstream.ConsumerConfig{MaxAckPending: 1000, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 5,
				PriorityPolicy: policy, PriorityGroups: []string{"jobs", "other"}},
			Delivered: jetstream.SequenceInfo{Last: ago(20 * time.Minute)},
			AckFloor:  jetstream.SequenceInfo{Last: ago(20 * time.Minute)},
			// As the server reports it: the first group only.
			PriorityGroups: []jetstream.PriorityGroupState{{Group: "jobs"}}}
		if policy == jetstream.PriorityPolicyPinned {
			ci.Config.PinnedTTL = 2 * time.Minute
		}
		mod(ci)
		return ci
	}
	pinned := func(d time.Duration) func(*jetstream.ConsumerInfo) {
		return func(ci *jetstream.ConsumerInfo) {
			ci.PriorityGroups[0].PinnedClientID, ci.PriorityGroups[0].PinnedTS = "PIN1", now.Add(-d)
		}
	}
	both := func(fs ...func(*jetstream.ConsumerInfo)) func(*jetstream.ConsumerInfo) {
		return func(ci *jetstream.ConsumerInfo) {
			for _, f := range fs {
				f(ci)
			}
		}
	}
	waiting := func(pending uint64, pulls int) func(*jetstream.ConsumerInfo) {
		return func(ci *jetstream.ConsumerInfo) { ci.NumPending, ci.NumWaiting = pending, pulls }
	}
	for _, c := range []struct {
		name        string
		ci          *jetstream.ConsumerInfo
		lag         *float64
		want        Health
		ids         []string
		undelivered []*float64 // per group
	}{
		{"pinned, caught up", consumer(jetstream.PriorityPolicyPinned, both(pinned(10*time.Minute), waiting(0, 1))), nil, HealthOK, nil, []*float64{lag(0), nil}},
		{"pinned client gone, others wait", consumer(jetstream.PriorityPolicyPinned, both(pinned(30*time.Minute), waiting(3, 2))),
			lag(5 * time.Minute), HealthStalled, []string{FindingPinnedClientGone}, []*float64{lag(5 * time.Minute), nil}},
		{"pinned client gone, nobody pulls", consumer(jetstream.PriorityPolicyPinned, both(pinned(30*time.Minute), waiting(3, 0))),
			lag(5 * time.Minute), HealthStalled, []string{FindingNoWorker, FindingPinnedClientGone}, []*float64{lag(5 * time.Minute), nil}},
		// The messages arrived a moment ago: the pinned client has had no
		// time to take them.
		{"pinned, young messages", consumer(jetstream.PriorityPolicyPinned, both(pinned(30*time.Minute), waiting(3, 2))),
			lag(10 * time.Second), HealthOK, nil, []*float64{lag(10 * time.Second), nil}},
		// Pinned a moment ago: the new client has had no time either.
		{"pinned just now", consumer(jetstream.PriorityPolicyPinned, both(pinned(10*time.Second), waiting(3, 2))),
			lag(5 * time.Minute), HealthOK, nil, []*float64{lag(10 * time.Second), nil}},
		{"not pinned, messages wait, pulls wait", consumer(jetstream.PriorityPolicyPinned, waiting(3, 2)),
			lag(5 * time.Minute), HealthOK, nil, []*float64{nil, nil}},
		{"pinned but paused", consumer(jetstream.PriorityPolicyPinned, both(pinned(30*time.Minute), waiting(3, 2),
			func(ci *jetstream.ConsumerInfo) { ci.Paused = true })), lag(5 * time.Minute), HealthPaused, []string{FindingPaused}, nil},
		{"pinned, lag unknown", consumer(jetstream.PriorityPolicyPinned, both(pinned(30*time.Minute), waiting(3, 2))),
			nil, HealthOK, nil, []*float64{nil, nil}},
		{"overflow below its threshold", consumer(jetstream.PriorityPolicyOverflow, waiting(3, 1)),
			lag(5 * time.Minute), HealthStalled, []string{FindingOverflowNotReached}, []*float64{lag(5 * time.Minute), lag(5 * time.Minute)}},
		{"overflow, young messages", consumer(jetstream.PriorityPolicyOverflow, waiting(3, 1)),
			lag(10 * time.Second), HealthOK, nil, []*float64{lag(10 * time.Second), lag(10 * time.Second)}},
		{"overflow, nobody pulls", consumer(jetstream.PriorityPolicyOverflow, waiting(3, 0)),
			lag(5 * time.Minute), HealthStalled, []string{FindingNoWorker}, nil},
		{"prioritized: no figure", consumer(jetstream.PriorityPolicyPrioritized, waiting(3, 1)),
			lag(5 * time.Minute), HealthOK, nil, []*float64{nil, nil}},
		// The server's own, with what would make a worker's critical.
		{"replication", consumer(jetstream.PriorityPolicyNone, func(ci *jetstream.ConsumerInfo) {
			ci.Config.PriorityGroups, ci.PriorityGroups = nil, nil
			ci.Config.DeliverSubject, ci.Config.AckPolicy = "$JS.S.abc", jetstream.AckFlowControlPolicy
			ci.Config.Metadata = map[string]string{"_nats.src.stream": "AGG", "_nats.src.acc": "$G"}
			ci.NumPending, ci.NumAckPending, ci.Config.MaxAckPending = 500, 1000, 1000
		}), lag(3 * time.Hour), HealthReplication, []string{FindingReplication}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := evaluated(t, c.ci, c.lag, nil, th)
			var ids []string
			for _, f := range s.Findings {
				ids = append(ids, f.ID)
			}
			if s.Health != c.want || !slices.Equal(ids, c.ids) {
				t.Errorf("health %s, findings %v; want %s, %v", s.Health, ids, c.want, c.ids)
			}
			for i, want := range c.undelivered {
				got := s.PriorityGroups[i].UndeliveredSeconds
				if (got == nil) != (want == nil) || got != nil && *got != *want {
					t.Errorf("group %s: undelivered %v, want %v", s.PriorityGroups[i].Group, deref(got), deref(want))
				}
			}
		})
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// What FromInfo reads of the priority groups and replication.
func TestPriorityGroupFigures(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := FromInfo(&jetstream.ConsumerInfo{Stream: "S", Name: "c", TimeStamp: now,
		Config:         jetstream.ConsumerConfig{PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"jobs", "other"}, PinnedTTL: 90 * time.Second},
		PriorityGroups: []jetstream.PriorityGroupState{{Group: "jobs", PinnedClientID: "PIN1", PinnedTS: now.Add(-5 * time.Minute)}}})
	if s.PriorityPolicy != PolicyPinnedClient || s.PriorityTimeoutSeconds == nil || *s.PriorityTimeoutSeconds != 90 {
		t.Errorf("policy %q, timeout %v", s.PriorityPolicy, deref(s.PriorityTimeoutSeconds))
	}
	if len(s.PriorityGroups) != 2 {
		t.Fatalf("groups %+v", s.PriorityGroups)
	}
	g := s.PriorityGroups[0]
	if g.PinnedClientID != "PIN1" || g.PinnedSince == nil || !g.PinnedSince.Equal(now.Add(-5*time.Minute)) || g.PinnedSeconds == nil || *g.PinnedSeconds != 300 {
		t.Errorf("jobs: %+v", g)
	}
	if o := s.PriorityGroups[1]; o.PinnedClientID != "" || o.PinnedSince != nil || o.PinnedSeconds != nil {
		t.Errorf("other: %+v", o)
	}
	if g, ok := s.PinnedGroup(); !ok || g.Group != "jobs" {
		t.Errorf("PinnedGroup() = %+v, %v", g, ok)
	}
	if s.Replication != nil {
		t.Errorf("replication %+v for a worker's consumer", s.Replication)
	}
	for md, want := range map[string]Replication{
		"_nats.mirror.stream": {Stream: "X", Kind: ReplicationMirror},
		"_nats.src.stream":    {Stream: "X", Kind: ReplicationSource},
	} {
		r := FromInfo(&jetstream.ConsumerInfo{Config: jetstream.ConsumerConfig{Metadata: map[string]string{md: "X"}}}).Replication
		if r == nil || *r != want {
			t.Errorf("metadata %s: replication %+v, want %+v", md, r, want)
		}
	}
	// The prefix jetctl once looked for is not the server's.
	if r := FromInfo(&jetstream.ConsumerInfo{Config: jetstream.ConsumerConfig{Metadata: map[string]string{"_nats.source.stream": "X"}}}).Replication; r != nil {
		t.Errorf("_nats.source.stream read as replication: %+v", r)
	}
}
