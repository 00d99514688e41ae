package migrate

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/logctx"
)

func TestCompareHashes(t *testing.T) {
	hs := func(pairs ...uint64) []msgHash {
		var out []msgHash
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, msgHash{Seq: pairs[i], Hash: pairs[i+1]})
		}
		return out
	}
	for _, c := range []struct {
		name     string
		src, dst []msgHash
		exact    bool
		seq      uint64
		what     string
	}{
		{"same", hs(1, 10, 2, 20), hs(1, 10, 2, 20), true, 0, ""},
		{"missing", hs(1, 10, 2, 20), hs(1, 10), false, 2, "seq 2 is missing"},
		{"missing exact", hs(1, 10, 2, 20), hs(2, 20), true, 1, "seq 1 is missing"},
		{"changed", hs(1, 10, 2, 20), hs(1, 10, 2, 21), false, 2, "seq 2 has another subject, header, payload or timestamp"},
		// Live: a message only in the target was deleted from the source
		// since it was copied; frozen, it is a difference.
		{"deleted since copied", hs(1, 10, 3, 30), hs(1, 10, 2, 20, 3, 30), false, 0, ""},
		{"target only, exact", hs(1, 10, 3, 30), hs(1, 10, 2, 20, 3, 30), true, 2, "seq 2 is not in the source"},
		{"target longer, exact", hs(1, 10), hs(1, 10, 2, 20), true, 2, "seq 2 is not in the source"},
		{"target longer, live", hs(1, 10), hs(1, 10, 2, 20), false, 0, ""},
	} {
		seq, what, ok := compareHashes(c.src, c.dst, c.exact)
		if ok != (c.what == "") || seq != c.seq || what != c.what {
			t.Errorf("%s: got %d %q %v, want %d %q", c.name, seq, what, ok, c.seq, c.what)
		}
	}
}

// A mirror's error is waited out for mirrorErrorGrace, said once on
// stderr, and ends the move only when it lasts; one that clears starts the
// count again.
func TestMirrorErrorGrace(t *testing.T) {
	var logged bytes.Buffer
	ctx := logctx.With(context.Background(), slog.New(slog.NewTextHandler(&logged, nil)))
	w := &copyWatch{m: &mover{srcName: "SK", dstName: "SK2"}}
	bad := &jetstream.StreamInfo{Mirror: &jetstream.StreamSourceInfo{Error: &jetstream.APIError{Code: 404, ErrorCode: 10059, Description: "stream not found"}}}
	good := &jetstream.StreamInfo{Mirror: &jetstream.StreamSourceInfo{}}
	t0 := time.Unix(1000, 0)
	for _, step := range []struct {
		ti    *jetstream.StreamInfo
		at    time.Duration
		fatal bool
	}{
		{bad, 0, false},
		{bad, 30 * time.Second, false},
		{good, 31 * time.Second, false},
		{bad, 40 * time.Second, false},
		{bad, 40*time.Second + mirrorErrorGrace - time.Millisecond, false},
		{bad, 40*time.Second + mirrorErrorGrace, true},
	} {
		err := w.mirrorError(ctx, step.ti, t0.Add(step.at))
		if (err != nil) != step.fatal {
			t.Fatalf("at %v: err %v, want fatal %v", step.at, err, step.fatal)
		}
		if err != nil && err.Error() != `target "SK2": mirror of "SK": stream not found (for 1m0s)` {
			t.Errorf("error %q", err)
		}
	}
	if n := strings.Count(logged.String(), "waiting for it to clear"); n != 2 {
		t.Errorf("warned %d times, want once per spell of errors (2):\n%s", n, logged.String())
	}
	if caughtUp(bad) {
		t.Error("a mirror reporting an error counts as caught up")
	}
}

// A difference found by reading both leaders says what differs, as the
// hashes compare it, and never a header's value or a payload.
func TestWhatDiffers(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 4, 30, 19, 46894954, time.UTC)
	msg := func(subject string, h map[string][]string, data string, ts time.Time) *envelope.Message {
		return &envelope.Message{Subject: subject, Header: h, Data: []byte(data), Time: ts}
	}
	mirror := &mover{srcName: "ORDERS", dstName: "ORDERS2", sum: &Summary{Mechanism: "mirror"}}
	for _, c := range []struct {
		name     string
		m        *mover
		src, dst *envelope.Message
		want     string
	}{
		{"timestamp", mirror, msg("a", nil, "x", t0), msg("a", nil, "x", t0.Add(time.Millisecond)),
			"timestamp 2026-12-02T04:30:19.046894954Z in ORDERS, 2026-12-02T04:30:19.047894954Z in ORDERS2"},
		{"subject and payload", mirror, msg("a", nil, "secret-1", t0), msg("b", nil, "secret-22", t0),
			"subject a in ORDERS, b in ORDERS2; payload of 8 B in ORDERS, 9 B in ORDERS2"},
		{"headers", mirror, msg("a", map[string][]string{"X-A": {"1"}, "X-B": {"2"}, "Nats-Expected-Stream": {"S"}}, "x", t0),
			msg("a", map[string][]string{"X-A": {"9"}, "X-C": {"3"}}, "x", t0), "headers X-A, X-B, X-C"},
		{"copy: no timestamps", &mover{srcName: "S", dstName: "S", sum: &Summary{Mechanism: "copy"}},
			msg("a", nil, "x", t0), msg("a", nil, "y", t0.Add(time.Hour)), "payload of 1 B in S, 1 B in S"},
	} {
		got := c.m.whatDiffers(c.src, c.dst)
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
		if strings.Contains(got, "secret") {
			t.Errorf("%s: %q shows a payload", c.name, got)
		}
	}
}
