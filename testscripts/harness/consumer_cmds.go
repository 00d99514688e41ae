package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rogpeppe/go-internal/testscript"
)

// consumer-json STREAM CONFIG creates a consumer from its JSON config, as
// the server spells it: any deliver policy, push consumers, limits.
func cmdConsumerJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: consumer-json STREAM CONFIG")
	}
	var cfg jetstream.ConsumerConfig
	ts.Check(json.Unmarshal([]byte(args[1]), &cfg))
	_, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	_, err := js.CreateConsumer(c, args[0], cfg)
	if neg {
		if err == nil {
			ts.Fatalf("consumer-json: unexpected success")
		}
		return
	}
	ts.Check(err)
}

// consumer-next STREAM CONSUMER fetches the consumer's next message
// (waiting up to 10 s), acknowledges it and prints "next: seq N SUBJECT".
func cmdConsumerNext(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: consumer-next STREAM CONSUMER")
	}
	nc, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	cons, err := js.Consumer(c, args[0], args[1])
	ts.Check(err)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	ts.Check(err)
	for m := range batch.Messages() {
		meta, err := m.Metadata()
		ts.Check(err)
		ts.Check(m.DoubleAck(c))
		ts.Check(nc.Flush())
		fmt.Fprintf(ts.Stdout(), "next: seq %d %s\n", meta.Sequence.Stream, m.Subject())
		return
	}
	if err := batch.Error(); err != nil {
		ts.Fatalf("consumer-next: %v", err)
	}
	ts.Fatalf("consumer-next: no message within 10s")
}

// poison-worker STREAM CONSUMER REGEX N acknowledges every message except
// those whose payload matches REGEX, which it NAKs (redelivered at once),
// and stops once it has NAKed N times (at most 30 s). It prints
// "poison-worker: acked A, naked N".
func cmdPoisonWorker(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: poison-worker STREAM CONSUMER REGEX N")
	}
	re := regexp.MustCompile(args[2])
	want, err := strconv.Atoi(args[3])
	ts.Check(err)
	nc, js := jsFor(ts)
	c, cancel := ctx()
	defer cancel()
	cons, err := js.Consumer(c, args[0], args[1])
	ts.Check(err)
	acked, naked := 0, 0
	for naked < want {
		if c.Err() != nil {
			ts.Fatalf("poison-worker: NAKed %d times in 30s, want %d", naked, want)
		}
		batch, err := cons.Fetch(10, jetstream.FetchMaxWait(200*time.Millisecond))
		ts.Check(err)
		for m := range batch.Messages() {
			if re.Match(m.Data()) && naked < want {
				ts.Check(m.Nak())
				naked++
				continue
			}
			if re.Match(m.Data()) {
				continue // left pending: redelivered after AckWait
			}
			ts.Check(m.Ack())
			acked++
		}
	}
	ts.Check(nc.Flush())
	fmt.Fprintf(ts.Stdout(), "poison-worker: acked %d, naked %d\n", acked, naked)
}

// consumer-leader STREAM CONSUMER [current|lagging|none] waits (at most
// 60 s) until the consumer has a leader and, with current, every replica
// is current; with lagging, a replica is offline or behind; with none,
// until the cluster cannot answer for it (no leader): what a cluster
// script must see before it checks what jetctl reports.
func cmdConsumerLeader(ts *testscript.TestScript, neg bool, args []string) {
	mode := ""
	if len(args) == 3 {
		mode = args[2]
	}
	if neg || len(args) < 2 || len(args) > 3 || (mode != "" && mode != "current" && mode != "lagging" && mode != "none") {
		ts.Fatalf("usage: consumer-leader STREAM CONSUMER [current|lagging|none]")
	}
	_, js := jsFor(ts)
	deadline := time.Now().Add(60 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		cons, err := js.Consumer(c, args[0], args[1])
		cancel()
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			ts.Fatalf("consumer-leader: %v", err)
		}
		if err != nil {
			if mode == "none" {
				return
			}
			last = err.Error()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		ci := cons.CachedInfo()
		leader := ci.Cluster != nil && ci.Cluster.Leader != ""
		current := true
		if ci.Cluster != nil {
			for _, r := range ci.Cluster.Replicas {
				current = current && r.Current && !r.Offline
			}
		}
		switch {
		case mode == "" && leader,
			mode == "current" && leader && current,
			mode == "lagging" && leader && !current,
			mode == "none" && !leader:
			return
		}
		last = fmt.Sprintf("%+v", ci.Cluster)
		time.Sleep(100 * time.Millisecond)
	}
	ts.Fatalf("consumer-leader: %s > %s: not %q after 60s: %s", args[0], args[1], mode, last)
}
