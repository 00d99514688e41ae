package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// The server refuses to change a stream's retention to workqueue in place
// (10052): plan classifies it as Refused, which only a replacement or a
// migration reaches.
func TestFactRetentionToWorkqueueRefusedInPlace(t *testing.T) {
	ctx := context.Background()
	js := embeddedtest.JetStream(t)
	cfg := jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}}
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Retention = jetstream.WorkQueuePolicy
	_, err := js.UpdateStream(ctx, cfg)
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10052 {
		t.Fatalf("limits -> workqueue in place: %v, want error 10052", err)
	}
}

// A workqueue stream removes a message only when the consumer it belongs to
// acknowledges it. A consumer whose ack floor is above stored messages (as
// a migration re-seats it: reset to the message after its floor) never
// delivers them: they stay, with nothing pending, for good. This is what
// plan counts as kept for good when a migration goes to workqueue.
func TestFactWorkqueueKeepsWhatIsBelowTheAckFloor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := js.Publish(ctx, "work.pack", []byte("pack")); err != nil {
			t.Fatal(err)
		}
	}
	c, err := js.CreateConsumer(ctx, "WORK", jetstream.ConsumerConfig{Durable: "packers", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "work.pack"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.ResetConsumerToSequence(ctx, "WORK", "packers", 6); err != nil {
		t.Fatal(err)
	}
	batch, err := c.FetchNoWait(10)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for m := range batch.Messages() {
		md, _ := m.Metadata()
		seqs = append(seqs, md.Sequence.Stream)
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(seqs) != 5 || seqs[0] != 6 {
		t.Fatalf("delivered %v, want seqs 6 to 10", seqs)
	}
	ci, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ci.AckFloor.Stream != 10 || ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("consumer: ack floor %d, pending %d, ack pending %d; want 10, 0, 0", ci.AckFloor.Stream, ci.NumPending, ci.NumAckPending)
	}
	s, err := js.Stream(ctx, "WORK")
	if err != nil {
		t.Fatal(err)
	}
	st := s.CachedInfo().State
	if st.Msgs != 5 || st.FirstSeq != 1 {
		t.Fatalf("stream: %d messages from seq %d; want seqs 1 to 5 kept", st.Msgs, st.FirstSeq)
	}
	if _, err := s.GetMsg(ctx, 5); err != nil {
		t.Fatalf("seq 5: %v", err)
	}
}

// The server refuses each config of streamRefusals and consumerRefusals
// with the rule's error code, and takes the configs next to them that the
// rules let through: the loader refuses what the server would, and only
// that.
func TestFactServerRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORIGIN", Subjects: []string{"origin.>"}}); err != nil {
		t.Fatal(err)
	}
	mirror := &jetstream.StreamSource{Name: "ORIGIN"}
	sources := []*jetstream.StreamSource{{Name: "ORIGIN"}}
	refused := map[string]jetstream.StreamConfig{
		"max_age: at least 100ms":                                                                                    {MaxAge: 50 * time.Millisecond},
		"duplicate_window: at least 100ms":                                                                           {Duplicates: 50 * time.Millisecond},
		"allow_rollup_hdrs needs purges: it cannot be combined with deny_purge":                                      {DenyPurge: true, AllowRollup: true},
		"allow_msg_counter cannot be combined with discard: new (a counter must take every increment)":               {AllowMsgCounter: true, Discard: jetstream.DiscardNew},
		"allow_msg_counter cannot be combined with allow_msg_ttl":                                                    {AllowMsgCounter: true, AllowMsgTTL: true},
		"allow_msg_counter cannot be combined with allow_msg_schedules":                                              {AllowMsgCounter: true, AllowMsgSchedules: true},
		"allow_msg_counter needs retention: limits":                                                                  {AllowMsgCounter: true, Retention: jetstream.InterestPolicy},
		"discard_new_per_subject needs discard: new and max_msgs_per_subject > 0":                                    {DiscardNewPerSubject: true, Discard: jetstream.DiscardNew},
		"subject_delete_marker_ttl: at least 1s":                                                                     {SubjectDeleteMarkerTTL: 500 * time.Millisecond},
		"allow_msg_schedules cannot be combined with discard: new":                                                   {AllowMsgSchedules: true, Discard: jetstream.DiscardNew},
		"persist_mode async needs storage: file":                                                                     {PersistMode: jetstream.AsyncPersistMode, Storage: jetstream.MemoryStorage},
		"persist_mode async needs num_replicas: 1":                                                                   {PersistMode: jetstream.AsyncPersistMode, Replicas: 3},
		"persist_mode async cannot be combined with allow_atomic":                                                    {PersistMode: jetstream.AsyncPersistMode, AllowAtomicPublish: true},
		"a mirror cannot have first_seq":                                                                             {Mirror: mirror, FirstSeq: 10},
		"a mirror cannot have subjects":                                                                              {Mirror: mirror, Subjects: []string{"copy.>"}},
		"a mirror cannot have sources":                                                                               {Mirror: mirror, Sources: sources},
		"a mirror cannot have allow_msg_counter":                                                                     {Mirror: mirror, AllowMsgCounter: true},
		"a mirror cannot have allow_atomic":                                                                          {Mirror: mirror, AllowAtomicPublish: true},
		"a mirror cannot have allow_batched":                                                                         {Mirror: mirror, AllowBatchPublish: true},
		"a mirror cannot have allow_msg_schedules":                                                                   {Mirror: mirror, AllowMsgSchedules: true},
		"a mirror cannot have subject_delete_marker_ttl (its markers would take sequences the origin does not have)": {Mirror: mirror, SubjectDeleteMarkerTTL: time.Second},
		"a stream with sources cannot have allow_msg_schedules":                                                      {Sources: sources, AllowMsgSchedules: true},
	}
	for i, rule := range streamRefusals {
		cfg, ok := refused[rule.Message]
		if !ok {
			t.Errorf("stream rule %q: no example in this test", rule.Message)
			continue
		}
		if got := refusedBy(streamRefusals, &cfg); len(got) != 1 || got[0].Message != rule.Message {
			t.Errorf("stream rule %q: its example trips %d rules", rule.Message, len(got))
		}
		cfg.Name = fmt.Sprintf("R%d", i)
		if cfg.Mirror == nil && len(cfg.Sources) == 0 {
			cfg.Subjects = []string{fmt.Sprintf("r%d.>", i)}
		}
		_, err := js.CreateStream(ctx, cfg)
		if code := apiErrorCode(err); code != rule.Code {
			t.Errorf("stream rule %q: the server answered %v (code %d), want code %d", rule.Message, err, code, rule.Code)
		}
	}
	accepted := map[string]jetstream.StreamConfig{
		"a counter":                       {AllowMsgCounter: true},
		"async persist, R1 file":          {PersistMode: jetstream.AsyncPersistMode},
		"schedules, discard old":          {AllowMsgSchedules: true},
		"markers after 1s":                {SubjectDeleteMarkerTTL: time.Second},
		"a counter sourcing":              {AllowMsgCounter: true, Sources: sources},
		"a mirror with per-message TTLs":  {Mirror: mirror, AllowMsgTTL: true},
		"atomic batches on a source":      {AllowAtomicPublish: true, AllowBatchPublish: true, Sources: sources},
		"rollups":                         {AllowRollup: true},
		"discard new per subject, capped": {DiscardNewPerSubject: true, Discard: jetstream.DiscardNew, MaxMsgsPerSubject: 1},
		"the shortest windows":            {MaxAge: 100 * time.Millisecond, Duplicates: 100 * time.Millisecond},
	}
	i := 0
	for what, cfg := range accepted {
		i++
		if got := refusedBy(streamRefusals, &cfg); len(got) != 0 {
			t.Errorf("%s: refused by %q", what, got[0].Message)
		}
		cfg.Name = fmt.Sprintf("A%d", i)
		if cfg.Mirror == nil && len(cfg.Sources) == 0 {
			cfg.Subjects = []string{fmt.Sprintf("a%d.>", i)}
		}
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}

	client := jsapi.New(js)
	create := func(cfg jetstream.ConsumerConfig) error {
		var resp struct {
			Error *jetstream.APIError `json:"error"`
		}
		// The raw request: nats.go's CreateConsumer takes pull consumers only.
		err := client.Request(ctx, "CONSUMER.CREATE.ORIGIN."+cfg.Durable, map[string]any{"stream_name": "ORIGIN", "config": cfg}, &resp)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Error != nil {
			return resp.Error
		}
		return nil
	}
	groups := []string{"jobs"}
	refusedConsumers := map[string]jetstream.ConsumerConfig{
		"ack_policy flow_control needs a push consumer (deliver_subject)":                            {AckPolicy: jetstream.AckFlowControlPolicy},
		"ack_policy flow_control cannot be combined with ack_wait or backoff":                        {AckPolicy: jetstream.AckFlowControlPolicy, DeliverSubject: "fc.a", AckWait: time.Minute},
		"ack_policy flow_control cannot be combined with max_deliver":                                {AckPolicy: jetstream.AckFlowControlPolicy, DeliverSubject: "fc.b", MaxDeliver: 5},
		"priority_policy needs a pull consumer: priority groups cannot be used with deliver_subject": {PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: groups, DeliverSubject: "pri.push"},
		"priority_policy needs priority_groups (at least one group)":                                 {PriorityPolicy: jetstream.PriorityPolicyPinned},
		"priority_groups: a group name cannot be empty":                                              {PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: []string{"jobs", ""}},
		"priority_groups: a group name is 1 to 16 of A-Z, a-z, 0-9, -, _, / and =":                   {PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: []string{"jobs.eu"}},
		"priority_groups needs a priority_policy (overflow, pinned_client or prioritized)":           {PriorityGroups: groups},
		"priority_timeout needs a priority_policy (it is pinned_client's)":                           {PinnedTTL: time.Minute},
	}
	for i, rule := range consumerRefusals {
		cfg, ok := refusedConsumers[rule.Message]
		if !ok {
			t.Errorf("consumer rule %q: no example in this test", rule.Message)
			continue
		}
		if got := refusedBy(consumerRefusals, &cfg); len(got) != 1 || got[0].Message != rule.Message {
			t.Errorf("consumer rule %q: its example trips %d rules", rule.Message, len(got))
		}
		cfg.Durable = fmt.Sprintf("r%d", i)
		err := create(cfg)
		if code := apiErrorCode(err); code != rule.Code {
			t.Errorf("consumer rule %q: the server answered %v (code %d), want code %d", rule.Message, err, code, rule.Code)
		}
	}
	acceptedConsumers := map[string]jetstream.ConsumerConfig{
		"flow control acks, push":            {AckPolicy: jetstream.AckFlowControlPolicy, DeliverSubject: "fc.ok"},
		"overflow with a group":              {PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: groups},
		"overflow with a priority_timeout":   {PriorityPolicy: jetstream.PriorityPolicyOverflow, PriorityGroups: groups, PinnedTTL: time.Minute},
		"pinned with a long group name":      {PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{"a-b_c/d=e0123456"}},
		"a push consumer with no priorities": {DeliverSubject: "plain.push"},
		"prioritized with two groups":        {PriorityPolicy: jetstream.PriorityPolicyPrioritized, PriorityGroups: []string{"a", "b"}},
	}
	i = 0
	for what, cfg := range acceptedConsumers {
		i++
		if got := refusedBy(consumerRefusals, &cfg); len(got) != 0 {
			t.Errorf("%s: refused by %q", what, got[0].Message)
		}
		cfg.Durable = fmt.Sprintf("a%d", i)
		if err := create(cfg); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
}

