package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
)

// MarkersMode is what a republish does with subject delete markers
// (--markers): messages with Nats-Marker-Reason, which the server writes
// when a message ages out or is removed, and which a KV bucket reads as a
// key's delete.
type MarkersMode int

const (
	// MarkersAuto is --markers' default: skip, unless every stream the
	// copies can go to is a KV bucket's (KV_*). Run decides before the
	// first copy.
	MarkersAuto MarkersMode = iota
	// MarkersSkip does not copy a marker, and counts it: on a stream that
	// is not a bucket, its copy would be an empty message to any reader
	// that does not look at that header.
	MarkersSkip
	// MarkersKeep copies a marker as it is (Nats-Marker-Reason under its
	// own name), so that a KV target reads the delete
	// (TestFactKVReadsCopiedMarkerAsDelete).
	MarkersKeep
)

// MarkersModes are --markers' values, after MarkersAuto in MarkersMode
// order.
var MarkersModes = []string{"skip", "keep"}

func (m MarkersMode) String() string {
	if m == MarkersAuto {
		return "auto"
	}
	return MarkersModes[m-1]
}

// ParseMarkersMode reads --markers' value.
func ParseMarkersMode(s string) (MarkersMode, error) {
	for i, v := range MarkersModes {
		if s == v {
			return MarkersMode(i + 1), nil
		}
	}
	return 0, fmt.Errorf("--markers %q: want one of %s", s, strings.Join(MarkersModes, ", "))
}

// Skip is why a republish does not copy a message.
type Skip int

const (
	// SkipNone: the message is copied.
	SkipNone Skip = iota
	// SkipExpired: its TTL has passed (--ttl remaining); the server has
	// removed the original or is about to, and a copy cannot carry less
	// than the server's smallest TTL.
	SkipExpired
	// SkipMarker: it is a subject delete marker (--markers skip).
	SkipMarker
)

// skipOf says whether the copy of m made at now is skipped. MarkersAuto
// skips: Run resolves it before the first copy.
func (c *PublishConfig) skipOf(m *envelope.Message, now time.Time) Skip {
	if c.Markers != MarkersKeep && envelope.IsMarker(m.Header) {
		return SkipMarker
	}
	if c.TTL == envelope.TTLRemaining && len(m.Header[envelope.TTLHeader]) > 0 {
		// A TTL the server did not take (a dump edited by hand; ValidateDump
		// refuses it) is copied renamed.
		if st, err := envelope.TTLAt(m.Header, m.Time, now); err == nil && st.Expired {
			return SkipExpired
		}
	}
	return SkipNone
}

// applyTTL sets the Nats-TTL of copy header out, made by
// envelope.CopyHeaderInto(envelope.CmdRepublish, ...)
// of m's header at now, by --ttl: what is left of it (remaining), the
// original TTL again (keep), or none (drop: it stays renamed).
func (c *PublishConfig) applyTTL(out nats.Header, m *envelope.Message, now time.Time) {
	if len(m.Header[envelope.TTLHeader]) == 0 {
		return
	}
	// skipOf already skipped what expired at now; a TTL that does not parse
	// (ValidateDump refuses it in a dump, the server on a publish) stays
	// renamed.
	_, _ = envelope.ApplyTTL(out, m.Header, m.Time, now, c.TTL)
}
