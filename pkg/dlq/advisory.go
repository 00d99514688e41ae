package dlq

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Advisory types the capture stream holds.
const (
	TypeMaxDeliver = "io.nats.jetstream.advisory.v1.max_deliver"
	TypeTerminated = "io.nats.jetstream.advisory.v1.terminated"
)

// Advisory is a MAX_DELIVERIES or MSG_TERMINATED advisory.
type Advisory struct {
	Type        string    `json:"type"`
	ID          string    `json:"id"`
	Time        time.Time `json:"timestamp"`
	Stream      string    `json:"stream"`
	Consumer    string    `json:"consumer"`
	StreamSeq   uint64    `json:"stream_seq"`
	ConsumerSeq uint64    `json:"consumer_seq,omitempty"`
	Deliveries  uint64    `json:"deliveries"`
	Reason      string    `json:"reason,omitempty"`
	Domain      string    `json:"domain,omitempty"`
}

// ParseAdvisory reads an advisory captured from subject.
func ParseAdvisory(data []byte) (Advisory, error) {
	a, ok := parseAdvisoryFast(data)
	if !ok {
		a = Advisory{}
		if err := json.Unmarshal(data, &a); err != nil {
			return a, fmt.Errorf("not an advisory: %w", err)
		}
	}
	switch a.Type {
	case TypeMaxDeliver, TypeTerminated:
	default:
		return a, fmt.Errorf("unexpected advisory type %q", a.Type)
	}
	if a.Stream == "" || a.StreamSeq == 0 {
		return a, fmt.Errorf("advisory without stream or stream_seq")
	}
	return a, nil
}

// DeadReason is max_deliver or terminated.
func (a Advisory) DeadReason() string {
	if a.Type == TypeTerminated {
		return ReasonTerminated
	}
	return ReasonMaxDeliver
}

// serverTermReasons are the reasons of terminations the server itself
// causes when a stream limit or a delete removes an unacknowledged
// message: the message is gone, it is no dead letter.
var serverTermReasons = []string{
	"Message deleted by stream limits",
	"Unacknowledged message was deleted",
}

// ServerCaused reports whether the advisory records a termination the
// server caused rather than a consumer's AckTerm.
func (a Advisory) ServerCaused() bool {
	if a.Type != TypeTerminated {
		return false
	}
	for _, r := range serverTermReasons {
		if strings.EqualFold(strings.TrimSpace(a.Reason), r) {
			return true
		}
	}
	return false
}
