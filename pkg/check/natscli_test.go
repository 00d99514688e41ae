package check

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/errkind"
)

func TestStatusOrder(t *testing.T) {
	for _, c := range []struct {
		in   []Status
		want Status
	}{
		{nil, OK},
		{[]Status{OK, Warning}, Warning},
		{[]Status{Warning, Unknown}, Unknown},
		{[]Status{Unknown, Critical, Warning}, Critical},
		{[]Status{Critical, OK}, Critical},
	} {
		if got := Worst(c.in...); got != c.want {
			t.Errorf("Worst(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	// The values are the nagios exit codes.
	if OK != 0 || Warning != 1 || Critical != 2 || Unknown != 3 {
		t.Fatal("statuses are not the nagios codes")
	}
}

func TestEffectiveMonitorFlagBeatsMetadataPerKey(t *testing.T) {
	meta := map[string]string{
		"io.nats.monitor.unprocessed-critical": "10",
		"io.nats.monitor.waiting-critical":     "3",
		"io.jetctl.check.lag-warning":          "1m",
	}
	flags := map[string]string{"io.nats.monitor.unprocessed-critical": "100"}
	e := effectiveMonitor(ConsumerSettings, meta, flags)
	if e.values["io.nats.monitor.unprocessed-critical"] != "100" || e.source["io.nats.monitor.unprocessed-critical"] != SourceFlag {
		t.Errorf("unprocessed-critical: %q from %s, want 100 from the flag", e.values["io.nats.monitor.unprocessed-critical"], e.source["io.nats.monitor.unprocessed-critical"])
	}
	if e.values["io.nats.monitor.waiting-critical"] != "3" || e.source["io.nats.monitor.waiting-critical"] != SourceMetadata {
		t.Errorf("waiting-critical: %q from %s, want 3 from metadata", e.values["io.nats.monitor.waiting-critical"], e.source["io.nats.monitor.waiting-critical"])
	}
	if len(e.values) != 2 {
		t.Errorf("values %v: want only natscli's keys", e.values)
	}
}

func pullInfo(pending uint64, ackPending, redelivered, waiting int, lastDelivery *time.Time) *jetstream.ConsumerInfo {
	return &jetstream.ConsumerInfo{Stream: "S", Name: "C", Created: time.Now().Add(-time.Hour),
		Config:     jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1000},
		NumPending: pending, NumAckPending: ackPending, NumRedelivered: redelivered, NumWaiting: waiting,
		Delivered: jetstream.SequenceInfo{Consumer: 5, Stream: 5, Last: lastDelivery}}
}

func find(t *testing.T, checks []Check, name string) Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, checks)
	return Check{}
}

func TestConsumerNatscliJudgesEachThreshold(t *testing.T) {
	info := pullInfo(10, 2, 1, 0, nil)
	e := effectiveMonitor(ConsumerSettings, map[string]string{
		"io.nats.monitor.unprocessed-critical":     "5",
		"io.nats.monitor.outstanding-ack-critical": "50",
	}, map[string]string{"io.nats.monitor.redelivery-critical": "1"})
	checks := consumerNatscli(info, e)
	if len(checks) != 3 {
		t.Fatalf("checks %+v: want 3, one per threshold set", checks)
	}
	u := find(t, checks, "unprocessed")
	if u.Status != Critical || *u.Value != 10 || *u.Critical != 5 || u.CriticalSource != SourceMetadata ||
		u.CriticalSetting != "io.nats.monitor.unprocessed-critical" || u.By != "natscli" {
		t.Errorf("unprocessed: %+v", u)
	}
	if !strings.Contains(u.Message, "Unprocessed Messages: 10") {
		t.Errorf("unprocessed message %q: want natscli's", u.Message)
	}
	if a := find(t, checks, "outstanding-ack"); a.Status != OK {
		t.Errorf("outstanding-ack: %+v, want OK (2 < 50)", a)
	}
	r := find(t, checks, "redelivery")
	if r.Status != Critical || r.CriticalSource != SourceFlag || r.CriticalSetting != "--redelivery-critical" {
		t.Errorf("redelivery: %+v, want critical from the flag", r)
	}
}

