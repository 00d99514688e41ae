package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

// RewindMethod is how a rewind moves a consumer.
type RewindMethod string

// Methods. Auto uses the server's reset API when the server has it
// (2.14+) and the consumer's deliver policy allows it, and otherwise
// recreates the durable.
const (
	RewindAuto     RewindMethod = ""
	RewindReset    RewindMethod = "reset"
	RewindRecreate RewindMethod = "recreate"
)

// RewindConfig says which consumer to move and where to: exactly one of
// ToSeq, ToTime and ToStart.
type RewindConfig struct {
	Stream   string
	Consumer string
	ToSeq    uint64
	ToTime   time.Time
	ToStart  bool
	DryRun   bool
	// Method forces a method; RewindAuto chooses.
	Method RewindMethod
	// AtStep, if set, is called at each step of a recreate a killed run
	// must be able to finish from: "recorded" (the recreate written on the
	// stream), "deleted" (the durable deleted), "created" (created again,
	// the record not yet removed). For tests.
	AtStep func(step string)
}

// RewindResult says what a rewind did (or, in a dry run, would do).
type RewindResult struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	DryRun   bool   `json:"dry_run"`
	// Method is "reset" or "recreate"; Reason says why recreate.
	Method RewindMethod `json:"method"`
	Reason string       `json:"reason,omitempty"`
	// StartSeq is the first stream sequence delivered after the rewind.
	StartSeq uint64 `json:"start_seq"`
	// Redeliver counts the stored messages from StartSeq on that the
	// consumer's filters match: what will be delivered (again).
	Redeliver uint64 `json:"redeliver"`
	// Before: where the consumer was.
	DeliveredBefore uint64 `json:"delivered_stream_seq_before"`
	AckFloorBefore  uint64 `json:"ack_floor_stream_seq_before"`
	// Finished: this run finished a recreate that a killed run began,
	// from what that run recorded on the stream (its target, not this
	// run's).
	Finished bool `json:"finished_interrupted,omitempty"`
}

// ErrDataGone: the rewind's target is before the data the stream still
// holds. RefusedError says why and from where a rewind can start.
var ErrDataGone = errkind.New(errkind.NotFound, "the messages to rewind to are gone")

// RefusedError is a rewind refused because its target's data is gone.
type RefusedError struct {
	Stream, Consumer string
	Reason           string
	// EarliestSeq is the earliest sequence a rewind can start from.
	EarliestSeq uint64
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("stream %q: consumer %q: refusing to rewind: %s; the earliest it can start from is seq %d (--to-seq %d, or --to-start); nothing was changed",
		e.Stream, e.Consumer, e.Reason, e.EarliestSeq, e.EarliestSeq)
}

// Unwrap makes a RefusedError an ErrDataGone.
func (e *RefusedError) Unwrap() error { return ErrDataGone }

// ErrBeyondEnd: the target sequence is past the stream's next sequence.
var ErrBeyondEnd = errkind.New(errkind.NotFound, "sequence past the end of the stream")

// resetAPIMinVersion is the first server version with
// $JS.API.CONSUMER.RESET.<stream>.<consumer>.
var resetAPIMinVersion = [3]int{2, 14, 0}

