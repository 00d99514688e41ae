// Package migrate moves a stream to a new home without losing a message or
// a consumer position: to a config the server cannot reach in place
// (retention to or from workqueue, storage type, ...), to another name, or
// to another server or JetStream domain.
//
// One move (a hop) is:
//
//  1. copy: the target is created as a mirror of the source (the server
//     copies, keeping sequences, timestamps and headers) with the target's
//     config; the run's state is kept in the target's metadata, so a rerun
//     continues where a killed run stopped. While the copy catches up the
//     source keeps taking writes.
//  2. verify: the copied prefix is compared with the source message by
//     message, still with no outage.
//  3. cutover (only when asked): the source's consumers are paused and its
//     subjects are taken off it (publishes get no stream: the write outage
//     starts), the mirror copies the last messages, deletions the source
//     made since the copy are applied to the target, and the tail and the
//     message sets are verified; then the consumers are recreated on the
//     target with their configs and positions, the source is deleted and
//     the target is promoted (its mirror removed, the subjects added: the
//     outage ends).
//
// Between two servers with no route (the target's server cannot read the
// source's) jetctl copies instead of a mirror, with the same steps and
// guarantees except the timestamps (clientcopy.go).
//
// Replacing a stream under its own name takes two hops through a
// temporary stream, since two streams cannot share a name.
package migrate

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/errkind"
)

// Endpoint is one side of a move.
type Endpoint struct {
	JS jetstream.JetStream
	// Domain is the JetStream domain of the server this side talks to, ""
	// for none. A target in another domain mirrors the source through
	// $JS.<Domain>.API.
	Domain string
}

// Config is one move.
type Config struct {
	// Stream is the source stream.
	Stream string
	// Target is the stream's name at the destination; "" is Stream.
	Target string
	// TargetConfig is the target's config; nil is the source's. Its name is
	// set to Target; its subjects are taken at the cutover.
	TargetConfig *jetstream.StreamConfig
	// Cutover moves the subjects and consumers to the target and deletes
	// the source once the target is verified. Without it the target stays
	// a verified, live mirror of the source.
	Cutover bool
	// DryRun checks everything and returns what would be done.
	DryRun bool
	// TTL is what jetctl's copy gives each copy of a message with a
	// Nats-TTL (the zero value: what is left of it; see copyTTL). A mirror
	// and the counter way keep each message's as stored: a TTL other than
	// remaining is refused for them.
	TTL envelope.TTLMode
	// Progress, if set, is called while the copy catches up.
	Progress func(Progress)
	// AtStep, if set, is called at each step a killed run must be able to
	// continue from: "created", "copying" (each live round of the copy and
	// its verification), "dlq-prepared" (a move to another name: the new
	// name's DLQ capture made), "held" (subjects off the source),
	// "seated" (consumers on the target), "promoted", "dlq-carried" (the
	// advisories not yet swept carried to the new capture, the old one
	// not yet deleted), "finished" (the
	// target has its final config; nothing is left to do). For tests.
	AtStep func(step string)
}

// Progress is the state of the copy.
type Progress struct {
	Phase  string  `json:"phase"`
	Copied uint64  `json:"copied"`
	Total  uint64  `json:"total"`
	Rate   float64 `json:"rate"`
	Lag    uint64  `json:"lag"`
}

// ConsumerMove is one consumer recreated on the target.
type ConsumerMove struct {
	Name string `json:"name"`
	// AckFloor is the last stream sequence acknowledged in order; the
	// consumer delivers again from AckFloor+1.
	AckFloor uint64 `json:"ack_floor"`
	// Pending is how many messages were delivered and not acknowledged:
	// they are delivered again.
	Pending int `json:"pending"`
	// Changed says how the consumer's config had to change, if it did.
	Changed string `json:"changed,omitempty"`
}

// Summary is what a move did.
type Summary struct {
	Stream    string `json:"stream"`
	Target    string `json:"target"`
	Mechanism string `json:"mechanism"`
	// CopyReason says why a mirror does not copy: "no-route" (the
	// target's server cannot read the source's) or "workqueue" (a mirror
	// would drain a workqueue source), with mechanism "copy"; "counter"
	// (a counter stream cannot be mirrored) with mechanism "source"; ""
	// for a mirror.
	CopyReason string `json:"copy_reason,omitempty"`
	// Messages, Bytes, FirstSeq and LastSeq are the source's, from its
	// stream state (bytes as its server stores them, headers included),
	// when the run looked last: the same figures for a dry run, a run
	// that copies and the run that cuts over, whichever way the copy is
	// made (a copy stores other headers than its source).
	Messages  uint64         `json:"messages"`
	Bytes     uint64         `json:"bytes"`
	FirstSeq  uint64         `json:"first_seq"`
	LastSeq   uint64         `json:"last_seq"`
	Consumers []ConsumerMove `json:"consumers"`
	Verified  bool           `json:"verified"`
	// SequencesKept: every message has its sequence in the target. A
	// mirror and jetctl's copy keep them; the counter way only where the
	// source has no gaps (false when it renumbered).
	SequencesKept bool `json:"sequences_kept"`
	// Digest is a SHA-256 over every message verified (sequence, subject,
	// headers, payload, timestamp), in the order compared.
	Digest  string `json:"digest,omitempty"`
	Cutover bool   `json:"cutover"`
	// Downstreams are the streams that source or mirror the source: the
	// move leaves them as they are, and a cutover deletes what they read
	// (downstream.go). After a cutover each says from which sequence of
	// the target to source.
	Downstreams []Downstream `json:"downstreams,omitempty"`
	// DLQ is the source's DLQ when a cutover moves the stream to another
	// name: it moves along (what a dry run would do, what a run did).
	DLQ *dlq.MovePlan `json:"dlq,omitempty"`
	// AlreadyDone: the move had finished before (a run killed after its
	// last step); nothing was changed.
	AlreadyDone bool `json:"already_done,omitempty"`
	Resumed     bool `json:"resumed"`
	DryRun      bool `json:"dry_run"`
	// WriteOutage is the time from taking the subjects off the source to
	// the target taking them (zero without a cutover).
	WriteOutage time.Duration `json:"write_outage_ns"`
	Elapsed     time.Duration `json:"elapsed_ns"`
}

var (
	// ErrVerify: the target differs from the source; the source is kept.
	ErrVerify = errkind.New(errkind.Partial, "verification failed")
	// ErrBusy: another migration of the stream is running.
	ErrBusy = errkind.New(errkind.Busy, "another migration of the stream is running")
	// ErrTargetExists: the target exists and is not this migration's.
	ErrTargetExists = errkind.New(errkind.Invalid, "target stream exists")
)
