// Command replace is bench/migrate.sh's driver of migrate.Replace (what
// `jetctl apply --migrate` runs): it replaces a stream by one of the same
// name with a change the server cannot make in place, and prints
// migrate.Replace's summary as JSON with the wall-clock time of the call.
//
//	replace -stream SRC -change workqueue|memory|file|limits [-s URL]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/migrate"
)

func main() {
	server := flag.String("s", os.Getenv("NATS_URL"), "server URL")
	stream := flag.String("stream", "", "the stream to replace")
	change := flag.String("change", "workqueue", "what changes: workqueue, limits (retention), memory, file (storage)")
	flag.Parse()
	if err := run(*server, *stream, *change); err != nil {
		fmt.Fprintln(os.Stderr, "replace:", err)
		os.Exit(1)
	}
}

func run(server, stream, change string) error {
	if stream == "" {
		return fmt.Errorf("-stream is needed")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	nc, err := nats.Connect(server, nats.Name("jetctl-bench-replace"))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	cfg := s.CachedInfo().Config
	switch change {
	case "workqueue":
		cfg.Retention = jetstream.WorkQueuePolicy
	case "limits":
		cfg.Retention = jetstream.LimitsPolicy
	case "memory":
		cfg.Storage = jetstream.MemoryStorage
	case "file":
		cfg.Storage = jetstream.FileStorage
	default:
		return fmt.Errorf("-change %q: want workqueue, limits, memory or file", change)
	}
	t0 := time.Now()
	sum, err := migrate.Replace(ctx, js, cfg, migrate.ReplaceOptions{})
	wall := time.Since(t0)
	if err != nil {
		return err
	}
	out := struct {
		*migrate.Summary
		Change string        `json:"change"`
		WallNS time.Duration `json:"wall_ns"`
	}{sum, change, wall}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
