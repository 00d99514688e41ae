package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// CheckServer refuses what the server would, and only that: the cluster
// size counts only where it is known and the stream is placed in this
// cluster, and live consumers count only while they stay.
func TestCheckServer(t *testing.T) {
	stream := func(name string, replicas int, placement *jetstream.Placement) *Resource {
		return &Resource{Kind: KindStream, Name: name, FieldPos: map[string]Pos{},
			StreamConfig: &jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Replicas: replicas, Placement: placement}}
	}
	consumer := func(stream, name string, cfg jetstream.ConsumerConfig) *Resource {
		cfg.Name, cfg.Durable = name, name
		return &Resource{Kind: KindConsumer, Stream: stream, Name: name, FieldPos: map[string]Pos{}, ConsumerConfig: &cfg}
	}
	live := &Live{
		Streams: map[string]*jetstream.StreamInfo{
			"WORK": {Config: jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Retention: jetstream.WorkQueuePolicy}},
			"JOBS": {Config: jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"jobs.>"}, Retention: jetstream.WorkQueuePolicy}},
		},
		Consumers: map[string]map[string]*jetstream.ConsumerInfo{
			"WORK": {"packers": {Name: "packers", Config: jetstream.ConsumerConfig{Durable: "packers", FilterSubject: "work.pack"}}},
			// The consumer through which stream ALL sources JOBS.
			"JOBS": {"JS_SRC_x": {Name: "JS_SRC_x", Config: jetstream.ConsumerConfig{Durable: "JS_SRC_x", AckPolicy: jetstream.AckFlowControlPolicy,
				DeliverSubject: "$JS.S.x", Metadata: map[string]string{"_nats.src.stream": "ALL", "_nats.src.acc": "$G"}}}},
		},
	}
	single := ServerLimits{MaxPayload: 1 << 20}
	three := ServerLimits{Clustered: true, Cluster: "east", Servers: 3, MaxPayload: 1 << 20}
	unknown := ServerLimits{Clustered: true, Cluster: "east"}
	for _, tt := range []struct {
		name string
		lim  ServerLimits
		res  []*Resource
		want []string // substrings of the problems, in order; none when empty
	}{
		{"R1 on a single server", single, []*Resource{stream("A", 1, nil)}, nil},
		{"R3 on a single server", single, []*Resource{stream("A", 3, nil)}, []string{"not clustered"}},
		{"R3 on 3 servers", three, []*Resource{stream("A", 3, nil)}, nil},
		{"R5 on 3 servers", three, []*Resource{stream("A", 5, nil)}, []string{`cluster "east" has 3 servers`}},
		{"R5 placed in another cluster", three, []*Resource{stream("A", 5, &jetstream.Placement{Cluster: "west"})}, nil},
		{"R5 placed in this cluster", three, []*Resource{stream("A", 5, &jetstream.Placement{Cluster: "east"})}, []string{"has 3 servers"}},
		{"R5 in a cluster of unknown size", unknown, []*Resource{stream("A", 5, nil)}, nil},
		{"R6 anywhere", unknown, []*Resource{stream("A", 6, nil)}, []string{"at most 5"}},
		{"kv R3 on a single server", single, []*Resource{{Kind: KindKV, Name: "cfg", FieldPos: map[string]Pos{},
			KeyValueConfig: &jetstream.KeyValueConfig{Bucket: "cfg", Replicas: 3}}}, []string{"not clustered"}},
		{"workqueue consumer acking none", single, []*Resource{consumer("WORK", "fast", jetstream.ConsumerConfig{FilterSubject: "work.fast", AckPolicy: jetstream.AckNonePolicy})},
			[]string{"must use ack_policy explicit"}},
		{"workqueue consumer overlapping one that stays", single, []*Resource{consumer("WORK", "more", jetstream.ConsumerConfig{FilterSubject: "work.*"})},
			[]string{`overlaps "work.pack" of consumer "packers"`}},
		{"workqueue consumer redeclaring the live one", single, []*Resource{consumer("WORK", "packers", jetstream.ConsumerConfig{FilterSubject: "work.pack", MaxDeliver: 3})}, nil},
		{"workqueue stream replaced: live consumers go", single, []*Resource{
			{Kind: KindStream, Name: "WORK", FieldPos: map[string]Pos{}, StreamConfig: &jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.MemoryStorage}},
			consumer("WORK", "more", jetstream.ConsumerConfig{FilterSubject: "work.*"})}, nil},
		{"max_ack_pending above the account's", ServerLimits{MaxAckPending: 100}, []*Resource{consumer("WORK", "x", jetstream.ConsumerConfig{FilterSubject: "work.x", MaxAckPending: 500})},
			[]string{"above the account's limit of 100"}},
		{"workqueue consumer beside a sourcing stream's", single, []*Resource{consumer("JOBS", "workers", jetstream.ConsumerConfig{})}, nil},
		{"the sourcing stream's consumer declared", single, []*Resource{consumer("JOBS", "JS_SRC_x", jetstream.ConsumerConfig{DeliverSubject: "$JS.S.x"})},
			[]string{`consumer "JS_SRC_x": the server's own consumer, through which stream ALL sources "JOBS": jetctl leaves it to the server`}},
		{"allow_batched on an API level 2 server", ServerLimits{APILevel: 2}, []*Resource{func() *Resource {
			r := stream("FAST", 1, nil)
			r.StreamConfig.AllowBatchPublish, r.StreamConfig.AllowMsgCounter = true, true
			return r
		}()}, []string{`stream "FAST": allow_batched needs API level 4; the server has 2`}},
		{"allow_batched on an API level 5 server", ServerLimits{APILevel: 5}, []*Resource{func() *Resource {
			r := stream("FAST", 1, nil)
			r.StreamConfig.AllowBatchPublish = true
			return r
		}()}, nil},
		{"flow_control acks and a pause before API level 1", ServerLimits{}, []*Resource{consumer("WORK", "x", jetstream.ConsumerConfig{FilterSubject: "work.x",
			AckPolicy: jetstream.AckFlowControlPolicy, PauseUntil: &time.Time{}, PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: []string{"g"}})},
			[]string{"priority_policy needs API level 1; the server has 0", "priority_groups needs API level 1", "ack_policy flow_control needs API level 4; the server has 0"}},
		{"kv limit_marker_ttl before API level 1", ServerLimits{}, []*Resource{{Kind: KindKV, Name: "cfg", FieldPos: map[string]Pos{},
			KeyValueConfig: &jetstream.KeyValueConfig{Bucket: "cfg", LimitMarkerTTL: time.Minute}}}, []string{`kv bucket "cfg": limit_marker_ttl needs API level 1; the server has 0`}},
	} {
		p, err := Compute(&Desired{Resources: tt.res}, live, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		problems := CheckServer(p, live, tt.lim)
		if len(problems) != len(tt.want) {
			t.Errorf("%s: %d problems %v, want %d", tt.name, len(problems), problems, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(problems[i].Message, w) {
				t.Errorf("%s: problem %q, want it to say %q", tt.name, problems[i].Message, w)
			}
		}
	}

	// max_msg_size above max_payload is accepted by the server: a warning.
	big := stream("BIG", 1, nil)
	big.StreamConfig.MaxMsgSize = 8 << 20
	p, _ := Compute(&Desired{Resources: []*Resource{big}}, live, Options{})
	if problems := CheckServer(p, live, single); len(problems) != 0 {
		t.Errorf("max_msg_size: problems %v, want a warning", problems)
	}
	if w := p.Resources[0].Warnings; len(w) != 1 || !strings.Contains(w[0], "max_payload 1MiB") {
		t.Errorf("max_msg_size: warnings %q", w)
	}
}
