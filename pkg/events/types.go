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
	TypeConsumerCreated, TypeConsumerDeleted, TypeConsumerUpdated,
	TypeConsumerPaused, TypeConsumerResumed, TypeConsumerPinned, TypeConsumerUnpinned,
	TypeConsumerLeaderElected, TypeConsumerQuorumLost,
	TypeStreamCreated, TypeStreamDeleted, TypeStreamUpdated,
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

// ValidateTypes refuses a --type this version does not name, with the
// closest it does; "leader_elected"-like suffixes are not guessed.
func ValidateTypes(types []string) error {
	for _, t := range types {
		if slices.Contains(Types, t) {
			continue
		}
		hint := ""
		for _, known := range Types {
			if strings.Contains(known, t) || strings.Contains(t, known) {
				hint = fmt.Sprintf(" (did you mean %s?)", known)
				break
			}
		}
		return fmt.Errorf("%w: --type %q is not an event type%s; the types are: %s", ErrInvalid, t, hint, strings.Join(Types, ", "))
	}
	return nil
}
