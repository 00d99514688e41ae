// Command republishprobe measures what the server itself can do for a
// republish (bench/run replay): the physical limit of `jetctl replay STREAM
// --to 'copy.>'` on this machine, with no jetctl in the way.
//
//	republishprobe -read REPLAY -to copy. [-headers full|id|none] [-window 1024]
//	republishprobe -n 1000000 -size 128 -to copy. [-headers none]
//
// With -read it reads the stream with a pull consumer (no acks, pull
// requests of 4,096 messages, two outstanding, as jetctl's ordered reader
// does) and, in the callback that receives each message, publishes a copy
// to -to followed by the original subject, asynchronously: at most
// -window copies wait for their acknowledgement, which comes to a reply
// subject of the probe's own (no future per message, no JSON decode of a
// plain acknowledgement). Without -read it publishes -n messages of -size
// bytes the same way, to -to followed by "msgs": what `nats bench js pub
// async` does, with a leaner client.
//
// -headers full gives each copy the headers replay --to gives it: a
// Nats-Msg-Id <prefix>:<stream>:<seq>:<subject> and the four
// Jetctl-Source-* provenance headers; id only the message id; none no
// headers (the source's own headers are not copied: the benchmark's
// stream has none).
//
// It prints one line of JSON: messages, seconds, msgs/s, acknowledgement
// errors.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	read := flag.String("read", "", "stream to read and copy (default: publish -n synthetic messages)")
	to := flag.String("to", "copy.", "prefix of the copies' subjects")
	headers := flag.String("headers", "full", "headers of each copy: full (message id and provenance, as replay --to), id, none")
	window := flag.Int("window", 1024, "copies waiting for their acknowledgement at most")
	n := flag.Int("n", 1000000, "messages to publish without -read")
	size := flag.Int("size", 128, "payload size without -read")
	flag.Parse()
	switch *headers {
	case "full", "id", "none":
	default:
		fail(fmt.Errorf("-headers %q: want full, id or none", *headers))
	}
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url)
	fail(err)
	defer nc.Close()
	pr := &probe{nc: nc, to: *to, headers: *headers, slots: make(chan struct{}, *window), prefix: nats.NewInbox() + "."}
	ackSub, err := nc.Subscribe(pr.prefix+"*", pr.ack)
	fail(err)
	fail(ackSub.SetPendingLimits(-1, -1))

	start := time.Now()
	var count int
	if *read != "" {
		count, err = pr.copyStream(*read)
	} else {
		count, err = pr.publishN(*n, *size)
	}
	fail(err)
	// Wait for the last acknowledgements.
	for i := 0; i < cap(pr.slots); i++ {
		pr.slots <- struct{}{}
	}
	secs := time.Since(start).Seconds()
	out, _ := json.Marshal(map[string]any{
		"messages": count, "seconds": secs, "msgs_per_sec": float64(count) / secs,
		"ack_errors": pr.errs.Load(), "headers": *headers, "read": *read,
	})
	fmt.Println(string(out))
	if pr.errs.Load() > 0 {
		os.Exit(1)
	}
}

type probe struct {
	nc      *nats.Conn
	to      string
	headers string
	prefix  string
	slots   chan struct{}
	token   uint64
	errs    atomic.Int64
}

// ack frees a slot for each acknowledgement; an error counts.
func (pr *probe) ack(m *nats.Msg) {
	if !bytes.HasPrefix(m.Data, []byte(`{"stream":`)) || bytes.Contains(m.Data, []byte(`"error"`)) {
		if pr.errs.Add(1) == 1 {
			fmt.Fprintf(os.Stderr, "republishprobe: acknowledgement: %s %s\n", m.Header.Get("Status"), m.Data)
		}
	}
	<-pr.slots
}

// publish sends one copy once the window has room.
func (pr *probe) publish(subject string, hdr nats.Header, data []byte) error {
	pr.slots <- struct{}{}
	pr.token++
	return pr.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: pr.prefix + strconv.FormatUint(pr.token, 10), Header: hdr, Data: data})
}