// natscli's --last-delivery-critical fires on a consumer that has simply
// had nothing to deliver: jetctl judges it as natscli does (and documents
// --stall-critical as what to use instead).
func TestConsumerNatscliLastDeliveryFiresWhenIdle(t *testing.T) {
	last := time.Now().Add(-time.Hour)
	checks := consumerNatscli(pullInfo(0, 0, 0, 1, &last), effectiveMonitor(ConsumerSettings, map[string]string{"io.nats.monitor.last-delivery-critical": "10m"}, nil))
	c := find(t, checks, "last-delivery")
	if c.Status != Critical || *c.Critical != 600 || c.Value == nil || *c.Value < 3599 {
		t.Errorf("last-delivery: %+v", c)
	}
}

func TestConsumerNatscliMetadataThatDoesNotParseIsUnknown(t *testing.T) {
	checks := consumerNatscli(pullInfo(10, 0, 0, 0, nil), effectiveMonitor(ConsumerSettings, map[string]string{
		"io.nats.monitor.unprocessed-critical": "lots",
		"io.nats.monitor.waiting-critical":     "1",
	}, nil))
	u := find(t, checks, "unprocessed")
	if u.Status != Unknown || !strings.Contains(u.Message, `metadata io.nats.monitor.unprocessed-critical="lots"`) {
		t.Errorf("unprocessed: %+v, want unknown naming the key", u)
	}
	// The rest is still judged.
	if w := find(t, checks, "waiting"); w.Status != OK || *w.Value != 0 {
		t.Errorf("waiting: %+v, want OK (0 waiting pulls, critical from 1)", w)
	}
}

func TestValidateMonitorNamesTheFlag(t *testing.T) {
	err := ValidateMonitor(StreamSettings, map[string]string{"io.nats.monitor.seen-critical": "soon"})
	if !errors.Is(err, errkind.Invalid) || !strings.Contains(err.Error(), `--seen-critical "soon"`) {
		t.Errorf("err = %v, want invalid naming --seen-critical", err)
	}
	if err := ValidateMonitor(StreamSettings, map[string]string{"io.nats.monitor.lag-critical": "100", "io.nats.monitor.seen-critical": "1d"}); err != nil {
		t.Errorf("valid values: %v", err)
	}
	err = ValidateMonitor(StreamSettings, map[string]string{"io.nats.monitor.lag-critical": "-1"})
	if err == nil || !strings.Contains(err.Error(), "--source-lag-critical") {
		t.Errorf("err = %v, want one naming --source-lag-critical (natscli's stream --lag-critical)", err)
	}
}

func streamInfo(msgs uint64, replicas int, cluster *jetstream.ClusterInfo) *jetstream.StreamInfo {
	return &jetstream.StreamInfo{Config: jetstream.StreamConfig{Name: "S", Replicas: replicas, MaxMsgs: -1, MaxBytes: -1},
		State: jetstream.StreamState{Msgs: msgs}, Cluster: cluster}
}

func TestStreamNatscliMessagesAreAMinimum(t *testing.T) {
	e := effectiveMonitor(StreamSettings, map[string]string{"io.nats.monitor.msgs-warn": "10", "io.nats.monitor.msgs-critical": "5"}, nil)
	for _, c := range []struct {
		msgs uint64
		want Status
	}{{3, Critical}, {8, Warning}, {20, OK}} {
		m := find(t, streamNatscli(streamInfo(c.msgs, 1, nil), e), "msgs")
		if m.Status != c.want || *m.Warning != 10 || *m.Critical != 5 {
			t.Errorf("%d messages: %+v, want %v", c.msgs, m, c.want)
		}
	}
}

