package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ReplaceOptions tune Replace.
type ReplaceOptions struct {
	DryRun   bool
	Progress func(Progress)
}

// Estimate is what replacing a stream would move, for a plan.
type Estimate struct {
	Messages  uint64 `json:"messages"`
	Bytes     uint64 `json:"bytes"`
	Consumers int    `json:"consumers"`
	// CopyTime is Messages at the copy rate measured on the server (two
	// copies for a replacement under the same name).
	CopyTime time.Duration `json:"copy_time_ns"`
	// Outage is the expected write outage: the cutover's round trips at
	// the measured round-trip time, plus the tail written meanwhile.
	Outage time.Duration `json:"outage_ns"`
}

// Migratable says whether a replacement of old by new can keep the data,
// and if not, why.
func Migratable(old, new jetstream.StreamConfig) error {
	if old.Name != new.Name {
		return fmt.Errorf("the name changes")
	}
	if new.Mirror != nil || old.Mirror != nil {
		return fmt.Errorf("a mirror's data belongs to its origin")
	}
	if len(old.Sources) > 0 || len(new.Sources) > 0 {
		return errors.New("sourced streams are not migrated yet")
	}
	return nil
}

// TempName is the stream a replacement of name passes through.
func TempName(name string) string { return name + "_JETCTL_MIGRATE" }

// Replace replaces the stream cfg.Name by a stream of the same name with
// cfg, keeping every message, sequence, timestamp and consumer position:
// two hops through TempName(cfg.Name).
func Replace(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, opts ReplaceOptions) (*Summary, error) {
	return nil, errors.New("migrate.Replace: not built yet") // replaced by the engine in this branch
}

// EstimateReplace measures what replacing the stream name would move.
func EstimateReplace(ctx context.Context, js jetstream.JetStream, name string) (*Estimate, error) {
	return nil, errors.New("migrate.EstimateReplace: not built yet") // replaced by the engine in this branch
}
