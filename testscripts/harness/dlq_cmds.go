package harness

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// consumer-add STREAM NAME [--filter SUBJECT] [--max-deliver N]
// [--ack-wait D] [--max-ack-pending N] creates a durable pull consumer
// with explicit acks.
func cmdConsumerAdd(ts *testscript.TestScript, neg bool, args []string) {
	cfg := jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy}
	var pos []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--filter":
			cfg.FilterSubject = flagArg(ts, args, &i)
		case "--max-deliver":
			v, err := strconv.Atoi(flagArg(ts, args, &i))
			ts.Check(err)
			cfg.MaxDeliver = v
		case "--max-ack-pending":
			v, err := strconv.Atoi(flagArg(ts, args, &i))
			ts.Check(err)
			cfg.MaxAckPending = v
		case "--ack-wait":
			d, err := time.ParseDuration(flagArg(ts, args, &i))
			ts.Check(err)
			cfg.AckWait = d
		default:
			pos = append(pos, args[i])
		}
	}
	if neg || len(pos) != 2 {
		ts.Fatalf("usage: consumer-add STREAM NAME [--filter S] [--max-deliver N] [--ack-wait D] [--max-ack-pending N]")
	}
	cfg.Durable = pos[1]
	_, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	_, err := js.CreateConsumer(c, pos[0], cfg)
	ts.Check(err)
}

// worker STREAM CONSUMER [--fail REGEX] [--mode nak|term|expire]
// [--until-idle D] consumes from a durable consumer like an application
// would: messages whose payload matches REGEX fail (NAK at once, AckTerm
// with reason "bad payload", or no answer so that AckWait expires), the
// others are acknowledged. It stops when nothing came for D (default 1s)
// and prints "worker: acked N, failed M".
func cmdWorker(ts *testscript.TestScript, neg bool, args []string) {
	var fail *regexp.Regexp
	mode := "nak"
	idle := time.Second
	var pos []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "--fail":
			fail = regexp.MustCompile(flagArg(ts, args, &i))
		case "--mode":
			mode = flagArg(ts, args, &i)
		case "--until-idle":
			d, err := time.ParseDuration(flagArg(ts, args, &i))
			ts.Check(err)
			idle = d
		default:
			pos = append(pos, args[i])
		}
	}
	if neg || len(pos) != 2 || (mode != "nak" && mode != "term" && mode != "expire") {
		ts.Fatalf("usage: worker STREAM CONSUMER [--fail REGEX] [--mode nak|term|expire] [--until-idle D]")
	}
	nc, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	cons, err := js.Consumer(c, pos[0], pos[1])
	ts.Check(err)
	acked, failed := 0, 0
	last := time.Now()
	for time.Since(last) < idle {
		batch, err := cons.Fetch(100, jetstream.FetchMaxWait(200*time.Millisecond))
		ts.Check(err)
		for m := range batch.Messages() {
			last = time.Now()
			if fail != nil && fail.Match(m.Data()) {
				failed++
				switch mode {
				case "nak":
					ts.Check(m.Nak())
				case "term":
					ts.Check(m.TermWithReason("bad payload"))
				}
				continue
			}
			ts.Check(m.Ack())
			acked++
		}
	}
	ts.Check(nc.Flush())
	fmt.Fprintf(ts.Stdout(), "worker: acked %d, failed %d\n", acked, failed)
}

// flagArg returns the value of the flag at args[*i] and moves *i onto it;
// a flag without a value fails the script instead of panicking.
func flagArg(ts *testscript.TestScript, args []string, i *int) string {
	*i++
	if *i >= len(args) {
		ts.Fatalf("%s needs a value", args[*i-1])
	}
	return args[*i]
}
