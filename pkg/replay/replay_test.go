package replay

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/streamread"
)

func TestTargetSubject(t *testing.T) {
	tests := []struct{ to, subject, want string }{
		{"copy", "orders.created", "copy"},
		{"replayed.{subject}", "orders.created", "replayed.orders.created"},
		{"restore.>", "orders.created", "restore.orders.created"},
		{"a.{subject}.b", "x", "a.x.b"},
	}
	for _, tt := range tests {
		if got := TargetSubject(tt.to, tt.subject); got != tt.want {
			t.Errorf("TargetSubject(%q, %q) = %q, want %q", tt.to, tt.subject, got, tt.want)
		}
	}
	for _, bad := range []string{"", "a.*", ">", "a..b", "a b"} {
		if ValidateTarget(bad) == nil {
			t.Errorf("ValidateTarget(%q) accepted", bad)
		}
	}
	for _, good := range []string{"a", "restore.>", "x.{subject}"} {
		if err := ValidateTarget(good); err != nil {
			t.Errorf("ValidateTarget(%q) = %v", good, err)
		}
	}
}

type recordingSink struct {
	StatsSink
	seqs []uint64
}

func (r *recordingSink) Write(ctx context.Context, m *envelope.Message) error {
	r.seqs = append(r.seqs, m.Seq)
	return r.StatsSink.Write(ctx, m)
}

func TestRunFiltersAndCountsFromFile(t *testing.T) {
	dump := ""
	for i, subj := range []string{"a.x", "a.y", "a.x"} {
		dump += string((&envelope.Message{Stream: "S", Seq: uint64(i + 1), Subject: subj, Data: []byte("d")}).AppendJSON(nil))
	}
	sink := &recordingSink{}
	keepX := func(m *envelope.Message) (bool, error) { return m.Subject == "a.x", nil }
	sum, err := Run(context.Background(), FileSource(strings.NewReader(dump), 1), sink, Summary{Stream: "S"}, Options{Filter: keepX})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Read != 2 || sum.Messages != 1 || sum.Bytes != 1 || len(sink.seqs) != 1 || sink.seqs[0] != 3 {
		t.Errorf("summary %+v, written %v", sum, sink.seqs)
	}
	if sum.Checkpoint != 3 {
		t.Errorf("checkpoint = %d, want 3 (filtered messages count as done)", sum.Checkpoint)
	}
}

func TestResume(t *testing.T) {
	r := streamread.Range{Stream: "S", First: 1, Last: 900}
	got, err := Resume(r, &Checkpoint{Stream: "S", LastSeq: 400, ToSeq: 500})
	if err != nil || got.First != 401 || got.Last != 500 {
		t.Errorf("Resume = %+v, %v", got, err)
	}
	if _, err := Resume(r, &Checkpoint{Stream: "T"}); err == nil {
		t.Error("a checkpoint of another stream was accepted")
	}
}

func TestAckError(t *testing.T) {
	ok := &nats.Msg{Data: []byte(`{"stream":"COPY","seq":7}`)}
	dup := &nats.Msg{Data: []byte(`{"stream":"COPY","seq":7,"duplicate":true}`)}
	refused := &nats.Msg{Data: []byte(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"}}`)}
	noStream := &nats.Msg{Header: nats.Header{"Status": {"503"}}}
	if ackError(ok) != nil || ackError(dup) != nil {
		t.Error("a stored or duplicate message is a success")
	}
	if err := ackError(refused); err == nil || !strings.Contains(err.Error(), "wrong last sequence") {
		t.Errorf("refused: %v", err)
	}
	if !errors.Is(ackError(noStream), jetstream.ErrNoStreamResponse) {
		t.Error("503 is no stream response")
	}
}
