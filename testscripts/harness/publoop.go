package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/jetctl/jetctl/pkg/embedded"
)

// pubLoopMax bounds a loop that is never stopped; the script's end stops
// it before that.
const pubLoopMax = 10 * time.Minute

type pubLoopsKey struct{}

// pubLoops are a script's publishing loops by name; a name is used once.
type pubLoops struct {
	mu    sync.Mutex
	loops map[string]*pubLoop
}

// pubAck is one acknowledged publish.
type pubAck struct {
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Payload   string `json:"payload"`
	Domain    string `json:"domain,omitempty"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// pubLoopReport is what pub-loop stop writes.
type pubLoopReport struct {
	Name     string `json:"name"`
	Subject  string `json:"subject"`
	URL      string `json:"url"`
	Acked    int    `json:"acked"`
	Attempts int    `json:"attempts"`
	// FailedAttempts are attempts that got no acknowledgement (no stream,
	// timeout, error reply) and were tried again.
	FailedAttempts int            `json:"failed_attempts"`
	Errors         map[string]int `json:"errors,omitempty"`
	// Abandoned is the payload being tried when the loop stopped, never
	// acknowledged (it may still have been stored); "" if none.
	Abandoned string `json:"abandoned,omitempty"`
	// LongestGap is the longest time between two successive
	// acknowledgements, GapAfter and GapBefore the payloads around it.
	LongestGapNS int64    `json:"longest_gap_ns"`
	LongestGap   string   `json:"longest_gap"`
	GapAfter     string   `json:"gap_after,omitempty"`
	GapBefore    string   `json:"gap_before,omitempty"`
	Acks         []pubAck `json:"acks"`
}

type pubLoop struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	report   pubLoopReport
	lastAck  time.Time
	stopped  bool
	pending  string
	progress chan struct{} // closed and replaced on every attempt
}

// run publishes name-1, name-2, ... one at a time, each with Nats-Msg-Id
// set to its payload, and tries each again (after a short backoff, 5 ms
// doubling to 100 ms) until it is acknowledged or ctx ends.
func (l *pubLoop) run(ctx context.Context, js jetstream.JetStream, name, subject string, pause time.Duration) {
	defer close(l.done)
	for n := 1; ; n++ {
		payload := name + "-" + strconv.Itoa(n)
		backoff := 5 * time.Millisecond
		for attempt := 0; ; attempt++ {
			if ctx.Err() != nil {
				if attempt > 0 {
					l.mu.Lock()
					l.pending = payload
					l.mu.Unlock()
				}
				return
			}
			msg := &nats.Msg{Subject: subject, Data: []byte(payload), Header: nats.Header{}}
			msg.Header.Set(jetstream.MsgIDHeader, payload)
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			// No retries inside nats.go (2 by default, 250 ms apart, on
			// no responders): this loop's own backoff is the only one.
			ack, err := js.PublishMsg(actx, msg, jetstream.WithRetryAttempts(0))
			cancel()
			now := time.Now()
			l.mu.Lock()
			l.report.Attempts++
			if err == nil {
				l.report.Acks = append(l.report.Acks, pubAck{Stream: ack.Stream, Seq: ack.Sequence, Payload: payload, Domain: ack.Domain, Duplicate: ack.Duplicate})
				l.report.Acked++
				if !l.lastAck.IsZero() {
					if gap := now.Sub(l.lastAck); gap.Nanoseconds() > l.report.LongestGapNS {
						l.report.LongestGapNS = gap.Nanoseconds()
						l.report.GapAfter = l.report.Acks[len(l.report.Acks)-2].Payload
						l.report.GapBefore = payload
					}
				}
				l.lastAck = now
			} else if ctx.Err() == nil {
				l.report.FailedAttempts++
				if l.report.Errors == nil {
					l.report.Errors = map[string]int{}
				}
				l.report.Errors[err.Error()]++
			}
			close(l.progress)
			l.progress = make(chan struct{})
			l.mu.Unlock()
			if err == nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 100*time.Millisecond)
		}
		if pause > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}
}

// stop ends the loop and waits for it.
func (l *pubLoop) stop() {
	l.cancel()
	<-l.done
}

// pub-loop start [-s URL] [-pause D] NAME SUBJECT: publish NAME-1, NAME-2,
// ... to SUBJECT in the background, one at a time, each tried again until
// acknowledged (Nats-Msg-Id is the payload, so a retry of a stored message
// is not stored twice within the duplicate window), pausing D (default
// 1ms) after each acknowledgement. Stops at pub-loop stop or the script's
// end.
//
// pub-loop wait NAME acked|failed [+]N: wait (at most a minute) until the
// loop has N acknowledgements, or N failed attempts; +N: N more than now.
//
// pub-loop stop NAME OUTFILE: stop the loop and write its report (JSON:
// acked, attempts, failed_attempts, errors, longest_gap_ns between two
// successive acknowledgements, and acks: stream, seq, payload of each);
// print a summary line.
//
// pub-loop check [-same-seq] OUTFILE STREAM: assert that every
// acknowledged payload of the report is in STREAM exactly once (with
// -same-seq, at the acknowledged sequence), and print the longest gap.
func cmdPubLoop(ts *testscript.TestScript, neg bool, args []string) {
	usage := "usage: pub-loop start [-s URL] [-pause D] NAME SUBJECT | pub-loop wait NAME acked|failed [+]N | pub-loop stop NAME OUTFILE | pub-loop check [-same-seq] OUTFILE STREAM"
	if len(args) < 1 {
		ts.Fatalf("%s", usage)
	}
	if neg && args[0] != "check" {
		ts.Fatalf("unsupported: ! pub-loop %s", args[0])
	}
	holder, _ := ts.Value(pubLoopsKey{}).(*pubLoops)
	if holder == nil {
		ts.Fatalf("pub-loop: the script's setup has no pub-loop state")
	}
	lookup := func(name string) *pubLoop {
		holder.mu.Lock()
		defer holder.mu.Unlock()
		l := holder.loops[name]
		if l == nil {
			ts.Fatalf("pub-loop: no loop %q", name)
		}
		return l
	}
	switch args[0] {
	case "start":
		args = args[1:]
		url, pause := ts.Getenv("NATS_URL"), time.Millisecond
		for len(args) > 2 && strings.HasPrefix(args[0], "-") {
			switch args[0] {
			case "-s":
				url = args[1]
			case "-pause":
				d, err := time.ParseDuration(args[1])
				ts.Check(err)
				pause = d
			default:
				ts.Fatalf("pub-loop start: unknown flag %s", args[0])
			}
			args = args[2:]
		}
		if len(args) != 2 {
			ts.Fatalf("%s", usage)
		}
		name, subject := args[0], args[1]
		holder.mu.Lock()
		_, used := holder.loops[name]
		holder.mu.Unlock()
		if used {
			ts.Fatalf("pub-loop: a loop %q was started before; names are used once (they are the payloads)", name)
		}
		nc, err := nats.Connect(url, nats.Timeout(5*time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.RetryOnFailedConnect(true))
		ts.Check(err)
		js, err := jetstream.New(nc)
		ts.Check(err)
		c, cancel := context.WithTimeout(context.Background(), pubLoopMax)
		l := &pubLoop{cancel: cancel, done: make(chan struct{}), progress: make(chan struct{})}
		l.report.Name, l.report.Subject, l.report.URL = name, subject, url
		holder.mu.Lock()
		holder.loops[name] = l
		holder.mu.Unlock()
		go l.run(c, js, name, subject, pause)
		ts.Defer(func() {
			l.stop()
			nc.Close()
		})
	case "wait":
		if len(args) != 4 || (args[2] != "acked" && args[2] != "failed") {
			ts.Fatalf("%s", usage)
		}
		l := lookup(args[1])
		want, err := strconv.Atoi(strings.TrimPrefix(args[3], "+"))
		ts.Check(err)
		if strings.HasPrefix(args[3], "+") {
			l.mu.Lock()
			if args[2] == "acked" {
				want += l.report.Acked
			} else {
				want += l.report.FailedAttempts
			}
			l.mu.Unlock()
		}
		deadline := time.After(time.Minute)
		for {
			l.mu.Lock()
			acked, failed, progress, done := l.report.Acked, l.report.FailedAttempts, l.progress, l.done
			l.mu.Unlock()
			got := acked
			if args[2] == "failed" {
				got = failed
			}
			if got >= want {
				return
			}
			select {
			case <-progress:
			case <-done:
				ts.Fatalf("pub-loop wait: loop %s stopped with %d acknowledged, %d failed attempts", args[1], acked, failed)
			case <-deadline:
				ts.Fatalf("pub-loop wait: loop %s has %d acknowledged, %d failed attempts after a minute, want %d %s", args[1], acked, failed, want, args[2])
			}
		}
	case "stop":
		if len(args) != 3 {
			ts.Fatalf("%s", usage)
		}
		l := lookup(args[1])
		l.stop()
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			ts.Fatalf("pub-loop stop: loop %s was stopped before", args[1])
		}
		l.stopped = true
		rep := l.report
		rep.Abandoned = l.pending
		l.mu.Unlock()
		if rep.Acks == nil {
			rep.Acks = []pubAck{}
		}
		rep.LongestGap = time.Duration(rep.LongestGapNS).String()
		out, err := json.MarshalIndent(rep, "", "  ")
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(args[2]), append(out, '\n'), 0o644))
		fmt.Fprintf(ts.Stdout(), "pub-loop %s: %d acknowledged, %d failed attempts, longest gap between acknowledgements %s\n",
			rep.Name, rep.Acked, rep.FailedAttempts, rep.LongestGap)
	case "check":
		sameSeq := len(args) > 1 && args[1] == "-same-seq"
		if sameSeq {
			args = args[1:]
		}
		if len(args) != 3 {
			ts.Fatalf("%s", usage)
		}
		var rep pubLoopReport
		ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[1])), &rep))
		_, js := jsFor(ts)
		found, err := readPayloads(js, args[2])
		ts.Check(err)
		problems := checkAcks(rep.Acks, found, sameSeq)
		if len(problems) > 0 {
			msg := fmt.Sprintf("pub-loop check: %d of %d acknowledged payloads wrong in %s: %s", len(problems), len(rep.Acks), args[2], strings.Join(problems[:min(len(problems), 10)], "; "))
			if !neg {
				ts.Fatalf("%s", msg)
			}
			fmt.Fprintln(ts.Stdout(), msg)
			return
		}
		if neg {
			ts.Fatalf("pub-loop check: all %d acknowledged payloads are in %s exactly once", len(rep.Acks), args[2])
		}
		fmt.Fprintf(ts.Stdout(), "pub-loop check: %d acknowledged payloads in %s exactly once; longest gap between acknowledgements %s\n",
			len(rep.Acks), args[2], time.Duration(rep.LongestGapNS))
	default:
		ts.Fatalf("%s", usage)
	}
}

// checkAcks lists what is wrong with acks against found (payload to the
// sequences holding it): missing, stored more than once, or (sameSeq)
// stored at another sequence than acknowledged.
func checkAcks(acks []pubAck, found map[string][]uint64, sameSeq bool) []string {
	var problems []string
	for _, a := range acks {
		seqs := found[a.Payload]
		switch {
		case len(seqs) == 0:
			problems = append(problems, fmt.Sprintf("%s (acknowledged as %s seq %d) missing", a.Payload, a.Stream, a.Seq))
		case len(seqs) > 1:
			problems = append(problems, fmt.Sprintf("%s stored %d times (seqs %v)", a.Payload, len(seqs), seqs))
		case sameSeq && seqs[0] != a.Seq:
			problems = append(problems, fmt.Sprintf("%s at seq %d, acknowledged as seq %d", a.Payload, seqs[0], a.Seq))
		}
	}
	return problems
}

// readPayloads reads every message of stream (up to its last sequence
// now) and maps each payload to the sequences holding it: with an ordered
// consumer for a limits stream, one get per sequence otherwise (an
// ordered consumer would disturb, or be refused by, a workqueue or
// interest stream).
func readPayloads(js jetstream.JetStream, stream string) (map[string][]uint64, error) {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := js.Stream(c, stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	info := s.CachedInfo()
	first, last := info.State.FirstSeq, info.State.LastSeq
	found := map[string][]uint64{}
	if info.State.Msgs == 0 {
		return found, nil
	}
	if info.Config.Retention != jetstream.LimitsPolicy {
		for seq := first; seq <= last; seq++ {
			m, err := s.GetMsg(c, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("stream %s seq %d: %w", stream, seq, err)
			}
			found[string(m.Data)] = append(found[string(m.Data)], seq)
		}
		return found, nil
	}
	cons, err := s.OrderedConsumer(c, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, err
	}
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			return nil, fmt.Errorf("stream %s: reading up to seq %d: %w", stream, last, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return nil, err
		}
		if md.Sequence.Stream > last {
			break
		}
		found[string(m.Data())] = append(found[string(m.Data())], md.Sequence.Stream)
		if md.Sequence.Stream >= last || md.NumPending == 0 {
			break
		}
	}
	return found, nil
}

// domain-pair HUBVAR LEAFVAR starts a hub server in JetStream domain "hub"
// and a leaf node server in domain "leaf" connected to it (stores under
// $WORK), waits until each answers the other's domain API, and sets
// HUBVAR and LEAFVAR to their URLs; both stop when the script ends.
func cmdDomainPair(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: domain-pair HUBVAR LEAFVAR")
	}
	work := ts.Getenv("WORK")
	hub, err := embedded.Start(embedded.Config{StoreDir: filepath.Join(work, ".domain-"+args[0]), Domain: "hub", LeafListen: true})
	ts.Check(err)
	ts.Defer(hub.Shutdown)
	leaf, err := embedded.Start(embedded.Config{StoreDir: filepath.Join(work, ".domain-"+args[1]), Domain: "leaf", LeafRemotes: []string{hub.LeafURL()}})
	ts.Check(err)
	ts.Defer(leaf.Shutdown)
	ts.Check(embedded.WaitDomains(hub, leaf, 30*time.Second))
	ts.Setenv(args[0], hub.URL())
	ts.Setenv(args[1], leaf.URL())
}