// apiErrorCode is the server's error code of err, 0 for none.
func apiErrorCode(err error) int {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return int(apiErr.ErrorCode)
	}
	return 0
}

// A server older than a feature's API level does not honour it: nats-server
// 2.12.4 reports API level 2, and refuses a stream with allow_batched
// (level 4) only when the request reaches it, as an unknown field of its
// strict JSON (the default since 2.11; with strict mode off it drops the
// field without a word). This is why plan compares each field's level
// with the server's before any change.
func TestFactOldServerRefusesNewerFields(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := nats.Connect(embeddedtest.OldServer(t, embeddedtest.OldServerVersion))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ai, err := js.AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ai.API.Level != 2 {
		t.Fatalf("nats-server %s: api.level %d, want 2", embeddedtest.OldServerVersion, ai.API.Level)
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "FAST", Subjects: []string{"fast.>"}, AllowBatchPublish: true})
	if code := apiErrorCode(err); code != 10025 || !strings.Contains(err.Error(), `unknown field "allow_batched"`) {
		t.Errorf("allow_batched on nats-server %s: %v, want error 10025 (unknown field)", embeddedtest.OldServerVersion, err)
	}
	// A field of its own level it honours.
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "COUNT", Subjects: []string{"count.>"}, AllowMsgCounter: true})
	if err != nil {
		t.Fatalf("allow_msg_counter on nats-server %s: %v", embeddedtest.OldServerVersion, err)
	}
	if cfg := s.CachedInfo().Config; !cfg.AllowMsgCounter || cfg.Metadata[jsapi.MetaRequiredLevel] != "2" {
		t.Errorf("counter stream stored as allow_msg_counter %v, %s %q", cfg.AllowMsgCounter, jsapi.MetaRequiredLevel, cfg.Metadata[jsapi.MetaRequiredLevel])
	}
}

