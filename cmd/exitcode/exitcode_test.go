package exitcode

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
	pkglease "github.com/jetctl/jetctl/pkg/lease"
	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/plan"
	"github.com/jetctl/jetctl/pkg/replay"
	"github.com/jetctl/jetctl/pkg/streamread"
)

func TestOf(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, OK},
		{errors.New("boom"), Failure},
		{UsageErrorf("bad"), Usage},
		{fmt.Errorf("stream %q: %w", "X", jetstream.ErrStreamNotFound), NotFound},
		{fmt.Errorf("bucket: %w", jetstream.ErrBucketNotFound), NotFound},
		{fmt.Errorf("%w: x", natsconn.ErrContext), Usage},
		{Silent(Partial), Partial},
		{fmt.Errorf("run: %w", context.Canceled), Interrupted},
		{&PluginExit{Code: 42}, 42},
		// pkg/'s typed errors, mapped here and nowhere else.
		{fmt.Errorf("stream %q: %w", "X", pkgdlq.ErrNotSetUp), NotFound},
		{fmt.Errorf("seq 9: %w", pkgdlq.ErrNoSuchEntry), NotFound},
		{fmt.Errorf("%w: --max", pkgdlq.ErrInvalid), Usage},
		{fmt.Errorf("%w: %w", pkglease.ErrLost, context.Canceled), Failure},
		{fmt.Errorf("%w: %w", pkglease.ErrLocked, jetstream.ErrKeyNotFound), Failure},
		{fmt.Errorf("reader: %w", streamread.ErrUnsupported), Usage},
		{fmt.Errorf("checkpoint: %w", replay.ErrInvalid), Usage},
		{fmt.Errorf("stream %q: %w", "X", &pkgconsumer.RefusedError{}), NotFound},
		{fmt.Errorf("--to-seq 9: %w", pkgconsumer.ErrBeyondEnd), NotFound},
		{fmt.Errorf("export: %w", &plan.NotFoundError{Label: `stream "X"`}), NotFound},
	}
	for _, tt := range tests {
		if got := Of(tt.err); got != tt.want {
			t.Errorf("Of(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestMessageIsOneLine(t *testing.T) {
	if got := Message(errors.New("nats: first\nsecond")); got != "first" {
		t.Errorf("Message = %q", got)
	}
	if got := Message(fmt.Errorf("stream %q: %w", "X", jetstream.ErrStreamNotFound)); got != `stream "X": stream not found` {
		t.Errorf("Message = %q", got)
	}
	if got := Message(Silent(Partial)); got != "" {
		t.Errorf("Message(Silent) = %q", got)
	}
}
