package migrate

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/envelope/envelopetest"
)

// encodeHeader and DecodeHeader are inverse, for messages with server
// headers, with jetctl's names already (a copy of a copy), and with the
// copy's stored Nats-Expected-* headers.
func TestCopyHeaderRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, h := range []nats.Header{
		nil,
		{"Trace": {"a", "b"}},
		{"Nats-Msg-Id": {"x"}, "Nats-Rollup": {"sub"}, "Nats-TTL": {"5s"}, "Nats-Expected-Last-Sequence": {"4"}},
		{"Nats-Msg-Id": {"new"}, "Jetctl-Orig-Nats-Msg-Id": {"old"}, "Jetctl-Orig-Jetctl-Orig-Nats-Msg-Id": {"older"}},
		{"Jetctl-Migrate-Time": {"2001-01-01T00:00:00Z"}, "Jetctl-Migrate-Renamed": {"Jetctl-Orig-Nats-TTL"}, "Jetctl-Orig-Nats-TTL": {"1s"}},
		{"Jetctl-Orig-Jetctl-Migrate-Time": {"z"}, "Nats-Batch-Id": {"b"}},
	} {
		for _, mode := range []envelope.TTLMode{envelope.TTLRemaining, envelope.TTLKeep, envelope.TTLDrop} {
			t.Run(fmt.Sprint(mode, h), func(t *testing.T) {
				once := encodeHeader(h, t0, t0.Add(time.Second), mode)
				for k := range once {
					if envelope.Renames(envelope.CmdCopy, k) && (k != envelope.TTLHeader || mode == envelope.TTLDrop || len(h[k]) == 0) {
						t.Fatalf("server header %s kept in %v", k, once)
					}
				}
				// What the server stores: the copy's expectations added.
				stored := maps.Clone(once)
				stored["Nats-Expected-Stream"] = []string{"S"}
				stored["Nats-Expected-Last-Sequence"] = []string{"9"}
				// The source's expectations are not copied (a mirror drops
				// them too).
				want := noExpectations(h)
				if got := DecodeHeader(stored); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("decoded %v, want %v (encoded %v)", got, want, once)
				}
				// A copy of the copy.
				twice := encodeHeader(stored, t0.Add(time.Hour), t0.Add(time.Hour+time.Second), mode)
				if got := DecodeHeader(DecodeHeader(twice)); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("decoded twice %v, want %v (encoded %v)", got, want, twice)
				}
				if got := DecodeHeader(twice); fmt.Sprint(got) != fmt.Sprint(noExpectations(stored)) {
					t.Fatalf("decoded once %v, want %v", got, noExpectations(stored))
				}
				for k := range twice {
					if strings.Contains(k, "Nats-Expected-") {
						t.Fatalf("the copy keeps %s: %v", k, twice)
					}
				}
			})
		}
	}
}

// The copy's own Nats-TTL, by --ttl: remaining is what is left, rounded up
// (never before the original), at least 1s; keep the original's again;
// drop none; never stays never.
func TestCopyTTL(t *testing.T) {
	stored := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		ttl  string
		now  time.Duration // after stored
		mode envelope.TTLMode
		want string
	}{
		{"1h", 0, envelope.TTLRemaining, "3600s"},
		{"1h", 10*time.Minute + 500*time.Millisecond, envelope.TTLRemaining, "3000s"},
		{"1h", 10 * time.Minute, envelope.TTLRemaining, "3000s"},
		{"90", 89*time.Second + time.Millisecond, envelope.TTLRemaining, "1s"},
		{"5s", time.Minute, envelope.TTLRemaining, "1s"},
		{"1h", time.Minute, envelope.TTLKeep, "3600s"},
		{"1h", time.Minute, envelope.TTLDrop, ""},
		{"never", time.Minute, envelope.TTLRemaining, "never"},
		{"never", time.Minute, envelope.TTLKeep, "never"},
		{"0", time.Minute, envelope.TTLRemaining, ""},
	} {
		h := nats.Header{envelope.TTLHeader: {c.ttl}}
		if got := copyTTL(h, stored, stored.Add(c.now), c.mode); got != c.want {
			t.Errorf("Nats-TTL %s, %v later, --ttl %s: %q, want %q", c.ttl, c.now, c.mode, got, c.want)
		}
	}
	if got := copyTTL(nats.Header{}, stored, stored, envelope.TTLKeep); got != "" {
		t.Errorf("no Nats-TTL: the copy has %q", got)
	}
}

// The copy way's header follows its column of the header table
// (envelope.CmdCopy): renamed, dropped and kept as the table says; the
// ttl fate by --ttl (the original's kept renamed for the verification);
// and DecodeHeader gives back the original's header but for what a mirror
// drops too (Nats-Expected-*). The refuse fates (Nats-Incr,
// Nats-Counter-Sources) are the refusal of counter streams
// (TestClientCopyRefusesACounterStream): another stream's message that
// carries one (sourced from a counter by a plain stream) has it renamed.
func TestEncodeHeaderFollowsHeaderTable(t *testing.T) {
	orig := envelopetest.EveryHeader()
	stored := time.Now().Add(-time.Minute)
	for _, mode := range []envelope.TTLMode{envelope.TTLRemaining, envelope.TTLKeep, envelope.TTLDrop} {
		got := encodeHeader(orig, stored, time.Now(), mode)
		envelopetest.CheckFates(t, envelope.CmdCopy, orig, got, "Nats-TTL", "Nats-Incr", "Nats-Counter-Sources")
		for _, name := range []string{"Nats-TTL", "Nats-Incr", "Nats-Counter-Sources"} {
			if len(got[name]) > 0 && name != "Nats-TTL" || fmt.Sprint(got[envelope.OrigPrefix+name]) != fmt.Sprint(orig[name]) {
				t.Errorf("--ttl %s: %s %q, renamed %q, want it renamed", mode, name, got[name], got[envelope.OrigPrefix+name])
			}
		}
		wantTTL := map[envelope.TTLMode]string{envelope.TTLRemaining: "3540s", envelope.TTLKeep: "3600s", envelope.TTLDrop: ""}[mode]
		if g := got.Get(envelope.TTLHeader); g != wantTTL {
			t.Errorf("--ttl %s: the copy's Nats-TTL %q, want %q (the original's %s, stored a minute ago)", mode, g, wantTTL, orig.Get(envelope.TTLHeader))
		}
		if back := DecodeHeader(got); fmt.Sprint(back) != fmt.Sprint(noExpectations(orig)) {
			t.Errorf("--ttl %s: decoded %v, want %v", mode, back, noExpectations(orig))
		}
	}
}

// noExpectations is h without its Nats-Expected-* headers, nil when that
// leaves none.
func noExpectations(h nats.Header) nats.Header {
	out := nats.Header{}
	for k, v := range h {
		if !strings.HasPrefix(k, "Nats-Expected-") {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
