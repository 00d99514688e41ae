package jsapi

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// The level of each feature in StreamLevelFeatures, ConsumerLevelFeatures
// and KVLevelFeatures is the one the server stores as _nats.req.level for
// a config that uses that feature alone, and the account info reports the
// server's own level (what plan compares them with).
func TestFactRequiredAPILevel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	ai, err := js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ai.API.Level != 5 {
		t.Errorf("account info api.level %d, want 5 (nats-server 2.15)", ai.API.Level)
	}

	streams := map[string]jetstream.StreamConfig{
		"allow_msg_ttl":             {AllowMsgTTL: true},
		"subject_delete_marker_ttl": {SubjectDeleteMarkerTTL: time.Second},
		"allow_msg_counter":         {AllowMsgCounter: true},
		"allow_atomic":              {AllowAtomicPublish: true},
		"allow_msg_schedules":       {AllowMsgSchedules: true},
		"persist_mode async":        {PersistMode: jetstream.AsyncPersistMode},
		"allow_batched":             {AllowBatchPublish: true},
	}
	for i, f := range StreamLevelFeatures {
		cfg, ok := streams[f.String()]
		if !ok {
			t.Errorf("stream feature %s: no example config in this test", f)
			continue
		}
		if !f.Uses(&cfg) || RequiredLevel(StreamLevelFeatures, &cfg) != f.Level {
			t.Errorf("stream feature %s: the example does not use it alone", f)
		}
		cfg.Name = fmt.Sprintf("S%d", i)
		cfg.Subjects = []string{fmt.Sprintf("s%d.>", i)}
		s, err := js.CreateStream(ctx, cfg)
		if err != nil {
			t.Errorf("stream with %s: %v", f, err)
			continue
		}
		if got := s.CachedInfo().Config.Metadata[MetaRequiredLevel]; got != strconv.Itoa(f.Level) {
			t.Errorf("stream with %s: %s %q, want %d", f, MetaRequiredLevel, got, f.Level)
		}
	}

	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "C", Subjects: []string{"c.>"}}); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	consumers := map[string]jetstream.ConsumerConfig{
		"pause_until":             {PauseUntil: &future},
		"priority_policy":         {PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: []string{"jobs"}},
		"priority_groups":         {PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"jobs"}},
		"priority_timeout":        {PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"jobs"}, PinnedTTL: time.Minute},
		"ack_policy flow_control": {AckPolicy: jetstream.AckFlowControlPolicy, DeliverSubject: "fc.deliver"},
	}
	client := New(js)
	for i, f := range ConsumerLevelFeatures {
		cfg, ok := consumers[f.String()]
		if !ok {
			t.Errorf("consumer feature %s: no example config in this test", f)
			continue
		}
		if !f.Uses(&cfg) || RequiredLevel(ConsumerLevelFeatures, &cfg) != f.Level {
			t.Errorf("consumer feature %s: the example does not use it alone", f)
		}
		cfg.Durable = fmt.Sprintf("c%d", i)
		// The raw request: nats.go's CreateConsumer takes pull consumers only.
		var resp struct {
			Error  *jetstream.APIError       `json:"error"`
			Config *jetstream.ConsumerConfig `json:"config"`
		}
		req := map[string]any{"stream_name": "C", "config": cfg}
		if err := client.Request(ctx, "CONSUMER.CREATE.C."+cfg.Durable, req, &resp); err != nil {
			t.Fatal(err)
		}
		if resp.Error != nil || resp.Config == nil {
			t.Errorf("consumer with %s: %v", f, resp.Error)
			continue
		}
		if got := resp.Config.Metadata[MetaRequiredLevel]; got != strconv.Itoa(f.Level) {
			t.Errorf("consumer with %s: %s %q, want %d", f, MetaRequiredLevel, got, f.Level)
		}
	}

	for _, f := range KVLevelFeatures {
		cfg := jetstream.KeyValueConfig{Bucket: "ttl", LimitMarkerTTL: time.Second}
		if !f.Uses(&cfg) {
			t.Fatalf("kv feature %s: the example does not use it", f)
		}
		kv, err := js.CreateKeyValue(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s, err := js.Stream(ctx, "KV_"+kv.Bucket())
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Metadata[MetaRequiredLevel]; got != strconv.Itoa(f.Level) {
			t.Errorf("bucket with %s: %s %q, want %d", f, MetaRequiredLevel, got, f.Level)
		}
	}
}

func TestAboveLevel(t *testing.T) {
	cfg := jetstream.StreamConfig{AllowMsgTTL: true, AllowBatchPublish: true, PersistMode: jetstream.AsyncPersistMode}
	var names []string
	for _, f := range AboveLevel(StreamLevelFeatures, &cfg, 1) {
		names = append(names, f.String())
	}
	if fmt.Sprint(names) != "[persist_mode async allow_batched]" {
		t.Errorf("above level 1: %v", names)
	}
	if got := RequiredLevel(StreamLevelFeatures, &cfg); got != 4 {
		t.Errorf("required level %d, want 4", got)
	}
	if got := AboveLevel(StreamLevelFeatures, &cfg, 5); len(got) != 0 {
		t.Errorf("above level 5: %v", got)
	}
}
