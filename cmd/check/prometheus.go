package check

import (
	"io"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/jetctl/jetctl/pkg/check"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
)

// The metrics, each documented in docs/check.md. Labels: stream and
// consumer name the item; health the word of the state set; limit,
// source and mirror the stream's limit or copy.
var (
	descCheckStatus   = desc("jetctl_check_status", "The worst status of the last check: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.")
	descCheckUp       = desc("jetctl_check_up", "1 when the last check reached the server, 0 when it failed.")
	descCheckDuration = desc("jetctl_check_duration_seconds", "How long the last check took.")
	descCheckTime     = desc("jetctl_check_timestamp_seconds", "When the last check started, in seconds since the epoch.")
	descCheckItems    = desc("jetctl_check_items", "Streams and consumers checked, by kind and status (skipped: io.nats.monitor.enabled=false).", "kind", "status")
	descCheckRuns     = desc("jetctl_check_evaluations_total", "Checks run by this process.")
	descCheckErrors   = desc("jetctl_check_errors_total", "Checks run by this process that failed to read the server.")

	descConsumerStatus      = desc("jetctl_consumer_status", "The consumer's status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.", "stream", "consumer")
	descConsumerHealth      = desc("jetctl_consumer_health", "The consumer's health word, as consumer ls gives it: 1 for its word, 0 for the others.", "stream", "consumer", "health")
	descConsumerLag         = desc("jetctl_consumer_lag_seconds", "Age of the oldest message the consumer has not had delivered (0: nothing unprocessed; absent: unknown).", "stream", "consumer")
	descConsumerUnprocessed = desc("jetctl_consumer_unprocessed_messages", "Messages matching the consumer's filter never delivered (num_pending).", "stream", "consumer")
	descConsumerAckPending  = desc("jetctl_consumer_ack_pending_messages", "Messages delivered and not yet acknowledged (num_ack_pending).", "stream", "consumer")
	descConsumerRedelivered = desc("jetctl_consumer_redelivered_messages", "Messages redelivered at least once and not yet acknowledged (num_redelivered).", "stream", "consumer")
	descConsumerWaiting     = desc("jetctl_consumer_waiting_pulls", "Pull requests waiting for messages (num_waiting).", "stream", "consumer")
	descConsumerDead        = desc("jetctl_consumer_dead_letters", "Dead letters of the consumer that wait, captured and not swept or in the DLQ (absent: no capture).", "stream", "consumer")
	descConsumerFloorAge    = desc("jetctl_consumer_ack_floor_age_seconds", "Time since the ack floor last moved (since creation when nothing was ever acknowledged; absent: unknown).", "stream", "consumer")
	descConsumerPinned      = desc("jetctl_consumer_priority_group_pinned_seconds", "How long a priority group has been pinned to its client (absent: no client pinned).", "stream", "consumer", "group")

	descStreamStatus     = desc("jetctl_stream_status", "The stream's status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.", "stream")
	descStreamMessages   = desc("jetctl_stream_messages", "Messages stored in the stream.", "stream")
	descStreamBytes      = desc("jetctl_stream_bytes", "Bytes stored in the stream.", "stream")
	descStreamLimit      = desc("jetctl_stream_limit", "The stream's max_msgs (limit=\"messages\") and max_bytes (limit=\"bytes\"), when set.", "stream", "limit")
	descStreamLimitUsed  = desc("jetctl_stream_limit_used_ratio", "How full the stream is against its max_msgs or max_bytes, from 0 to 1, when set.", "stream", "limit")
	descStreamConsumers  = desc("jetctl_stream_consumers", "Consumers of the stream.", "stream")
	descStreamReplicas   = desc("jetctl_stream_replicas", "Replicas the stream is configured with.", "stream")
	descStreamCurrent    = desc("jetctl_stream_replicas_current", "Peers of the stream, the leader included, that are current.", "stream")
	descStreamLeader     = desc("jetctl_stream_leader", "1 when the stream has a leader.", "stream")
	descStreamSourceLag  = desc("jetctl_stream_source_lag_messages", "Messages a mirror or source is behind its origin.", "stream", "source", "mirror")
	descStreamSourceSeen = desc("jetctl_stream_source_active_seconds", "Time since a mirror's or source's origin was last seen.", "stream", "source", "mirror")
)

