package dlq

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
)

// A redrive's TTL is what is left of the original's, counted from when the
// original was stored (Jetctl-Source-Time); a TTL that has passed is not
// sent, unless include-expired gives it the whole TTL again.
func TestRedriveTTL(t *testing.T) {
	stored := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, ttl string
		after     time.Duration
		include   bool
		want      string // the copy's Nats-TTL, or "expired"
	}{
		{"none", "", time.Hour, false, ""},
		// Whole seconds, rounded down: the copy never outlives the original.
		{"what is left", "1h", 10*time.Minute + 300*time.Millisecond, false, "2999s"},
		{"a number of seconds", "90", 30 * time.Second, false, "60s"},
		{"under a second left", "1h", time.Hour - 500*time.Millisecond, false, "expired"},
		{"passed", "1h", 2 * time.Hour, false, "expired"},
		{"passed, included", "1h", 2 * time.Hour, true, "3600s"},
		{"not passed, included", "1h", 10 * time.Minute, true, "3000s"},
		{"never", "never", 1000 * time.Hour, false, "never"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dlqCopy := nats.Header{envelope.SourceTime: {stored.Format(time.RFC3339Nano)}}
			if c.ttl != "" {
				dlqCopy[envelope.OrigPrefix+envelope.TTLHeader] = []string{c.ttl}
			}
			d, err := ttlOf(dlqCopy)
			if err != nil {
				t.Fatal(err)
			}
			h := RedriveHeader(dlqCopy, 0, "redrive:D:1")
			got, expired := redriveTTL(h, d, stored.Add(c.after), c.include)
			if expired {
				got = "expired"
			}
			if got != c.want || (!expired && h.Get(envelope.TTLHeader) != c.want) {
				t.Fatalf("got %q (header %q), want %q", got, h.Get(envelope.TTLHeader), c.want)
			}
			// One TTL: a sweep of the redriven message keeps it aside again,
			// counted from the copy's own stored time.
			if len(h[envelope.OrigPrefix+envelope.TTLHeader]) > 0 && got != "expired" {
				t.Fatalf("the copy keeps the original's TTL aside too: %v", h)
			}
		})
	}
	// A TTL with no stored time to count from is refused, and so is one
	// the server would not have stored.
	if _, err := ttlOf(nats.Header{envelope.OrigPrefix + envelope.TTLHeader: {"1h"}}); err == nil {
		t.Error("a TTL without Jetctl-Source-Time was read")
	}
	if _, err := ttlOf(nats.Header{envelope.OrigPrefix + envelope.TTLHeader: {"soon"}, envelope.SourceTime: {stored.Format(time.RFC3339Nano)}}); err == nil {
		t.Error("Nats-TTL: soon was read")
	}
}
