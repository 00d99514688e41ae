package envelope

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// TTLHeader is the per-message TTL the server acts on (allow_msg_ttl).
const TTLHeader = "Nats-TTL"

// TTLMode is what a copy does with a message's Nats-TTL (--ttl).
type TTLMode int

const (
	// TTLRemaining gives the copy what is left of the original's TTL and
	// skips a message whose TTL has passed: the copy disappears when the
	// original would have. The default: a copy neither outlives its data's
	// deadline nor brings back what already expired.
	TTLRemaining TTLMode = iota
	// TTLKeep gives the copy the original's TTL again, counted from the
	// copy's own time.
	TTLKeep
	// TTLDrop copies without a TTL (the original's is kept as
	// Jetctl-Orig-Nats-TTL): the copy never expires.
	TTLDrop
)

// TTLModes are --ttl's values, in TTLMode order.
var TTLModes = []string{"remaining", "keep", "drop"}

func (m TTLMode) String() string { return TTLModes[m] }

// ParseTTLMode reads --ttl's value.
func ParseTTLMode(s string) (TTLMode, error) {
	for i, v := range TTLModes {
		if s == v {
			return TTLMode(i), nil
		}
	}
	return 0, fmt.Errorf("--ttl %q: want one of %s", s, strings.Join(TTLModes, ", "))
}

// ParseTTL reads a Nats-TTL value as the server does: "never", a Go
// duration of at least 1s, or a whole number of seconds. The server keeps
// whole seconds. never reports a TTL that never expires; a zero ttl
// without never is no TTL.
func ParseTTL(v string) (ttl time.Duration, never bool, err error) {
	if strings.EqualFold(v, "never") {
		return 0, true, nil
	}
	if n, err := strconv.ParseUint(v, 10, 63); err == nil {
		return time.Duration(n) * time.Second, false, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < time.Second {
			return 0, false, fmt.Errorf("Nats-TTL %q: under 1s", v)
		}
		return d.Truncate(time.Second), false, nil
	}
	return 0, false, fmt.Errorf("Nats-TTL %q: not a duration, a number of seconds or never", v)
}

// TTLState is what a message's Nats-TTL means at a given time.
type TTLState struct {
	// Has: the message has a TTL (a Nats-TTL other than 0).
	Has bool
	// Never: its TTL is "never".
	Never bool
	// TTL is the TTL it was stored with.
	TTL time.Duration
	// Deadline is when the server removes it: its stored time plus TTL.
	Deadline time.Time
	// Remaining is what is left at the time asked, in whole seconds.
	Remaining time.Duration
	// Expired: less than the server's smallest TTL (1s) is left, so the
	// server has removed it or is about to, and a copy could not carry it.
	Expired bool
}

// TTLAt is the TTL state at now of a message stored at stored with header
// h. A Nats-TTL the server would not have stored is an error.
func TTLAt(h nats.Header, stored, now time.Time) (TTLState, error) {
	vs := h[TTLHeader]
	if len(vs) == 0 {
		return TTLState{}, nil
	}
	ttl, never, err := ParseTTL(vs[0])
	if err != nil {
		return TTLState{}, err
	}
	if never {
		return TTLState{Has: true, Never: true}, nil
	}
	if ttl == 0 {
		return TTLState{}, nil
	}
	st := TTLState{Has: true, TTL: ttl, Deadline: stored.Add(ttl)}
	st.Remaining = st.Deadline.Sub(now).Truncate(time.Second)
	st.Expired = st.Remaining < time.Second
	return st, nil
}

// FormatTTL is a TTL as a Nats-TTL value: whole seconds ("90s"), or never.
func FormatTTL(d time.Duration, never bool) string {
	if never {
		return "never"
	}
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}

// ApplyTTL sets the Nats-TTL of copy header out (built by CopyHeaderInto,
// which moved the original's to Jetctl-Orig-Nats-TTL) by mode, for the
// copy of a message stored at stored with header orig, published at now.
// skip reports a message that mode remaining does not copy: its TTL has
// passed.
func ApplyTTL(out, orig nats.Header, stored, now time.Time, mode TTLMode) (skip bool, err error) {
	if len(orig[TTLHeader]) == 0 || mode == TTLDrop {
		return false, nil
	}
	st, err := TTLAt(orig, stored, now)
	if err != nil || !st.Has {
		return false, err
	}
	switch {
	case mode == TTLKeep || st.Never:
		out[TTLHeader] = []string{FormatTTL(st.TTL, st.Never)}
		delete(out, OrigPrefix+TTLHeader)
	case st.Expired:
		return true, nil
	default:
		out[TTLHeader] = []string{FormatTTL(st.Remaining, false)}
	}
	return false, nil
}

// MarkerHeader is the header of a subject delete marker the server writes
// (MaxAge, Purge, Remove).
const MarkerHeader = "Nats-Marker-Reason"

// IsMarker reports whether a message with header h is a subject delete
// marker.
func IsMarker(h nats.Header) bool { return len(h[MarkerHeader]) > 0 }