// Rewind moves a durable consumer so that it delivers again from a stream
// sequence, a time or the stream's start: through the server's reset API
// (the consumer stays as it is, only its delivery state moves), or by
// deleting and recreating it with its exact config and a start sequence
// (or start time). On an interest stream the recreate holds the messages
// with a temporary consumer meanwhile, so none is dropped for lack of
// interest. It refuses (RefusedError) when the data to redeliver is gone:
// a workqueue stream has deleted what was acknowledged, limits or a purge
// have removed the start of the stream.
func Rewind(ctx context.Context, js jetstream.JetStream, cfg RewindConfig) (*RewindResult, error) {
	st, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", cfg.Stream, err)
	}
	ci, err := readConsumer(ctx, st, cfg.Consumer)
	if rec := recordOf(st.CachedInfo(), cfg.Consumer); rec != nil {
		// A recreate a killed run began: finish it, when it got as far as
		// deleting the durable (or creating it again).
		if errors.Is(err, jetstream.ErrConsumerNotFound) || (err == nil && sameStart(ci.Config, rec.Next)) {
			return finishRecreate(ctx, js, st, cfg, rec, ci)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("stream %q: consumer %q: %w", cfg.Stream, cfg.Consumer, err)
	}
	si := st.CachedInfo()
	api := jsapi.New(js)
	res := &RewindResult{Stream: cfg.Stream, Consumer: cfg.Consumer, DryRun: cfg.DryRun,
		DeliveredBefore: ci.Delivered.Stream, AckFloorBefore: ci.AckFloor.Stream}

	target, err := rewindTarget(ctx, api, si, ci, cfg)
	if err != nil {
		return nil, err
	}
	res.StartSeq = target
	filters := FilterSubjects(ci.Config)
	if res.Redeliver, err = countFrom(ctx, js, api, si, filters, target); err != nil {
		return nil, err
	}

	res.Method, res.Reason = chooseMethod(js, ci, cfg, target)
	if cfg.DryRun {
		return res, nil
	}
	if res.Method == RewindReset {
		_, err := js.ResetConsumerToSequence(ctx, cfg.Stream, cfg.Consumer, target)
		if !errors.Is(err, jetstream.ErrConsumerInvalidReset) {
			if err != nil {
				return nil, fmt.Errorf("stream %q: consumer %q: reset: %w", cfg.Stream, cfg.Consumer, err)
			}
			return res, nil
		}
		res.Method, res.Reason = RewindRecreate, fmt.Sprintf("the server refused the reset (deliver policy %s)", ci.Config.DeliverPolicy)
	}
	if err := recreate(ctx, js, st, si, ci, cfg, target); err != nil {
		return nil, err
	}
	return res, nil
}

// rewindTarget resolves the start sequence and refuses a target whose
// data is gone.
func rewindTarget(ctx context.Context, api *jsapi.Client, si *jetstream.StreamInfo, ci *jetstream.ConsumerInfo, cfg RewindConfig) (uint64, error) {
	state := si.State
	first := max(state.FirstSeq, 1)
	if state.Msgs == 0 {
		first = state.LastSeq + 1
	}
	refuse := func(reason string, earliest uint64) error {
		return &RefusedError{Stream: cfg.Stream, Consumer: cfg.Consumer, Reason: reason, EarliestSeq: earliest}
	}
	earliest := first
	if si.Config.Retention == jetstream.WorkQueuePolicy {
		earliest = max(first, ci.AckFloor.Stream+1)
	}
	var target uint64
	switch {
	case cfg.ToStart:
		return first, nil
	case cfg.ToSeq > 0:
		target = cfg.ToSeq
		if target > state.LastSeq+1 {
			return 0, fmt.Errorf("stream %q: --to-seq %d: %w: its last sequence is %d", cfg.Stream, target, ErrBeyondEnd, state.LastSeq)
		}
	default:
		t := cfg.ToTime.UTC()
		if state.Msgs > 0 && t.Before(state.FirstTime) && state.FirstSeq > 1 {
			return 0, refuse(fmt.Sprintf("the stream's oldest message (seq %d) is from %s: what came before %s was removed (limits, purge or acknowledgement)",
				state.FirstSeq, state.FirstTime.UTC().Format(time.RFC3339), t.Format(time.RFC3339)), earliest)
		}
		m, err := api.MsgGet(ctx, cfg.Stream, jsapi.MsgGetRequest{StartTime: &t})
		switch {
		case errors.Is(err, jsapi.ErrNoMessage):
			target = state.LastSeq + 1
		case err != nil:
			return 0, err
		default:
			target = m.Seq
		}
	}
	if si.Config.Retention == jetstream.WorkQueuePolicy && target <= ci.AckFloor.Stream {
		return 0, refuse(fmt.Sprintf("%s is a workqueue stream: it deleted the messages up to the ack floor (seq %d) when they were acknowledged", cfg.Stream, ci.AckFloor.Stream), earliest)
	}
	if target < first {
		return 0, refuse(fmt.Sprintf("seqs before %d are gone from the stream (removed by limits, a purge or acknowledgement)", first), earliest)
	}
	return target, nil
}

