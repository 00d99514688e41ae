package replay

import (
	"context"
	"testing"
	"time"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// timedSink records when each message was written.
type timedSink struct {
	StatsSink
	seqs  []uint64
	times []time.Time
}

func (s *timedSink) Write(_ context.Context, m *envelope.Message) error {
	s.seqs = append(s.seqs, m.Seq)
	s.times = append(s.times, time.Now())
	return nil
}

// messagesAt is a source of messages stored at the given offsets from a
// fixed start.
func messagesAt(offsets ...time.Duration) Source {
	start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	return func(ctx context.Context, emit streamread.Emit) error {
		for i, off := range offsets {
			if err := emit(&envelope.Message{Stream: "S", Seq: uint64(i + 1), Subject: "s", Time: start.Add(off)}); err != nil {
				return err
			}
		}
		return nil
	}
}

// checkGaps asserts order and that no message came earlier than its paced
// gap after the one before: pacing can be slower than asked on a busy
// machine, never faster. No upper bound is asserted.
func checkGaps(t *testing.T, s *timedSink, want []time.Duration) {
	t.Helper()
	if len(s.seqs) != len(want)+1 {
		t.Fatalf("wrote %d messages, want %d", len(s.seqs), len(want)+1)
	}
	for i, seq := range s.seqs {
		if seq != uint64(i+1) {
			t.Fatalf("order: %v", s.seqs)
		}
	}
	const slack = 2 * time.Millisecond // timer granularity
	for i, w := range want {
		if got := s.times[i+1].Sub(s.times[i]); got+slack < w {
			t.Errorf("gap before seq %d: %s, want at least %s", i+2, got, w)
		}
	}
}

func TestPaceOriginalKeepsGapsDividedBySpeed(t *testing.T) {
	sink := &timedSink{}
	_, err := pump(context.Background(), messagesAt(0, 200*time.Millisecond, 200*time.Millisecond, 600*time.Millisecond), sink, Summary{},
		Config{PaceOriginal: true, Speed: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGaps(t, sink, []time.Duration{100 * time.Millisecond, 0, 200 * time.Millisecond})
}

// --max-gap caps the wait: messages an hour apart replay at once. Without
// the cap this test would run for hours, not fail by a margin.
func TestPaceOriginalMaxGap(t *testing.T) {
	sink := &timedSink{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := pump(ctx, messagesAt(0, time.Hour, 2*time.Hour), sink, Summary{},
		Config{PaceOriginal: true, Speed: 1, MaxGap: 30 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkGaps(t, sink, []time.Duration{30 * time.Millisecond, 30 * time.Millisecond})
}

func TestRateSpacesMessages(t *testing.T) {
	sink := &timedSink{}
	const n = 30
	offsets := make([]time.Duration, n)
	start := time.Now()
	_, err := pump(context.Background(), messagesAt(offsets...), sink, Summary{}, Config{Rate: 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A burst of 2 (rate/50), then one every 10ms: at least 280ms.
	if got := time.Since(start); got < 280*time.Millisecond {
		t.Errorf("30 messages at 100/s took %s, want at least 280ms", got)
	}
	if len(sink.seqs) != n {
		t.Fatalf("wrote %d", len(sink.seqs))
	}
}