// A stream sourcing a workqueue stream reads it through a durable consumer
// of the server's own, marked with _nats.src.* metadata (not
// _nats.source.*, which jetctl once looked for); the server leaves it out
// of the workqueue's one-consumer-per-subject rule, so plan must too, and
// export and prune must not take it for a user's.
func TestFactWorkqueueIgnoresReplicationConsumers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}, Retention: jetstream.WorkQueuePolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ALL", Sources: []*jetstream.StreamSource{{Name: "WORK"}}}); err != nil {
		t.Fatal(err)
	}
	work, err := js.Stream(ctx, "WORK")
	if err != nil {
		t.Fatal(err)
	}
	var source *jetstream.ConsumerInfo
	for source == nil {
		for ci := range work.ListConsumers(ctx).Info() {
			source = ci
		}
		if ctx.Err() != nil {
			t.Fatal("no sourcing consumer on WORK")
		}
		time.Sleep(20 * time.Millisecond)
	}
	md := source.Config.Metadata
	if source.Config.Durable == "" || md[jsapi.MetaSourcePrefix+"stream"] != "ALL" || !jsapi.ReplicationConsumer(md) {
		t.Fatalf("sourcing consumer %q: durable %q, metadata %v", source.Name, source.Config.Durable, md)
	}
	for k := range md {
		if strings.HasPrefix(k, "_nats.source.") {
			t.Errorf("metadata key %s: the server writes _nats.src.", k)
		}
	}
	// An unfiltered consumer is taken beside the sourcing one ...
	if _, err := js.CreateConsumer(ctx, "WORK", jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatalf("a user's consumer beside the sourcing one: %v", err)
	}
	// ... while the rule holds for the user's consumers.
	_, err = js.CreateConsumer(ctx, "WORK", jetstream.ConsumerConfig{Durable: "more", AckPolicy: jetstream.AckExplicitPolicy})
	if code := apiErrorCode(err); code != 10099 {
		t.Fatalf("a second unfiltered consumer: %v, want error 10099", err)
	}
}
