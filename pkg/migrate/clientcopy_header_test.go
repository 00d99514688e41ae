package migrate

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
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
		t.Run(fmt.Sprint(h), func(t *testing.T) {
			once := encodeHeader(h, t0)
			for k := range once {
				if envelope.IsServerHeader(k) {
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
			twice := encodeHeader(stored, t0.Add(time.Hour))
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
