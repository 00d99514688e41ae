package envelope_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/envelope/envelopetest"
)

var update = flag.Bool("update", false, "rewrite docs/headers.md's table from envelope.HeaderTable")

const (
	docPath  = "../../docs/headers.md"
	docBegin = "<!-- header table: generated from envelope.HeaderTable by go test ./pkg/envelope -run TestHeaderDoc -update -->\n"
	docEnd   = "<!-- end of header table -->\n"
)

// TestHeaderDoc fails when docs/headers.md's table is not the one
// envelope.HeaderTable renders.
func TestHeaderDoc(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, docBegin), strings.Index(doc, docEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/headers.md has no generated table (%q ... %q)", docBegin, docEnd)
	}
	want := doc[:i+len(docBegin)] + envelope.Table() + doc[j:]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("docs/headers.md's table is stale: run go test ./pkg/envelope -run TestHeaderDoc -update")
}

// TestHeaderTableFactsExist fails when a row names a fact test that no
// package has.
func TestHeaderTableFactsExist(t *testing.T) {
	files, err := filepath.Glob("../*/facts_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	for _, r := range envelope.HeaderTable {
		if len(r.Facts) == 0 {
			t.Errorf("%s: no fact test", r.Name)
		}
		for _, name := range r.Facts {
			if !regexp.MustCompile(`func ` + name + `\(t \*testing\.T\)`).MatchString(all.String()) {
				t.Errorf("%s: fact test %s is in no pkg/*/facts_test.go", r.Name, name)
			}
		}
	}
}

// TestServerHeadersCovered holds the table to the server's own header
// names: every header a client's publish can carry that the server acts
// on has a row, and the others are named here as what they are.
func TestServerHeadersCovered(t *testing.T) {
	acted := []string{
		server.JSMsgId, server.JSExpectedStream, server.JSExpectedLastSeq, server.JSExpectedLastSubjSeq,
		server.JSExpectedLastSubjSeqSubj, server.JSExpectedLastMsgId, server.JSStreamSource, server.JSMsgRollup,
		server.JSMessageTTL, server.JSMarkerReason, server.JSMessageIncr, server.JSMessageCounterSources,
		server.JSBatchId, server.JSBatchSeq, server.JSBatchCommit, server.JSSchedulePattern,
		server.JSScheduleTimeZone, server.JSScheduleTTL, server.JSScheduleRollup, server.JSScheduleTarget,
		server.JSScheduleSource, server.JSScheduler, server.JSScheduleNext, server.JSRequiredApiLevel,
		server.MsgTraceDest, server.MsgTraceOnly, server.MsgTraceHop, server.MsgTraceOriginAccount,
	}
	for _, h := range acted {
		if _, ok := envelope.Rule(h); !ok {
			t.Errorf("%s: no row in envelope.HeaderTable", h)
		}
	}
	// Headers of the server's answers and deliveries, never stored by a
	// publish: status and flow control (Nats-Last-Consumer, -Last-Stream,
	// -Consumer-Stalled, -Response-Type, -Msg-Size) and direct get and
	// republish (Nats-Stream, -Sequence, ...). A republished message a
	// stream stores carries them as plain data.
	for _, h := range []string{
		server.JSLastConsumerSeq, server.JSLastStreamSeq, server.JSConsumerStalled, server.JSResponseType, server.JSMsgSize,
		server.JSStream, server.JSSequence, server.JSTimeStamp, server.JSSubject, server.JSLastSequence, server.JSNumPending, server.JSUpToSequence,
	} {
		for _, cmd := range envelope.Commands {
			if envelope.Renames(cmd, h) {
				t.Errorf("%s: %s is renamed, but the server does not act on it", cmd, h)
			}
		}
	}
}

// Every command's copy (CopyHeader) gives each header its column's fate:
// renamed where the command renames it, sets its own or its --ttl, or
// refuses the message; left out where it drops it; kept otherwise, and
// so are the headers the table does not name.
func TestCopyHeaderFollowsTable(t *testing.T) {
	h := envelopetest.EveryHeader()
	h["KV-Operation"] = []string{"DEL"}
	h["traceparent"] = []string{"00-x"}
	for _, cmd := range envelope.Commands {
		got := envelope.CopyHeader(cmd, h, 0)
		for k, vs := range h {
			renamed, kept := got.Get(envelope.OrigPrefix+k) == vs[0] && got.Get(k) == "", got.Get(k) == vs[0]
			switch envelope.FateOf(cmd, k) {
			case envelope.Rename, envelope.Own, envelope.TTL, envelope.Refuse:
				if !renamed {
					t.Errorf("%s: %s not renamed: %v", cmd, k, got)
				}
			case envelope.Drop:
				if len(got[k])+len(got[envelope.OrigPrefix+k]) > 0 {
					t.Errorf("%s: %s not dropped: %v", cmd, k, got)
				}
			default:
				if !kept {
					t.Errorf("%s: %s not kept: %v", cmd, k, got)
				}
			}
		}
	}
}

func TestParseTTL(t *testing.T) {
	for _, c := range []struct {
		in    string
		ttl   time.Duration
		never bool
		bad   bool
	}{
		{"1s", time.Second, false, false}, {"90s", 90 * time.Second, false, false}, {"1.5s", time.Second, false, false},
		{"2h", 2 * time.Hour, false, false}, {"30", 30 * time.Second, false, false}, {"never", 0, true, false},
		{"NEVER", 0, true, false}, {"0", 0, false, false}, {"500ms", 0, false, true}, {"-1", 0, false, true}, {"soon", 0, false, true},
	} {
		ttl, never, err := envelope.ParseTTL(c.in)
		if (err != nil) != c.bad || ttl != c.ttl || never != c.never {
			t.Errorf("ParseTTL(%q) = %v, %v, %v", c.in, ttl, never, err)
		}
	}
}

func TestApplyTTL(t *testing.T) {
	stored := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	orig := nats.Header{"Nats-TTL": {"60s"}}
	copyOf := func() nats.Header { return envelope.CopyHeader(envelope.CmdDLQ, orig, 0) }
	for _, c := range []struct {
		mode     envelope.TTLMode
		after    time.Duration
		skip     bool
		ttl, was string
	}{
		{envelope.TTLRemaining, 15500 * time.Millisecond, false, "44s", "60s"},
		{envelope.TTLRemaining, 59500 * time.Millisecond, true, "", "60s"},
		{envelope.TTLRemaining, time.Hour, true, "", "60s"},
		{envelope.TTLKeep, time.Hour, false, "60s", ""},
		{envelope.TTLDrop, 10 * time.Second, false, "", "60s"},
	} {
		out := copyOf()
		skip, err := envelope.ApplyTTL(out, orig, stored, stored.Add(c.after), c.mode)
		if err != nil || skip != c.skip || out.Get("Nats-TTL") != c.ttl || out.Get(envelope.OrigPrefix+"Nats-TTL") != c.was {
			t.Errorf("%v after %v: skip %v, %v, %v", c.mode, c.after, skip, out, err)
		}
	}
	never := nats.Header{"Nats-TTL": {"never"}}
	out := envelope.CopyHeader(envelope.CmdDLQ, never, 0)
	if skip, err := envelope.ApplyTTL(out, never, stored, stored.Add(1000*time.Hour), envelope.TTLRemaining); skip || err != nil || out.Get("Nats-TTL") != "never" {
		t.Errorf("never: %v %v %v", skip, out, err)
	}
	if _, err := envelope.ParseTTLMode("later"); err == nil || !strings.Contains(err.Error(), "remaining, keep, drop") {
		t.Errorf("ParseTTLMode(later): %v", err)
	}
}
