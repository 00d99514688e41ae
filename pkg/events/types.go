package events

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jetctl/jetctl/pkg/errkind"
)

// Event types, in short words.
const (
	TypeMaxDeliveries         = "max_deliveries"
	TypeTerminated            = "terminated"
	TypeNak                   = "nak"
	TypeConsumerCreated       = "consumer_created"
	TypeConsumerDeleted       = "consumer_deleted"
	TypeConsumerUpdated       = "consumer_updated"
	TypeConsumerPaused        = "consumer_paused"
	TypeConsumerResumed       = "consumer_resumed"
	TypeConsumerPinned        = "consumer_pinned"
	TypeConsumerUnpinned      = "consumer_unpinned"
	TypeConsumerLeaderElected = "consumer_leader_elected"
	TypeConsumerQuorumLost    = "consumer_quorum_lost"
	TypeStreamCreated         = "stream_created"
	TypeStreamDeleted         = "stream_deleted"
	TypeStreamUpdated         = "stream_updated"
	TypeStreamLeaderElected   = "stream_leader_elected"
	TypeStreamQuorumLost      = "stream_quorum_lost"
	TypeDomainLeaderElected   = "domain_leader_elected"
	TypeAudit                 = "audit"
)

// Types are the event types this version names; --type takes these.
var Types = []string{
	TypeMaxDeliveries, TypeTerminated, TypeNak,
	TypeConsumerCreated, TypeConsumerDeleted, TypeConsumerUpdated, TypeConsumerRecovered,
	TypeConsumerPaused, TypeConsumerResumed, TypeConsumerPinned, TypeConsumerUnpinned,
	TypeConsumerLeaderElected, TypeConsumerQuorumLost,
	TypeStreamCreated, TypeStreamDeleted, TypeStreamUpdated, TypeStreamRecovered,
	TypeStreamLeaderElected, TypeStreamQuorumLost, "batch_abandoned",
	"snapshot_started", "snapshot_completed", "restore_started", "restore_completed",
	TypeDomainLeaderElected, "server_out_of_storage", "server_removed", "meta_rescue",
	TypeAudit,
}

// ErrInvalid: input the timeline cannot use (exit 2).
var ErrInvalid = errkind.New(errkind.Invalid, "invalid")

// ErrNotFound: no recorder, or a stream or consumer neither on the server
// nor in the record (exit 3).
var ErrNotFound = errkind.New(errkind.NotFound, "not found")

// kindError is an error of pkg/events with its own one-line text, which
// errors.Is finds as its sentinel (ErrInvalid, ErrNotFound).
type kindError struct {
	msg      string
	sentinel error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.sentinel }

func invalidf(format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), sentinel: ErrInvalid}
}

func notFoundf(format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), sentinel: ErrNotFound}
}

// ValidateTypes refuses a --type this version does not name, with the
// closest it does.
func ValidateTypes(types []string) error {
	for _, t := range types {
		if slices.Contains(Types, t) {
			continue
		}
		hint, best := "", 4 // at most 3 edits away
		for _, known := range Types {
			if d := distance(t, known); d < best {
				hint, best = fmt.Sprintf(" (did you mean %s?)", known), d
			}
		}
		return invalidf("--type %q is not an event type%s; the types are: %s", t, hint, strings.Join(Types, ", "))
	}
	return nil
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