// chooseMethod picks reset or recreate, and says why recreate.
func chooseMethod(js jetstream.JetStream, ci *jetstream.ConsumerInfo, cfg RewindConfig, target uint64) (RewindMethod, string) {
	switch cfg.Method {
	case RewindRecreate:
		return RewindRecreate, "the reset API was turned off"
	case RewindReset:
		return RewindReset, ""
	}
	if v := js.Conn().ConnectedServerVersion(); !versionAtLeast(v, resetAPIMinVersion) {
		return RewindRecreate, fmt.Sprintf("server %s has no consumer reset API (2.14+)", v)
	}
	switch p := ci.Config.DeliverPolicy; {
	case p == jetstream.DeliverAllPolicy, p == jetstream.DeliverByStartTimePolicy:
		// By start time: the server checks the time; a refusal falls back.
		return RewindReset, ""
	case p == jetstream.DeliverByStartSequencePolicy && target >= ci.Config.OptStartSeq:
		return RewindReset, ""
	default:
		return RewindRecreate, fmt.Sprintf("the reset API cannot move a consumer with deliver policy %s to seq %d", p, target)
	}
}

func versionAtLeast(v string, want [3]int) bool {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	var got [3]int
	if n, _ := fmt.Sscanf(v, "%d.%d.%d", &got[0], &got[1], &got[2]); n < 2 {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return got[i] > want[i]
		}
	}
	return true
}

// recreate deletes the durable and creates it again with its exact config
// and a start sequence (or start time). First it records the consumer to
// create on the stream (metadata io.jetctl.rewind.<consumer>), so that a
// run killed between the delete and the create leaves what the same
// command needs to finish it; on an interest stream a durable holder
// consumer from the target on keeps the messages meanwhile (deleting the
// last interested consumer would let the server drop them), until the
// recreate is finished.
func recreate(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, si *jetstream.StreamInfo, ci *jetstream.ConsumerInfo, cfg RewindConfig, target uint64) error {
	old := ci.Config
	old.Metadata = withoutServerMetadata(old.Metadata)
	next := old
	next.OptStartSeq, next.OptStartTime = 0, nil
	if cfg.ToSeq == 0 && !cfg.ToStart {
		t := cfg.ToTime.UTC()
		next.DeliverPolicy, next.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	} else {
		next.DeliverPolicy, next.OptStartSeq = jetstream.DeliverByStartSequencePolicy, target
	}
	rec := &rewindRecord{Next: next}
	if si.Config.Retention == jetstream.InterestPolicy {
		rec.Holder = holderName(cfg.Consumer)
	}
	if err := setRecord(ctx, js, cfg.Stream, cfg.Consumer, rec); err != nil {
		return fmt.Errorf("stream %q: consumer %q: recording the recreate: %w; nothing was changed", cfg.Stream, cfg.Consumer, err)
	}
	at(cfg, "recorded")
	if rec.Holder != "" {
		if _, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable: rec.Holder, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: target,
			FilterSubjects: FilterSubjects(old), MemoryStorage: true,
			Description: fmt.Sprintf("jetctl: holds the messages while %s is recreated; if it stays, run the same jetctl consumer rewind again", cfg.Consumer),
		}); err != nil {
			_ = setRecord(context.WithoutCancel(ctx), js, cfg.Stream, cfg.Consumer, nil)
			return fmt.Errorf("stream %q: consumer %q: holding the messages before recreating: %w; nothing was changed", cfg.Stream, cfg.Consumer, err)
		}
	}
	if err := st.DeleteConsumer(ctx, cfg.Consumer); err != nil {
		_ = endRecreate(context.WithoutCancel(ctx), js, st, cfg, rec)
		return fmt.Errorf("stream %q: consumer %q: deleting to recreate: %w; nothing was changed", cfg.Stream, cfg.Consumer, err)
	}
	at(cfg, "deleted")
	if _, err := st.CreateConsumer(ctx, next); err != nil {
		// Put the consumer back as it was (from its deliver policy, not its
		// position) rather than leave it missing.
		if _, rerr := st.CreateConsumer(context.WithoutCancel(ctx), old); rerr != nil {
			return fmt.Errorf("stream %q: consumer %q: deleted, and recreating it failed (%v), and so did restoring its config (%v); the same command run again creates it", cfg.Stream, cfg.Consumer, err, rerr)
		}
		_ = endRecreate(context.WithoutCancel(ctx), js, st, cfg, rec)
		return fmt.Errorf("stream %q: consumer %q: recreating it failed (%w); it was created again with its old config, from its deliver policy", cfg.Stream, cfg.Consumer, err)
	}
	at(cfg, "created")
	return endRecreate(ctx, js, st, cfg, rec)
}

