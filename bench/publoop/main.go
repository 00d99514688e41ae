// Command publoop is bench/migrate.sh's live writer: it publishes to a
// stream's subjects one message at a time, retrying each until the server
// acknowledges it, while a migration cuts the stream over; then it reports
// the longest time between two acknowledgements (the write outage as a
// client sees it) and whether every acknowledged message is in the stream
// that holds the subjects at the end.
//
//	publoop -subject src.live -verify SRC2 [-interval 1ms] [-s URL]
//
// It publishes until SIGTERM or SIGINT (or -duration), then reads -verify
// and prints one JSON object on stdout. Each message has a Nats-Msg-Id, so
// a retry of a publish that was stored but whose acknowledgement was lost
// is not stored twice. Exit status 1 when an acknowledged message is
// missing or differs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/streamread"
)

type ack struct {
	id     int
	stream string
	seq    uint64
}

type report struct {
	Subject   string         `json:"subject"`
	Published int            `json:"published"`
	AckedBy   map[string]int `json:"acked_by"`
	// Retries is how many publishes failed and were retried, by error.
	Retries   map[string]int `json:"retries"`
	FirstAck  time.Time      `json:"first_ack"`
	LastAck   time.Time      `json:"last_ack"`
	MaxGapNS  time.Duration  `json:"max_gap_ns"`
	MaxGapMS  float64        `json:"max_gap_ms"`
	MaxGapEnd time.Time      `json:"max_gap_end"`
	// GapsOver100ms lists the gaps between acknowledgements longer than
	// 100 ms, in milliseconds.
	GapsOver100ms []float64 `json:"gaps_over_100ms_ms"`
	Verify        string    `json:"verify_stream"`
	Found         int       `json:"found"`
	Missing       int       `json:"missing"`
	Mismatched    int       `json:"mismatched"`
	FirstProblem  string    `json:"first_problem,omitempty"`
	// Switches are the moves of the subjects from one stream to another,
	// each with the gap between the last acknowledgement from the old
	// stream and the first from the new one: the write outage a client saw.
	Switches []switchGap `json:"switches"`
	// SwitchGapNS is the sum of the switches' gaps.
	SwitchGapNS time.Duration `json:"switch_gap_ns"`
}

type switchGap struct {
	From  string    `json:"from"`
	To    string    `json:"to"`
	GapMS float64   `json:"gap_ms"`
	At    time.Time `json:"at"`
	// Retries is how many publishes failed in the gap.
	Retries int `json:"retries"`
}

func main() {
	server := flag.String("s", os.Getenv("NATS_URL"), "server URL")
	subject := flag.String("subject", "", "subject to publish to (a message's id is its payload and Nats-Msg-Id)")
	verify := flag.String("verify", "", "stream that must hold every acknowledged message at the end")
	interval := flag.Duration("interval", time.Millisecond, "pause after each acknowledged message")
	timeout := flag.Duration("timeout", 2*time.Second, "how long one publish waits for its acknowledgement")
	duration := flag.Duration("duration", 0, "stop after this long (0: at SIGTERM or SIGINT)")
	flag.Parse()
	if *subject == "" || *verify == "" {
		fmt.Fprintln(os.Stderr, "publoop: -subject and -verify are needed")
		os.Exit(2)
	}
	rep, err := run(*server, *subject, *verify, *interval, *timeout, *duration)
	if err != nil {
		fmt.Fprintln(os.Stderr, "publoop:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
	if rep.Missing > 0 || rep.Mismatched > 0 {
		os.Exit(1)
	}
}

func run(server, subject, verify string, interval, timeout, duration time.Duration) (*report, error) {
	nc, err := nats.Connect(server, nats.Name("jetctl-bench-publoop"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	stop, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if duration > 0 {
		var c context.CancelFunc
		stop, c = context.WithTimeout(stop, duration)
		defer c()
	}
	rep := &report{Subject: subject, AckedBy: map[string]int{}, Retries: map[string]int{}, Verify: verify, GapsOver100ms: []float64{}, Switches: []switchGap{}}
	var acks []ack
	var last time.Time
	lastStream, failed := "", 0
	for id := 1; stop.Err() == nil; id++ {
		data := []byte(strconv.Itoa(id))
		msgID := "publoop-" + strconv.Itoa(id)
		for stop.Err() == nil {
			ctx, c := context.WithTimeout(context.Background(), timeout)
			// No retries in the library (it waits 250 ms before one): the
			// loop retries at once, so the gaps are the server's.
			pa, err := js.Publish(ctx, subject, data, jetstream.WithMsgID(msgID), jetstream.WithRetryAttempts(0))
			c()
			if err != nil {
				rep.Retries[errName(err)]++
				failed++
				time.Sleep(time.Millisecond)
				continue
			}
			now := time.Now()
			if !last.IsZero() {
				if gap := now.Sub(last); gap > rep.MaxGapNS {
					rep.MaxGapNS, rep.MaxGapEnd = gap, now
				}
				if gap := now.Sub(last); gap > 100*time.Millisecond {
					rep.GapsOver100ms = append(rep.GapsOver100ms, float64(gap.Microseconds())/1000)
				}
			} else {
				rep.FirstAck = now
			}
			if lastStream != "" && pa.Stream != lastStream {
				gap := now.Sub(last)
				rep.Switches = append(rep.Switches, switchGap{From: lastStream, To: pa.Stream, GapMS: float64(gap.Microseconds()) / 1000, At: now, Retries: failed})
				rep.SwitchGapNS += gap
			}
			last, lastStream, failed = now, pa.Stream, 0
			rep.AckedBy[pa.Stream]++
			acks = append(acks, ack{id: id, stream: pa.Stream, seq: pa.Sequence})
			rep.Published = id
			break
		}
		if interval > 0 {
			time.Sleep(interval)
		}
	}
	rep.LastAck = last
	rep.MaxGapMS = float64(rep.MaxGapNS.Microseconds()) / 1000
	if err := check(js, verify, subject, acks, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

func errName(err error) string {
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return "no stream"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return "timeout"
	}
	return err.Error()
}

// check reads subject's messages in stream verify, from the first
// acknowledged sequence (with jetctl's reader: a consumer on a limits
// stream, direct gets on a workqueue), and looks for every acknowledged
// message at its sequence (a migration keeps sequences).
func check(js jetstream.JetStream, verify, subject string, acks []ack, rep *report) error {
	if len(acks) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := streamread.Resolve(ctx, js, streamread.Config{Stream: verify, FromSeq: acks[0].seq, Subjects: []string{subject}})
	if err != nil {
		return fmt.Errorf("reading %q: %w", verify, err)
	}
	got := map[uint64]string{}
	err = streamread.Read(ctx, js, r, func(m *envelope.Message) error {
		got[m.Seq] = string(m.Data)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading %q: %w", verify, err)
	}
	for _, a := range acks {
		data, ok := got[a.seq]
		switch {
		case !ok:
			rep.Missing++
			if rep.FirstProblem == "" {
				rep.FirstProblem = fmt.Sprintf("message %d (acknowledged by %s as seq %d) is not in %s", a.id, a.stream, a.seq, verify)
			}
		case data != strconv.Itoa(a.id):
			rep.Mismatched++
			if rep.FirstProblem == "" {
				rep.FirstProblem = fmt.Sprintf("seq %d of %s holds %q, acknowledged as message %d", a.seq, verify, data, a.id)
			}
		default:
			rep.Found++
		}
	}
	return nil
}
