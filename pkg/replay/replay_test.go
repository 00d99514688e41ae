package replay

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/mover"
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
	sum, err := pump(context.Background(), FileSource(strings.NewReader(dump), 1), sink, Summary{Stream: "S"}, Config{Filter: keepX}, nil)
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

// copyOf is p's copy of m now, which must not be skipped.
func copyOf(t *testing.T, p *Publisher, m *envelope.Message) *nats.Msg {
	t.Helper()
	msg, skip := p.Copy(m, time.Now())
	if skip != SkipNone {
		t.Fatalf("seq %d skipped (%v)", m.Seq, skip)
	}
	return msg
}

func TestMsgIDNamesTargetSubject(t *testing.T) {
	a := &Publisher{cfg: PublishConfig{To: "a.{subject}", MsgIDPrefix: DefaultMsgIDPrefix}}
	b := &Publisher{cfg: PublishConfig{To: "b.{subject}", MsgIDPrefix: DefaultMsgIDPrefix}}
	m := &envelope.Message{Stream: "ORDERS", Seq: 42, Subject: "orders.paid"}
	idA, idB := copyOf(t, a, m).Header.Get(jetstream.MsgIDHeader), copyOf(t, b, m).Header.Get(jetstream.MsgIDHeader)
	if idA != "replay:ORDERS:42:a.orders.paid" || idA == idB {
		t.Errorf("ids %q and %q: want the target subject in each", idA, idB)
	}
	if again := copyOf(t, a, m).Header.Get(jetstream.MsgIDHeader); again != idA {
		t.Errorf("id not deterministic: %q then %q", idA, again)
	}
}

func TestParseCopy(t *testing.T) {
	p := &Publisher{cfg: PublishConfig{To: "x.>", MsgIDPrefix: "replay"}}
	tests := []struct {
		id, subject string
		hdr         nats.Header
		want        copyKey
		ok          bool
	}{
		{"replay:ORDERS:42:x.orders.paid", "x.orders.paid", nil, copyKey{"ORDERS", 42}, true},
		{"replay:A:B:7:x.a:b", "x.a:b", nil, copyKey{"A:B", 7}, true},
		{"replay:ORDERS:42:x.orders.paid", "moved.orders.paid", nil, copyKey{}, false},
		{"replay:ORDERS:42:x.orders.paid", "moved.orders.paid", nats.Header{envelope.SourceStream: {"ORDERS"}, envelope.SourceSeq: {"42"}}, copyKey{"ORDERS", 42}, true},
		{"replay-1a2b:ORDERS:42:x.orders.paid", "x.orders.paid", nil, copyKey{}, false},
		{"other", "x.orders.paid", nil, copyKey{}, false},
	}
	for _, tt := range tests {
		hdr := nats.Header{jetstream.MsgIDHeader: {tt.id}}
		for k, v := range tt.hdr {
			hdr[k] = v
		}
		got, ok := p.parseCopy(&streamread.StoredMsg{Subject: tt.subject, Header: hdr})
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseCopy(%q on %q) = %v %v, want %v %v", tt.id, tt.subject, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTargetFilter(t *testing.T) {
	for to, want := range map[string]string{"copy.{subject}": "copy.>", "restore.>": "restore.>", "one": "one", "{subject}.x": ">", "a.{subject}.{subject}": ">"} {
		if got := targetFilter(to); got != want {
			t.Errorf("targetFilter(%q) = %q, want %q", to, got, want)
		}
	}
}

func TestMsgIDPrefixFor(t *testing.T) {
	if p, err := MsgIDPrefixFor(nil, false); p != "replay" || err != nil {
		t.Errorf("fresh run: %q, %v", p, err)
	}
	a, _ := MsgIDPrefixFor(nil, true)
	b, _ := MsgIDPrefixFor(nil, true)
	if !strings.HasPrefix(a, "replay-") || a == b {
		t.Errorf("--new-msg-id prefixes %q and %q: want replay-<run id>, different per run", a, b)
	}
	// A checkpoint defines its copy: resumed with or without the flag.
	run := &Checkpoint{MsgIDPrefix: a}
	for _, newID := range []bool{false, true} {
		if p, err := MsgIDPrefixFor(run, newID); p != a || err != nil {
			t.Errorf("resume (new-msg-id %v): %q, %v; want %q", newID, p, err, a)
		}
	}
	for _, plain := range []*Checkpoint{{}, {MsgIDPrefix: "replay"}} {
		if p, err := MsgIDPrefixFor(plain, false); p != "replay" || err != nil {
			t.Errorf("plain resume: %q, %v", p, err)
		}
		if _, err := MsgIDPrefixFor(plain, true); err == nil {
			t.Error("--new-msg-id with a plain checkpoint was accepted")
		}
	}
}

// A checkpoint that cannot be read, or a --new-msg-id that does not fit
// it, is refused by Check before anything is contacted, as ErrInvalid with
// the cause's own message.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bad := dir + "/bad.json"
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := Config{CheckpointPath: bad}
	err := cfg.Check()
	if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "checkpoint "+bad+": ") {
		t.Errorf("corrupt checkpoint: %v", err)
	}
	plain := dir + "/plain.json"
	if err := SaveCheckpoint(plain, Checkpoint{Stream: "S", LastSeq: 3}); err != nil {
		t.Fatal(err)
	}
	cfg = Config{CheckpointPath: plain, NewMsgID: true}
	if err := cfg.Check(); !errors.Is(err, ErrInvalid) {
		t.Errorf("--new-msg-id on a plain checkpoint: %v", err)
	}
	cfg = Config{CheckpointPath: dir + "/missing.json"}
	if err := cfg.Check(); err != nil || cfg.checkpoint != nil || cfg.msgID != DefaultMsgIDPrefix {
		t.Errorf("no checkpoint yet: %v %+v %q", err, cfg.checkpoint, cfg.msgID)
	}
}

