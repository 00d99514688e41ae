// Package recorder names the stream in which the server itself keeps
// JetStream's advisories and jetctl's audit records (JETCTL_EVENTS, made by
// `jetctl events record`), the subjects it captures, and finds it. It is
// the small part that pkg/events (which makes and reads the recorder) and
// pkg/dlq (whose captures read it when it exists) share.
package recorder

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Stream is the recorder's name.
const Stream = "JETCTL_EVENTS"

// Metadata marking the recorder.
const (
	MetaRole = "jetctl_events_role"
	Role     = "recorder"
)

// AuditPrefix starts the subjects of jetctl's audit records:
// jetctl.audit.<stream or _>.<consumer or _>.<verb tokens>.
const AuditPrefix = "jetctl.audit"

// Advisory families the recorder captures, from nats-server's JSAdvisory*
// subject constants (server/jetstream_api.go, v2.15). Never
// $JS.EVENT.ADVISORY.API (JSAuditAdvisory): API audit advisories carry
// request bodies. DOMAIN and SERVER advisories are sent in the system
// account only: in any other account they stay empty.
var Families = []string{
	"$JS.EVENT.ADVISORY.STREAM.>",
	"$JS.EVENT.ADVISORY.CONSUMER.>",
	"$JS.EVENT.ADVISORY.DOMAIN.>",
	"$JS.EVENT.ADVISORY.SERVER.>",
}

// Subjects are the recorder's subjects: the advisory families and the
// audit records.
func Subjects() []string {
	return append(append([]string{}, Families...), AuditPrefix+".>")
}

// ConsumerFamily is the family that the DLQ captures' subjects fall in:
// the recorder cannot own it while a capture owns subjects of its own.
const ConsumerFamily = "$JS.EVENT.ADVISORY.CONSUMER.>"

// IsRecorder reports whether cfg is the recorder's.
func IsRecorder(cfg *jetstream.StreamConfig) bool {
	return cfg != nil && cfg.Name == Stream && cfg.Metadata[MetaRole] == Role
}

// ErrNotRecorder: a stream named JETCTL_EVENTS that jetctl did not make.
var ErrNotRecorder = errors.New("exists and was not made by jetctl events record")

// Lookup returns the recorder's info, nil when there is none, and
// ErrNotRecorder for a stream of that name that jetctl did not make.
func Lookup(ctx context.Context, js jetstream.JetStream) (*jetstream.StreamInfo, error) {
	s, err := js.Stream(ctx, Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", Stream, err)
	}
	info := s.CachedInfo()
	if !IsRecorder(&info.Config) {
		return nil, fmt.Errorf("stream %q %w", Stream, ErrNotRecorder)
	}
	return info, nil
}

// Find is Lookup for the commands that only read the recorder when there
// is one (the timeline, dlq setup, consumer explain, status): it asks
// which streams capture the audit records first, so that an account
// without a recorder sees no failed request (the server counts every
// "stream not found" among the account's API errors, which status shows).
// A stream named JETCTL_EVENTS that jetctl did not make is no recorder.
func Find(ctx context.Context, js jetstream.JetStream) (*jetstream.StreamInfo, error) {
	names := js.StreamNames(ctx, jetstream.WithStreamListSubject(AuditPrefix+".>"))
	found := false
	for n := range names.Name() {
		found = found || n == Stream
	}
	if err := names.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return nil, fmt.Errorf("listing streams: %w", err)
	}
	if !found {
		return nil, nil
	}
	info, err := Lookup(ctx, js)
	if errors.Is(err, ErrNotRecorder) {
		return nil, nil
	}
	return info, err
}

// Owns reports whether the recorder (cfg) owns subject's family.
func Owns(cfg *jetstream.StreamConfig, family string) bool {
	for _, s := range cfg.Subjects {
		if s == family {
			return true
		}
	}
	return false
}

// SourceHeaderSeq is the recorder's sequence of a message sourced from it,
// read from the Nats-Stream-Source header the server adds ("JETCTL_EVENTS
// <seq> <filters> <destinations> ..."); 0 when the header names another
// stream or is not there.
func SourceHeaderSeq(value string) uint64 {
	fields := strings.Fields(value)
	if len(fields) < 2 || fields[0] != Stream {
		return 0
	}
	var seq uint64
	for _, c := range fields[1] {
		if c < '0' || c > '9' {
			return 0
		}
		seq = seq*10 + uint64(c-'0')
	}
	return seq
}
