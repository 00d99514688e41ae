package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// stateKey is the target stream's metadata key that holds a move's state
// until it is done: a killed run continues from it, on any machine.
const stateKey = "jetctl.migrate"

// Phases of a move, as kept in the target's metadata.
const (
	phaseCopying  = "copying"  // the target mirrors the source
	phaseCutover  = "cutover"  // the source's subjects and consumers are held
	phasePromoted = "promoted" // the target took the subjects; the source may remain
)

// state is a move's state.
type state struct {
	Source    string `json:"source"`
	SourceAPI string `json:"source_api,omitempty"`
	Phase     string `json:"phase"`
	// Mechanism is "copy" when jetctl copies (no route between the
	// servers, clientcopy.go), "source" for a counter stream (counter.go),
	// "" for a mirror.
	Mechanism string `json:"mechanism,omitempty"`
	// CopyPrefix is the subject prefix jetctl's copy publishes under when
	// the target's server can reach the source's (a workqueue source): the
	// target listens there and takes the prefix off with a subject
	// transform until the cutover gives it the source's subjects. "" for a
	// copy with no route, whose target holds the subjects from the start.
	CopyPrefix string `json:"copy_prefix,omitempty"`
	// Final is the target's config once promoted (subjects included,
	// without this state).
	Final jetstream.StreamConfig `json:"final"`
	// SourceSubjects are the source's subjects, given back if a cutover
	// is abandoned.
	SourceSubjects []string `json:"source_subjects,omitempty"`
	// SourceDirectOff: the move turned allow_direct on at the source (to
	// read a workqueue or interest stream without a consumer); it is
	// turned off again when the source stays.
	SourceDirectOff bool `json:"source_direct_off,omitempty"`
	// Consumers are the source's durables as the cutover found them.
	Consumers []savedConsumer `json:"consumers,omitempty"`
	// Downstreams are the streams that read the source, as the cutover
	// found them (downstream.go).
	Downstreams []Downstream `json:"downstreams,omitempty"`
	// OutageStart is when the source's subjects were taken off it.
	OutageStart time.Time `json:"outage_start,omitzero"`
	// Snapshot is what a workqueue or interest source held when the copy
	// began: the cutover refuses a move in which messages left it that no
	// consumer had been delivered.
	Snapshot *sourceSnapshot `json:"snapshot,omitempty"`
	// Verified is the cutover's verification, kept with the promotion so
	// that a rerun after a kill reports what was verified.
	Verified *verifiedState `json:"verified,omitempty"`
	// Hold keeps the consumers paused after the promotion (the first hop
	// of a replacement: a second hop follows).
	Hold bool `json:"hold,omitempty"`
}

// savedConsumer is a durable and its position.
type savedConsumer struct {
	Config jetstream.ConsumerConfig `json:"config"`
	// AckFloor is the stream sequence acknowledged in order.
	AckFloor uint64 `json:"ack_floor"`
	// Delivered is the last stream sequence delivered.
	Delivered uint64 `json:"delivered"`
	// Pending were delivered and not acknowledged.
	Pending int `json:"pending"`
	// Paused: the consumer was paused before the move (until PauseUntil).
	Paused bool `json:"paused,omitempty"`
}

// readState returns the move state kept on stream si, or nil.
func readState(si *jetstream.StreamInfo) (*state, error) {
	v, ok := si.Config.Metadata[stateKey]
	if !ok {
		return nil, nil
	}
	var st state
	if err := json.Unmarshal([]byte(v), &st); err != nil {
		return nil, fmt.Errorf("stream %q: metadata %s: %w", si.Config.Name, stateKey, err)
	}
	return &st, nil
}

// withState returns cfg with st in its metadata.
func withState(cfg jetstream.StreamConfig, st *state) (jetstream.StreamConfig, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return cfg, err
	}
	md := maps.Clone(cfg.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	md[stateKey] = string(b)
	cfg.Metadata = md
	return cfg, nil
}

// saveState writes st into the target's metadata; the rest of its current
// config is kept.
func saveState(ctx context.Context, js jetstream.JetStream, si *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, error) {
	cfg, err := withState(si.Config, st)
	if err != nil {
		return nil, err
	}
	return updateStream(ctx, js, cfg)
}

// userMetadata is md without the server's and jetctl's keys.
func userMetadata(md map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range md {
		if k == stateKey || len(k) > 6 && k[:6] == "_nats." {
			continue
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// verifiedState is what a cutover verified, and when it promoted.
type verifiedState struct {
	Digest   string `json:"digest"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	// Renumbered: the counter way gave messages other sequences.
	Renumbered bool `json:"renumbered,omitempty"`
	// Promoted is when the target was given the subjects (the outage's
	// end, as near as the request that does it).
	Promoted time.Time `json:"promoted"`
}

// doneKey is the target's metadata key a finished move leaves, so that
// the same command run again (its last run killed after the final step)
// says the move is done rather than that the target is in the way. plan
// and export leave io.jetctl.* keys out.
const doneKey = "io.jetctl.moved_from"

// doneMark is doneKey's value.
type doneMark struct {
	Source    string `json:"source"`
	Mechanism string `json:"mechanism,omitempty"`
	Digest    string `json:"digest,omitempty"`
	// Bytes is the source's, as the move's summary said (Summary.Bytes).
	Bytes      uint64    `json:"bytes,omitempty"`
	Renumbered bool      `json:"renumbered,omitempty"`
	Finished   time.Time `json:"finished"`
}

// sourceSnapshot is what the source held when the copy began: its first
// and last sequence, the highest stream sequence any durable had been
// delivered, and the sequences above that which were deleted already
// (Deleted; Partial when there were too many to keep, and the check is
// then skipped).
type sourceSnapshot struct {
	First     uint64   `json:"first"`
	Last      uint64   `json:"last"`
	Msgs      uint64   `json:"msgs"`
	Delivered uint64   `json:"delivered"`
	Deleted   []uint64 `json:"deleted,omitempty"`
	Partial   bool     `json:"partial,omitempty"`
}