func at(cfg RewindConfig, step string) {
	if cfg.AtStep != nil {
		cfg.AtStep(step)
	}
}

// rewindKeyPrefix starts the stream metadata key under which a recreate
// in progress is recorded (plan and export leave io.jetctl.* keys out).
const rewindKeyPrefix = "io.jetctl.rewind."

// rewindRecord is a recreate in progress: the consumer to create, and the
// holder consumer to delete once it is.
type rewindRecord struct {
	Next   jetstream.ConsumerConfig `json:"next"`
	Holder string                   `json:"holder,omitempty"`
}

// holderName is the durable that holds an interest stream's messages while
// consumer is recreated.
func holderName(consumer string) string { return "jetctl_rewind_" + consumer }

// recordOf is the recreate of consumer recorded on the stream, or nil.
func recordOf(si *jetstream.StreamInfo, consumer string) *rewindRecord {
	v, ok := si.Config.Metadata[rewindKeyPrefix+consumer]
	if !ok {
		return nil
	}
	var rec rewindRecord
	if json.Unmarshal([]byte(v), &rec) != nil {
		return nil
	}
	return &rec
}

// setRecord writes rec on the stream (nil removes it).
func setRecord(ctx context.Context, js jetstream.JetStream, stream, consumer string, rec *rewindRecord) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	c := s.CachedInfo().Config
	md := map[string]string{}
	for k, v := range c.Metadata {
		md[k] = v
	}
	if rec == nil {
		if _, ok := md[rewindKeyPrefix+consumer]; !ok {
			return nil
		}
		delete(md, rewindKeyPrefix+consumer)
	} else {
		b, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		md[rewindKeyPrefix+consumer] = string(b)
	}
	c.Metadata = md
	_, err = js.UpdateStream(ctx, c)
	return err
}

// endRecreate removes the holder and the record of a recreate.
func endRecreate(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, cfg RewindConfig, rec *rewindRecord) error {
	if rec.Holder != "" {
		if err := st.DeleteConsumer(ctx, rec.Holder); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("stream %q: consumer %q: recreated; deleting the holder %q: %w", cfg.Stream, cfg.Consumer, rec.Holder, err)
		}
	}
	if err := setRecord(ctx, js, cfg.Stream, cfg.Consumer, nil); err != nil {
		return fmt.Errorf("stream %q: consumer %q: recreated; removing the record of it: %w", cfg.Stream, cfg.Consumer, err)
	}
	return nil
}

// sameStart says whether a consumer's config starts where a recorded
// recreate puts it (the recreate got as far as creating it).
func sameStart(c, next jetstream.ConsumerConfig) bool {
	if c.DeliverPolicy != next.DeliverPolicy || c.OptStartSeq != next.OptStartSeq {
		return false
	}
	if (c.OptStartTime == nil) != (next.OptStartTime == nil) {
		return false
	}
	return c.OptStartTime == nil || c.OptStartTime.Equal(*next.OptStartTime)
}