// Descs are every metric check exposes, for the docs' test.
var Descs = []*prometheus.Desc{descCheckStatus, descCheckUp, descCheckDuration, descCheckTime, descCheckItems, descCheckRuns, descCheckErrors,
	descConsumerStatus, descConsumerHealth, descConsumerLag, descConsumerUnprocessed, descConsumerAckPending, descConsumerRedelivered,
	descConsumerWaiting, descConsumerDead, descConsumerFloorAge, descConsumerPinned,
	descStreamStatus, descStreamMessages, descStreamBytes, descStreamLimit, descStreamLimitUsed, descStreamConsumers,
	descStreamReplicas, descStreamCurrent, descStreamLeader, descStreamSourceLag, descStreamSourceSeen}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// healthWords are the words of the state set, most urgent first.
var healthWords = []pkgconsumer.Health{pkgconsumer.HealthNoLeader, pkgconsumer.HealthStalled, pkgconsumer.HealthFailing,
	pkgconsumer.HealthPoison, pkgconsumer.HealthPaused, pkgconsumer.HealthBehind, pkgconsumer.HealthDeadLetters,
	pkgconsumer.HealthDegraded, pkgconsumer.HealthMisconfigured, pkgconsumer.HealthIdle, pkgconsumer.HealthReplication, pkgconsumer.HealthOK}

// collector turns the latest evaluation into metrics, on each Collect:
// evaluation says what it is (a report, or the error that prevented
// one).
type collector struct {
	evaluation func() evaluation
}

// evaluation is one check's outcome, with the process's counts.
type evaluation struct {
	report      *check.Report
	err         error
	runs, fails int
}

// Describe sends nothing: the series depend on what the server holds,
// so the collector is unchecked.
func (c *collector) Describe(chan<- *prometheus.Desc) {}

// Collect emits the metrics of the latest evaluation.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ev := c.evaluation()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	ch <- prometheus.MustNewConstMetric(descCheckRuns, prometheus.CounterValue, float64(ev.runs))
	ch <- prometheus.MustNewConstMetric(descCheckErrors, prometheus.CounterValue, float64(ev.fails))
	r := ev.report
	if r == nil {
		gauge(descCheckUp, 0)
		gauge(descCheckStatus, float64(check.Unknown))
		return
	}
	up := 1.0
	if ev.err != nil {
		up = 0
	}
	gauge(descCheckUp, up)
	gauge(descCheckStatus, float64(r.Status))
	gauge(descCheckDuration, r.DurationSeconds)
	gauge(descCheckTime, float64(r.Time.UnixNano())/1e9)
	counts := map[string]check.Counts{}
	for _, s := range r.Streams {
		cs := counts["stream"]
		cs.Add(s.Status, s.Skipped)
		counts["stream"] = cs
		streamMetrics(gauge, s)
	}
	for _, cr := range r.Consumers {
		cs := counts["consumer"]
		cs.Add(cr.Status, cr.Skipped)
		counts["consumer"] = cs
		consumerMetrics(gauge, cr)
	}
	for _, kind := range []string{"stream", "consumer"} {
		cs := counts[kind]
		for status, n := range map[string]int{"ok": cs.OK, "warning": cs.Warning, "critical": cs.Critical, "unknown": cs.Unknown, "skipped": cs.Skipped} {
			gauge(descCheckItems, float64(n), kind, status)
		}
	}
}

type gaugeFunc func(d *prometheus.Desc, v float64, labels ...string)

