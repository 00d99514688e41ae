// Package events keeps and reads what happened to streams and consumers:
// JetStream's advisories and jetctl's audit records, which the server
// itself captures in the recorder stream (JETCTL_EVENTS, pkg/recorder).
// Record makes the recorder and hands the DLQ captures over to it;
// Timeline reads the recorder (and the advisories the DLQ captures hold
// that the recorder does not) as one time-ordered list of Events, streamed;
// Follow does the same live; Fold folds bursts for people.
package events

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jetctl/jetctl/pkg/audit"
	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/recorder"
)

// Event is one thing that happened, in the one shape every output uses
// (docs/events.md): what the advisory or audit record says, in short
// words, and the record itself.
type Event struct {
	// Time is when the event was stored (the order of the timeline).
	Time time.Time `json:"time"`
	// Type is the event in short words: max_deliveries, terminated, nak,
	// consumer_created, stream_leader_elected, audit, ... (Types).
	Type     string `json:"type"`
	Stream   string `json:"stream,omitempty"`
	Consumer string `json:"consumer,omitempty"`
	// Seq is the stream sequence of the message the event is about
	// (max_deliveries, terminated, nak).
	Seq        uint64 `json:"seq,omitempty"`
	Deliveries uint64 `json:"deliveries,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Leader is the server elected (leader_elected events).
	Leader string `json:"leader,omitempty"`
	// User is who ran the command (audit records).
	User string `json:"user,omitempty"`
	// Text says it in one line, for people.
	Text string `json:"text"`
	// Subject is the advisory's or record's subject.
	Subject string `json:"subject"`
	// From and FromSeq are the stream and sequence the event was read
	// from: the recorder, or a DLQ capture for advisories it captured
	// itself.
	From    string `json:"from"`
	FromSeq uint64 `json:"from_seq"`
	// Recovered marks an advisory published into the recorder by the
	// hand-over's safety net (docs/events.md).
	Recovered bool `json:"recovered,omitempty"`
	// Advisory is the advisory as the server sent it; Audit the audit
	// record as jetctl wrote it. One of the two is set.
	Advisory json.RawMessage `json:"advisory,omitempty"`
	Audit    json.RawMessage `json:"audit,omitempty"`
}

// Headers the recorder's messages may carry.
const (
	// HeaderRecovered marks an advisory the hand-over's safety net
	// published (its value: the capture it was meant for).
	HeaderRecovered = "Jetctl-Events-Recovered"
	// headerMovedFrom is pkg/dlq's HeaderMovedFrom: an advisory a stream
	// move published again under the new name (a copy, not an event).
	headerMovedFrom = "Jetctl-Dlq-Moved-From"
)

const advisoryPrefix = "$JS.EVENT.ADVISORY."

// advisory holds the fields of every JetStream advisory the timeline reads.
// (Not its id nor its timestamp: the timeline's time is the stored one.)
type advisory struct {
	Type       string    `json:"type"`
	Stream     string    `json:"stream"`
	Consumer   string    `json:"consumer"`
	StreamSeq  uint64    `json:"stream_seq"`
	Deliveries uint64    `json:"deliveries"`
	Reason     string    `json:"reason"`
	Action     string    `json:"action"`
	Leader     string    `json:"leader"`
	Paused     *bool     `json:"paused"`
	PauseUntil time.Time `json:"pause_until"`
	Group      string    `json:"group"`
	Replicas   []struct {
		Name string `json:"name"`
	} `json:"replicas"`
	Domain string `json:"domain"`
	Server string `json:"server"`
}

// Decode turns a stored message of the recorder (or of a DLQ capture) into
// an Event; false for a message that is no event (not JSON, a copy a
// stream move made).
func Decode(m *envelope.Message) (*Event, bool) {
	if m.Header != nil && m.Header.Get(headerMovedFrom) != "" {
		return nil, false
	}
	e := &Event{Time: m.Time, Subject: m.Subject, From: m.Stream, FromSeq: m.Seq}
	if m.Header != nil && m.Header.Get(HeaderRecovered) != "" {
		e.Recovered = true
	}
	switch {
	case strings.HasPrefix(m.Subject, recorder.AuditPrefix+"."):
		var r audit.Record
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return nil, false
		}
		e.Audit = m.Data
		decodeAudit(e, &r)
	case strings.HasPrefix(m.Subject, advisoryPrefix):
		var a advisory
		if err := json.Unmarshal(m.Data, &a); err != nil {
			return nil, false
		}
		e.Advisory = m.Data
		decodeAdvisory(e, &a)
	default:
		return nil, false
	}
	return e, true
}

func decodeAudit(e *Event, r *audit.Record) {
	e.Type = TypeAudit
	e.Stream, e.Consumer, e.User = r.Stream, r.Consumer, r.User
	if e.Stream == "" || e.Consumer == "" {
		// The subject names them too: jetctl.audit.<stream>.<consumer>.…
		tokens := strings.SplitN(strings.TrimPrefix(e.Subject, recorder.AuditPrefix+"."), ".", 3)
		if e.Stream == "" && len(tokens) > 0 && tokens[0] != "_" {
			e.Stream = tokens[0]
		}
		if e.Consumer == "" && len(tokens) > 1 && tokens[1] != "_" {
			e.Consumer = tokens[1]
		}
	}
	var b strings.Builder
	who := r.User
	if who == "" {
		who = "someone"
	}
	if r.Host != "" {
		who += "@" + r.Host
	}
	b.WriteString(who)
	b.WriteString(": ")
	if r.Command != "" {
		b.WriteString(r.Command)
	} else {
		b.WriteString("jetctl")
	}
	if r.Summary != "" {
		b.WriteString(": ")
		b.WriteString(r.Summary)
	}
	if r.Result == "error" {
		b.WriteString(" (failed")
		if r.Error != "" {
			b.WriteString(": ")
			b.WriteString(r.Error)
		}
		b.WriteString(")")
	}
	e.Text = b.String()
}

func decodeAdvisory(e *Event, a *advisory) {
	e.Stream, e.Consumer = a.Stream, a.Consumer
	e.Type = shortType(a)
	switch e.Type {
	case TypeMaxDeliveries, TypeTerminated, TypeNak:
		e.Seq, e.Deliveries, e.Reason = a.StreamSeq, a.Deliveries, a.Reason
	case "batch_abandoned", TypeConsumerUnpinned:
		e.Reason = a.Reason
	case TypeStreamLeaderElected, TypeConsumerLeaderElected, TypeDomainLeaderElected:
		e.Leader = a.Leader
	}
	e.Text = text(e, a)
}

// shortType names an advisory in short words (Types), from its type and,
// for create/delete/modify actions, its action. A type this version does
// not know is its last word ("io.nats.jetstream.advisory.v1.X" → X).
func shortType(a *advisory) string {
	t := a.Type[strings.LastIndexByte(a.Type, '.')+1:]
	switch t {
	case "max_deliver":
		return TypeMaxDeliveries
	case "stream_action", "consumer_action":
		what := strings.TrimSuffix(t, "_action")
		switch strings.ToLower(a.Action) {
		case "create":
			return what + "_created"
		case "delete":
			return what + "_deleted"
		case "modify":
			return what + "_updated"
		}
		return what + "_" + strings.ToLower(a.Action)
	case "consumer_pause":
		if a.Paused != nil && !*a.Paused {
			return TypeConsumerResumed
		}
		return TypeConsumerPaused
	}
	if short, ok := renamed[t]; ok {
		return short
	}
	return t
}

// renamed are the advisory types whose short word differs from the last
// word of their type.
var renamed = map[string]string{
	"snapshot_create":         "snapshot_started",
	"snapshot_complete":       "snapshot_completed",
	"restore_create":          "restore_started",
	"restore_complete":        "restore_completed",
	"stream_batch_abandoned":  "batch_abandoned",
	"consumer_group_pinned":   "consumer_pinned",
	"consumer_group_unpinned": "consumer_unpinned",
	"server_out_of_space":     "server_out_of_storage",
}

// text says an advisory in one line.
func text(e *Event, a *advisory) string {
	switch e.Type {
	case TypeMaxDeliveries:
		return fmt.Sprintf("seq %d reached max deliveries (%d)", a.StreamSeq, a.Deliveries)
	case TypeTerminated:
		s := fmt.Sprintf("seq %d terminated after %s", a.StreamSeq, deliveries(a.Deliveries))
		if a.Reason != "" {
			s += ": " + a.Reason
		}
		return s
	case TypeNak:
		return fmt.Sprintf("seq %d NAKed (delivery %d)", a.StreamSeq, a.Deliveries)
	case TypeStreamLeaderElected, TypeConsumerLeaderElected, TypeDomainLeaderElected:
		s := "leader " + a.Leader
		var others []string
		for _, r := range a.Replicas {
			if r.Name != a.Leader {
				others = append(others, r.Name)
			}
		}
		if len(others) > 0 {
			s += " (replicas " + strings.Join(others, ", ") + ")"
		}
		return s
	case TypeConsumerPaused:
		if !a.PauseUntil.IsZero() {
			return "paused until " + a.PauseUntil.UTC().Format(time.RFC3339)
		}
		return "paused"
	case TypeConsumerResumed:
		return "resumed"
	case TypeConsumerPinned, TypeConsumerUnpinned:
		if a.Group != "" {
			return "group " + a.Group
		}
	case "server_out_of_storage", "server_removed", "meta_rescue":
		if a.Server != "" {
			return "server " + a.Server
		}
	case "batch_abandoned":
		if a.Reason != "" {
			return "batch abandoned: " + a.Reason
		}
	}
	return strings.ReplaceAll(e.Type, "_", " ")
}

func deliveries(n uint64) string {
	if n == 1 {
		return "1 delivery"
	}
	return fmt.Sprintf("%d deliveries", n)
}