// A duplicate acknowledgement counts as stored by this run only when
// another send of this run could have stored the copy: sends the target
// refused stored nothing. (The window says Resent when an earlier send of
// the same round may have stored it; maybeStored says so of an earlier
// round, retried by the publisher.)
func TestCountDuplicates(t *testing.T) {
	tests := []struct {
		name         string
		c            copyState
		pub          mover.Pub
		stored, dups uint64
	}{
		{"new", copyState{}, mover.Pub{}, 1, 0},
		{"sent once, duplicate", copyState{}, mover.Pub{Duplicate: true}, 0, 1},
		{"sent again, duplicate", copyState{}, mover.Pub{Duplicate: true, Resent: true}, 1, 0},
		{"refused, then duplicate", copyState{tries: 1}, mover.Pub{Duplicate: true}, 0, 1},
		{"refused, timed out, then duplicate", copyState{tries: 2, maybeStored: true}, mover.Pub{Duplicate: true}, 1, 0},
		{"found after a reconnect", copyState{}, mover.Pub{Found: true}, 1, 0},
		{"found", copyState{found: true}, mover.Pub{}, 0, 1},
	}
	for _, tt := range tests {
		var p Publisher
		c := tt.c
		if !c.found {
			c.storedBy(&tt.pub)
		}
		p.count(&c)
		if p.counts.Stored != tt.stored || p.counts.Duplicates != tt.dups {
			t.Errorf("%s: stored %d, duplicates %d; want %d, %d", tt.name, p.counts.Stored, p.counts.Duplicates, tt.stored, tt.dups)
		}
	}
}

// A copy carries the original headers (those the server acts on moved
// aside), the provenance and its message id, exactly as the envelope
// helpers make them.
func TestCopyHeaders(t *testing.T) {
	m := &envelope.Message{Stream: "ORDERS", Seq: 4711, Subject: "orders.paid", Time: time.Date(2026, 11, 29, 2, 0, 0, 123456789, time.FixedZone("x", 3600)), Data: []byte("d"),
		Header: nats.Header{"A": {"1", "2"}, "Nats-Msg-Id": {"orig"}, envelope.SourceSeq: {"old"}}}
	for _, noProv := range []bool{false, true} {
		p := &Publisher{cfg: PublishConfig{To: "copy.>", MsgIDPrefix: "replay", NoProvenance: noProv}}
		want := envelope.CopyHeader(envelope.CmdRepublish, m.Header, 0)
		if !noProv {
			envelope.SetProvenance(want, m)
		}
		want.Set(jetstream.MsgIDHeader, "replay:ORDERS:4711:copy.orders.paid")
		got := copyOf(t, p, m)
		if got.Subject != "copy.orders.paid" || string(got.Data) != "d" || !reflect.DeepEqual(got.Header, want) {
			t.Errorf("no provenance %v: %s %v, want %v", noProv, got.Subject, got.Header, want)
		}
	}
}

// TestValidateDumpCutLastLine tells a dump killed while writing its last
// line (no newline after it) from one with a bad line, and says so.
func TestValidateDumpCutLastLine(t *testing.T) {
	line := `{"stream":"S","seq":1,"subject":"x","time":"2024-01-01T00:00:00Z","data":"a"}` + "\n"
	for _, tc := range []struct {
		name      string
		dump      string
		n         uint64
		bad       bool
		last, cut bool
	}{
		{name: "whole", dump: line + line, n: 2},
		{name: "no newline at the end, whole message", dump: line + strings.TrimSuffix(line, "\n"), n: 2},
		{name: "cut", dump: line + line + line[:20], n: 2, bad: true, last: true, cut: true},
		{name: "cut first line", dump: line[:20], bad: true, last: true, cut: true},
		{name: "bad last line, whole", dump: line + "nope\n", n: 1, bad: true, last: true},
		{name: "bad line before others", dump: "nope\n" + line, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := ValidateDump(context.Background(), strings.NewReader(tc.dump), "d")
			if info.Messages != tc.n {
				t.Errorf("n = %d, want %d", info.Messages, tc.n)
			}
			var de *DumpError
			if errors.As(err, &de) != tc.bad {
				t.Fatalf("err = %v, want a DumpError: %v", err, tc.bad)
			}
			if de == nil {
				return
			}
			if de.Last != tc.last || de.Cut != tc.cut {
				t.Errorf("Last %v Cut %v, want %v %v", de.Last, de.Cut, tc.last, tc.cut)
			}
			if tc.cut && !strings.Contains(de.Error(), "cut off") {
				t.Errorf("error %q does not say the line is cut off", de)
			}
		})
	}
}
