// Package dlq moves dead messages (MaxDeliver exhausted or terminated) out
// of a JetStream stream into a dead-letter stream, and inspects, redrives
// and purges that stream.
//
// JetStream announces dead messages only with advisories, which are lost
// unless a stream captures them. Setup creates that capture stream, the
// durable consumer the sweep reads it with (its ack floor is the sweep's
// checkpoint) and the DLQ stream. Sweep copies each dead message with
// provenance headers into the DLQ stream under a per-message subject that
// can be written once only, and removes the source message where the
// retention policy calls for it, only after the copy is acknowledged.
package dlq

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/lease"
)

// Headers a DLQ copy carries besides envelope's Jetctl-Source-* headers.
const (
	HeaderConsumer   = "Jetctl-Dlq-Consumer"
	HeaderReason     = "Jetctl-Dlq-Reason"
	HeaderTermReason = "Jetctl-Dlq-Term-Reason"
	HeaderDeliveries = "Jetctl-Dlq-Deliveries"
	HeaderSweptAt    = "Jetctl-Dlq-Swept-At"
	// HeaderRedrives counts how often a message was sent back to its
	// source; a redriven message keeps it, so a second sweep sees it.
	HeaderRedrives = "Jetctl-Dlq-Redrives"
)

// Where a dead letter was first stored, kept through any number of
// rounds of redrive and death: a redrive writes them on the message it
// sends (the DLQ copy's own, or the first time its Jetctl-Source-*), and
// a sweep keeps them on the next DLQ copy, whose Jetctl-Source-* are the
// redriven message that died (the one the sweep removes, whose TTL counts
// from its own stored time). Absent on a message that died once: its
// Jetctl-Source-* are the original's (Entry.Original* say so either way).
const (
	HeaderOriginalStream  = "Jetctl-Dlq-Original-Stream"
	HeaderOriginalSeq     = "Jetctl-Dlq-Original-Seq"
	HeaderOriginalSubject = "Jetctl-Dlq-Original-Subject"
	HeaderOriginalTime    = "Jetctl-Dlq-Original-Time"
)

// originalFrom pairs each original-provenance header with the provenance
// header of a first death it is taken from.
var originalFrom = [4][2]string{
	{HeaderOriginalStream, envelope.SourceStream},
	{HeaderOriginalSeq, envelope.SourceSeq},
	{HeaderOriginalSubject, envelope.SourceSubject},
	{HeaderOriginalTime, envelope.SourceTime},
}

// Reasons a message is dead.
const (
	ReasonMaxDeliver = "max_deliver"
	ReasonTerminated = "terminated"
)

// Metadata keys jetctl puts on the streams it creates.
const (
	MetaSource   = "jetctl_dlq_source"
	MetaRole     = "jetctl_dlq_role"
	MetaDLQ      = "jetctl_dlq_stream"
	roleCapture  = "capture"
	roleDLQ      = "dlq"
	SweepDurable = "jetctl-dlq-sweep"
)

// Names are the resources that belong to one source stream's DLQ.
type Names struct {
	// Source is the stream whose dead messages are swept.
	Source string
	// Capture is the stream holding the captured advisories.
	Capture string
	// Durable reads Capture for the sweep.
	Durable string
	// DLQ is the dead-letter stream, on subjects SubjectPrefix.>.
	DLQ           string
	SubjectPrefix string
}

// DefaultNames are the names setup uses unless told otherwise.
func DefaultNames(source, dlqStream string) Names {
	if dlqStream == "" {
		dlqStream = "DLQ_" + source
	}
	return Names{
		Source:        source,
		Capture:       "DLQ_ADVISORIES_" + source,
		Durable:       SweepDurable,
		DLQ:           dlqStream,
		SubjectPrefix: "dlq." + source,
	}
}

// SweepLockKey is the key of the lease a sweep of stream holds.
func SweepLockKey(stream string) string { return "sweep." + stream }

// RedriveLockKey is the key of the lease a redrive of dlqStream holds.
func RedriveLockKey(dlqStream string) string { return "redrive." + dlqStream }

// DLQSubject is the subject of the one DLQ copy of source sequence seq.
func (n Names) DLQSubject(seq uint64) string { return fmt.Sprintf("%s.%d", n.SubjectPrefix, seq) }

// AdvisorySubjects are the advisory subjects captured for the source
// stream's consumers; all of its consumers when none are named.
func AdvisorySubjects(source string, consumers []string) []string {
	if len(consumers) == 0 {
		consumers = []string{"*"}
	}
	var out []string
	for _, c := range consumers {
		out = append(out,
			"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+source+"."+c,
			"$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."+source+"."+c)
	}
	return out
}

// Errors the commands map to exit codes.
var (
	// ErrNotSetUp: the capture or DLQ stream is missing.
	ErrNotSetUp = errkind.New(errkind.NotFound, "dlq is not set up")
	// ErrLocked: another sweep or redrive holds the lock.
	ErrLocked = lease.ErrLocked
	// ErrInvalid: a configuration that cannot work.
	ErrInvalid = errkind.New(errkind.Invalid, "invalid")
)

// RetentionName is a retention policy as the server spells it in JSON
// ("limits", "workqueue", "interest"): the one spelling of every JSON
// output (jetstream.RetentionPolicy.String says "Limits", "WorkQueue").
func RetentionName(p jetstream.RetentionPolicy) string {
	b, err := p.MarshalJSON()
	if err != nil {
		return strings.ToLower(p.String())
	}
	return strings.Trim(string(b), `"`)
}
