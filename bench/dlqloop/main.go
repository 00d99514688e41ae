// Command dlqloop is the baseline of bench/dlq.sh: the sequential loop a
// script author would write with nats.go in one process to move dead
// messages into a DLQ stream, one message at a time: get the message from
// the stream leader (STREAM.MSG.GET), publish the copy to a per-message
// subject and wait for its acknowledgement, delete the source.
//
//	dlqloop -n 20000 -size 128
//
// It creates a workqueue stream LOOP (and LOOP_DLQ), fills it with n
// messages, times the loop over all of them and prints one line:
//
//	loop: 20000 msgs in 17.31 s: 1155 msgs/s
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	n := flag.Int("n", 20000, "messages to move")
	size := flag.Int("size", 128, "payload size in bytes")
	flag.Parse()
	if err := run(*n, *size); err != nil {
		fmt.Fprintln(os.Stderr, "dlqloop:", err)
		os.Exit(1)
	}
}

func run(n, size int) error {
	url := os.Getenv("NATS_URL")
	if url == "" {
		url = nats.DefaultURL
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, name := range []string{"LOOP", "LOOP_DLQ"} {
		_ = js.DeleteStream(ctx, name)
	}
	src, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOOP", Subjects: []string{"loop.>"}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage})
	if err != nil {
		return err
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOOP_DLQ", Subjects: []string{"loopdlq.>"}, Storage: jetstream.FileStorage}); err != nil {
		return err
	}
	payload := bytes.Repeat([]byte("x"), size)
	for i := 0; i < n; i++ {
		if _, err := js.PublishAsync("loop.run", payload); err != nil {
			return err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		return fmt.Errorf("filling LOOP: no acknowledgements")
	}
	info, err := src.Info(ctx)
	if err != nil {
		return err
	}
	first := info.State.FirstSeq

	start := time.Now()
	for seq := first; seq < first+uint64(n); seq++ {
		m, err := src.GetMsg(ctx, seq)
		if err != nil {
			return fmt.Errorf("get %d: %w", seq, err)
		}
		h := nats.Header{}
		for k, v := range m.Header {
			h[k] = v
		}
		h.Set("Dlq-Source-Seq", strconv.FormatUint(seq, 10))
		h.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
		copy := &nats.Msg{Subject: "loopdlq.LOOP." + strconv.FormatUint(seq, 10), Header: h, Data: m.Data}
		if _, err := js.PublishMsg(ctx, copy); err != nil {
			return fmt.Errorf("copy %d: %w", seq, err)
		}
		if err := src.DeleteMsg(ctx, seq); err != nil {
			return fmt.Errorf("delete %d: %w", seq, err)
		}
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("loop: %d msgs in %.2f s: %.0f msgs/s\n", n, secs, float64(n)/secs)
	return nil
}