// Without peer-expect, a replica's lag is judged against the configured
// replicas (natscli would compare the peers with 0 and fail).
func TestStreamNatscliPeerLagExpectsTheConfiguredReplicas(t *testing.T) {
	cluster := &jetstream.ClusterInfo{Name: "c", Leader: "n1", Replicas: []*jetstream.PeerInfo{
		{Name: "n2", Current: true, Lag: 0}, {Name: "n3", Current: false, Lag: 500}}}
	e := effectiveMonitor(StreamSettings, map[string]string{"io.nats.monitor.peer-lag-critical": "100"}, nil)
	c := find(t, streamNatscli(streamInfo(1, 3, cluster), e), "peer-lag")
	if c.Status != Critical || *c.Value != 500 || !strings.Contains(c.Message, "1 replicas lagged") {
		t.Errorf("peer-lag: %+v", c)
	}
	e = effectiveMonitor(StreamSettings, map[string]string{"io.nats.monitor.peer-lag-critical": "1000"}, nil)
	if c := find(t, streamNatscli(streamInfo(1, 3, cluster), e), "peer-lag"); c.Status != OK {
		t.Errorf("peer-lag under the level: %+v", c)
	}
}

func TestLimitCheck(t *testing.T) {
	cfg := Config{LimitsWarning: DefaultLimitsWarning, LimitsCritical: DefaultLimitsCritical}
	for _, c := range []struct {
		used    float64
		discard jetstream.DiscardPolicy
		want    Status
	}{
		{50, jetstream.DiscardNew, OK},
		{85, jetstream.DiscardNew, Warning},
		{96, jetstream.DiscardNew, Critical},
		// Discard old makes room: what the limit is for.
		{100, jetstream.DiscardOld, OK},
	} {
		got := limitCheck("limit-messages", c.used, 100, c.discard, cfg)
		if got.Status != c.want || *got.Value != c.used {
			t.Errorf("%v%% with %v: %+v, want %v", c.used, c.discard, got, c.want)
		}
	}
	off := limitCheck("limit-bytes", 100, 100, jetstream.DiscardNew, Config{})
	if off.Status != OK || off.Warning != nil || off.Critical != nil {
		t.Errorf("levels off: %+v", off)
	}
}

func TestReplicasCheck(t *testing.T) {
	si := streamInfo(1, 3, &jetstream.ClusterInfo{Name: "c", Leader: "n1", Replicas: []*jetstream.PeerInfo{
		{Name: "n2", Current: true}, {Name: "n3", Offline: true}}})
	c, ok := replicasCheck(si)
	if !ok || c.Status != Warning || *c.Value != 2 || !strings.Contains(c.Message, "n3 offline") {
		t.Errorf("replicas: %+v", c)
	}
	if _, ok := replicasCheck(streamInfo(1, 1, nil)); ok {
		t.Error("an R1 stream has no replicas check")
	}
}

func TestLeaderless(t *testing.T) {
	for _, c := range []struct {
		sr   *streamRead
		want bool
	}{
		{&streamRead{offline: true}, true},
		{&streamRead{info: streamInfo(1, 3, &jetstream.ClusterInfo{Name: "c"})}, true},
		{&streamRead{info: streamInfo(1, 3, &jetstream.ClusterInfo{Name: "c", Leader: "n1"})}, false},
		// A single server: no cluster to elect in.
		{&streamRead{info: streamInfo(1, 1, &jetstream.ClusterInfo{Leader: "s1"})}, false},
		{&streamRead{info: streamInfo(1, 1, nil)}, false},
	} {
		if got := c.sr.leaderless(); got != c.want {
			t.Errorf("%+v: leaderless %v, want %v", c.sr.info, got, c.want)
		}
	}
}

func TestCatchingUp(t *testing.T) {
	for _, c := range []struct {
		cl   *jetstream.ClusterInfo
		want bool
	}{
		{nil, false},
		{&jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{{Name: "n2", Current: true}}}, false},
		// Right after an election: up, not yet current.
		{&jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{{Name: "n2", Current: false}}}, true},
		// A server down is no election: nothing to wait for.
		{&jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{{Name: "n2", Offline: true}}}, false},
		// No leader: leaderless, not catching up.
		{&jetstream.ClusterInfo{Replicas: []*jetstream.PeerInfo{{Name: "n2"}}}, false},
	} {
		if got := catchingUp(c.cl); got != c.want {
			t.Errorf("%+v: catchingUp %v, want %v", c.cl, got, c.want)
		}
	}
}