// finishRecreate finishes a recreate a killed run began: the consumer is
// created from the record (unless it was), then the holder and the record
// go. The result is the recorded rewind's.
func finishRecreate(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, cfg RewindConfig, rec *rewindRecord, ci *jetstream.ConsumerInfo) (*RewindResult, error) {
	res := &RewindResult{Stream: cfg.Stream, Consumer: cfg.Consumer, DryRun: cfg.DryRun, Method: RewindRecreate, Finished: true,
		Reason: "finishing the recreate a killed run began, from what it recorded", StartSeq: rec.Next.OptStartSeq}
	if res.StartSeq == 0 && rec.Next.OptStartTime != nil {
		t := rec.Next.OptStartTime.UTC()
		m, err := jsapi.New(js).MsgGet(ctx, cfg.Stream, jsapi.MsgGetRequest{StartTime: &t})
		switch {
		case errors.Is(err, jsapi.ErrNoMessage):
			res.StartSeq = st.CachedInfo().State.LastSeq + 1
		case err != nil:
			return nil, err
		default:
			res.StartSeq = m.Seq
		}
	}
	if res.StartSeq > 0 {
		n, err := countFrom(ctx, js, jsapi.New(js), st.CachedInfo(), FilterSubjects(rec.Next), res.StartSeq)
		if err != nil {
			return nil, err
		}
		res.Redeliver = n
	}
	if cfg.DryRun {
		return res, nil
	}
	if ci == nil {
		if _, err := st.CreateConsumer(ctx, rec.Next); err != nil && !errors.Is(err, jetstream.ErrConsumerExists) {
			return nil, fmt.Errorf("stream %q: consumer %q: creating it as the interrupted recreate recorded: %w", cfg.Stream, cfg.Consumer, err)
		}
		at(cfg, "created")
	}
	if err := endRecreate(ctx, js, st, cfg, rec); err != nil {
		return nil, err
	}
	return res, nil
}

// withoutServerMetadata drops the _nats.* keys the server adds.
func withoutServerMetadata(md map[string]string) map[string]string {
	if md == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range md {
		if !strings.HasPrefix(k, "_nats.") {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// countFrom counts the stored messages from seq on that filters match.
func countFrom(ctx context.Context, js jetstream.JetStream, api *jsapi.Client, si *jetstream.StreamInfo, filters []string, seq uint64) (uint64, error) {
	state := si.State
	if seq > state.LastSeq || state.Msgs == 0 {
		return 0, nil
	}
	if len(filters) == 0 && state.NumDeleted == 0 {
		return state.LastSeq - max(seq, state.FirstSeq) + 1, nil
	}
	if si.Config.Retention != jetstream.WorkQueuePolicy {
		// A throwaway consumer's pending count is the server's own count.
		st, err := js.Stream(ctx, si.Config.Name)
		if err != nil {
			return 0, err
		}
		c, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{
			AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: seq,
			FilterSubjects: filters, InactiveThreshold: 10 * time.Second, MemoryStorage: true,
		})
		if err != nil {
			return 0, fmt.Errorf("stream %q: counting messages: %w", si.Config.Name, err)
		}
		defer st.DeleteConsumer(context.WithoutCancel(ctx), c.CachedInfo().Name)
		return c.CachedInfo().NumPending, nil
	}
	// A workqueue stream refuses a second consumer on the same subjects;
	// it holds only unprocessed messages, so walking them is short.
	var n uint64
	for next := seq; next <= state.LastSeq; {
		m, err := api.MsgGet(ctx, si.Config.Name, jsapi.MsgGetRequest{Seq: next, NextFor: singleFilter(filters)})
		if errors.Is(err, jsapi.ErrNoMessage) {
			break
		}
		if err != nil {
			return 0, err
		}
		if matchesAny(filters, m.Subject) {
			n++
		}
		next = m.Seq + 1
	}
	return n, nil
}