func consumerMetrics(gauge gaugeFunc, c *check.ConsumerResult) {
	l := []string{c.Stream, c.Consumer}
	gauge(descConsumerStatus, float64(c.Status), l...)
	for _, w := range healthWords {
		v := 0.0
		if c.Health == w {
			v = 1
		}
		gauge(descConsumerHealth, v, c.Stream, c.Consumer, string(w))
	}
	gauge(descConsumerUnprocessed, float64(c.Unprocessed), l...)
	gauge(descConsumerAckPending, float64(c.AckPending), l...)
	gauge(descConsumerRedelivered, float64(c.Redelivered), l...)
	gauge(descConsumerWaiting, float64(c.WaitingPulls), l...)
	for _, g := range c.PriorityGroups {
		if g.PinnedSeconds != nil {
			gauge(descConsumerPinned, *g.PinnedSeconds, c.Stream, c.Consumer, g.Group)
		}
	}
	if c.Replication != nil {
		// The server's own consumer for a mirror or a source: its lag is
		// the reading stream's (jetctl_stream_source_lag_messages), and
		// an alert on consumer lag or stalls must not fire for it.
		return
	}
	if c.LagSeconds != nil {
		gauge(descConsumerLag, *c.LagSeconds, l...)
	}
	if c.DeadLetters != nil {
		gauge(descConsumerDead, float64(*c.DeadLetters), l...)
	}
	if c.AckFloorAgeSeconds != nil {
		gauge(descConsumerFloorAge, *c.AckFloorAgeSeconds, l...)
	}
}

func streamMetrics(gauge gaugeFunc, s *check.StreamResult) {
	gauge(descStreamStatus, float64(s.Status), s.Stream)
	if s.Info == nil || s.Replicas == 0 {
		gauge(descStreamLeader, 0, s.Stream)
		return
	}
	gauge(descStreamMessages, float64(s.Messages), s.Stream)
	gauge(descStreamBytes, float64(s.Bytes), s.Stream)
	for _, l := range []struct {
		name        string
		used, limit int64
	}{{"messages", int64(s.Messages), s.MaxMessages}, {"bytes", int64(s.Bytes), s.MaxBytes}} {
		if l.limit > 0 {
			gauge(descStreamLimit, float64(l.limit), s.Stream, l.name)
			gauge(descStreamLimitUsed, float64(l.used)/float64(l.limit), s.Stream, l.name)
		}
	}
	gauge(descStreamConsumers, float64(s.Consumers), s.Stream)
	gauge(descStreamReplicas, float64(s.Replicas), s.Stream)
	gauge(descStreamCurrent, float64(s.ReplicasCurrent), s.Stream)
	leader := 1.0
	if s.Leader == "" && s.Replicas > 1 {
		leader = 0
	}
	for _, c := range s.Checks {
		if c.Name == "leader" && c.Status == check.Critical {
			leader = 0
		}
	}
	gauge(descStreamLeader, leader, s.Stream)
	for _, src := range s.Sources {
		mirror := "false"
		if src.Mirror {
			mirror = "true"
		}
		gauge(descStreamSourceLag, float64(src.Lag), s.Stream, src.Name, mirror)
		gauge(descStreamSourceSeen, src.ActiveSeconds, s.Stream, src.Name, mirror)
	}
}

// registry is a registry holding only the collector.
func registry(c *collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg
}

// writePrometheus writes one report in the Prometheus text format.
func writePrometheus(w io.Writer, r *check.Report) error {
	families, err := registry(&collector{evaluation: func() evaluation { return evaluation{report: r, runs: 1} }}).Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range families {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// MetricNames are the names of the metrics, for the docs' test.
func MetricNames() []string {
	var names []string
	for _, d := range Descs {
		s := d.String()
		_, rest, _ := strings.Cut(s, `fqName: "`)
		name, _, _ := strings.Cut(rest, `"`)
		names = append(names, name)
	}
	return names
}