// header builds a copy's headers, as replay --to does.
func (pr *probe) header(stream string, seq uint64, subject, target string, ts time.Time) nats.Header {
	if pr.headers == "none" {
		return nil
	}
	seqText := strconv.FormatUint(seq, 10)
	h := nats.Header{jetstream.MsgIDHeader: {"replay:" + stream + ":" + seqText + ":" + target}}
	if pr.headers == "full" {
		h["Jetctl-Source-Stream"] = []string{stream}
		h["Jetctl-Source-Seq"] = []string{seqText}
		h["Jetctl-Source-Subject"] = []string{subject}
		h["Jetctl-Source-Time"] = []string{ts.UTC().Format(time.RFC3339Nano)}
	}
	return h
}

func (pr *probe) publishN(n, size int) (int, error) {
	data := bytes.Repeat([]byte("x"), size)
	target := pr.to + "msgs"
	now := time.Now()
	for i := 1; i <= n; i++ {
		if err := pr.publish(target, pr.header("SYNTH", uint64(i), "msgs", target, now), data); err != nil {
			return i - 1, err
		}
	}
	return n, nil
}

// copyStream reads stream with a pull consumer and publishes a copy of
// each message from the callback that receives it.
func (pr *probe) copyStream(stream string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	js, err := jetstream.New(pr.nc)
	if err != nil {
		return 0, err
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	last := s.CachedInfo().State.LastSeq
	total := int(s.CachedInfo().State.Msgs)
	cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute, MemoryStorage: true, Replicas: 1,
	})
	if err != nil {
		return 0, err
	}
	name := cons.CachedInfo().Name
	defer func() { _ = s.DeleteConsumer(context.Background(), name) }()

	const batch = 4096
	inbox := nats.NewInbox()
	next := "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + name
	request := []byte(fmt.Sprintf(`{"batch":%d,"expires":%d}`, batch, int64(time.Hour)))
	var (
		mu       sync.Mutex
		got      int
		received int
		done     = make(chan error, 1)
	)
	pull := func() error { return pr.nc.PublishRequest(next, inbox, request) }
	sub, err := pr.nc.Subscribe(inbox, func(m *nats.Msg) {
		if m.Reply == "" {
			return // a status (408, 409)
		}
		meta, err := parseReply(m.Reply)
		if err != nil {
			done <- err
			return
		}
		target := pr.to + m.Subject
		if err := pr.publish(target, pr.header(stream, meta.seq, m.Subject, target, meta.ts), m.Data); err != nil {
			done <- err
			return
		}
		mu.Lock()
		got++
		received++
		again := received == batch
		if again {
			received = 0
		}
		finished := meta.seq >= last || got >= total
		mu.Unlock()
		switch {
		case finished:
			done <- nil
		case again:
			if err := pull(); err != nil {
				done <- err
			}
		}
	})
	if err != nil {
		return 0, err
	}
	defer sub.Unsubscribe()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return 0, err
	}
	if total == 0 {
		return 0, nil
	}
	// Two requests outstanding: a new one each time a batch is complete.
	if err := pull(); err != nil {
		return 0, err
	}
	if err := pull(); err != nil {
		return 0, err
	}
	select {
	case err := <-done:
		mu.Lock()
		defer mu.Unlock()
		return got, err
	case <-ctx.Done():
		return got, ctx.Err()
	}
}

type replyMeta struct {
	seq uint64
	ts  time.Time
}

// parseReply reads the stream sequence and time from a delivered
// message's reply subject: $JS.ACK.<stream>.<consumer>.<delivered>.<stream
// seq>.<consumer seq>.<time>.<pending> (or the form with a domain and an
// account hash).
func parseReply(reply string) (replyMeta, error) {
	tok := strings.Split(reply, ".")
	if len(tok) < 9 {
		return replyMeta{}, errors.New("bad reply subject " + reply)
	}
	if len(tok) >= 12 {
		tok = append(tok[:2:2], tok[4:]...)
	}
	seq, err := strconv.ParseUint(tok[5], 10, 64)
	if err != nil {
		return replyMeta{}, err
	}
	ns, err := strconv.ParseInt(tok[7], 10, 64)
	if err != nil {
		return replyMeta{}, err
	}
	return replyMeta{seq: seq, ts: time.Unix(0, ns)}, nil
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "republishprobe:", err)
		os.Exit(1)
	}
}
