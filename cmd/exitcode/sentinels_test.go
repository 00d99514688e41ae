package exitcode

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
	pkgevents "github.com/jetctl/jetctl/pkg/events"
	pkglease "github.com/jetctl/jetctl/pkg/lease"
	pkgmigrate "github.com/jetctl/jetctl/pkg/migrate"
	"github.com/jetctl/jetctl/pkg/natsconn"
	"github.com/jetctl/jetctl/pkg/plan"
	"github.com/jetctl/jetctl/pkg/replay"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// TestSentinelCodes pins every pkg/ error with an exit code of its own:
// its text (which users and testscripts see) and its code, alone, wrapped,
// and wrapping what would otherwise decide the code (a cancellation, a
// server's not-found). A sentinel that loses its kind fails here.
func TestSentinelCodes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		text string
		want int
	}{
		{"dlq.ErrNotSetUp", pkgdlq.ErrNotSetUp, "dlq is not set up", NotFound},
		{"dlq.ErrNoSuchEntry", pkgdlq.ErrNoSuchEntry, "no such DLQ message", NotFound},
		{"dlq.ErrInvalid", pkgdlq.ErrInvalid, "invalid", Usage},
		{"dlq.ErrLocked", pkgdlq.ErrLocked, "locked", Failure},
		{"lease.ErrLocked", pkglease.ErrLocked, "locked", Failure},
		{"lease.ErrLost", pkglease.ErrLost, "lost its lease", Failure},
		{"streamread.ErrUnsupported", streamread.ErrUnsupported, "unsupported", Usage},
		{"replay.ErrInvalid", replay.ErrInvalid, "invalid replay", Usage},
		{"consumer.ErrDataGone", pkgconsumer.ErrDataGone, "the messages to rewind to are gone", NotFound},
		{"consumer.ErrBeyondEnd", pkgconsumer.ErrBeyondEnd, "sequence past the end of the stream", NotFound},
		{"consumer.ErrNoSuchGroup", pkgconsumer.ErrNoSuchGroup, "no such priority group", NotFound},
		{"consumer.ErrInvalid", pkgconsumer.ErrInvalid, "invalid", Usage},
		{"migrate.ErrVerify", pkgmigrate.ErrVerify, "verification failed", Partial},
		{"migrate.ErrInvalid", pkgmigrate.ErrInvalid, "invalid migration", Usage},
		{"migrate.ErrTargetExists", pkgmigrate.ErrTargetExists, "target stream exists", Usage},
		{"migrate.ErrUnreachable", pkgmigrate.ErrUnreachable, "the target's server cannot reach the source", Usage},
		{"migrate.ErrBusy", pkgmigrate.ErrBusy, "another migration of the stream is running", Failure},
		{"natsconn.ErrContext", natsconn.ErrContext, "nats context", Usage},
		{"events.ErrInvalid", pkgevents.ErrInvalid, "invalid", Usage},
		{"events.ErrNotFound", pkgevents.ErrNotFound, "not found", NotFound},
		{"events.ErrNoRecorder", pkgevents.ErrNoRecorder, "no event recorder in this account: run jetctl events record", NotFound},
		// Error types.
		{"consumer.RefusedError", &pkgconsumer.RefusedError{Stream: "S", Consumer: "C", Reason: "gone", EarliestSeq: 7},
			`stream "S": consumer "C": refusing to rewind: gone; the earliest it can start from is seq 7 (--to-seq 7, or --to-start); nothing was changed`, NotFound},
		{"migrate.VerifyError", &pkgmigrate.VerifyError{Source: "A", Target: "B", What: "count"},
			"verification failed: B differs from A: count", Partial},
		{"plan.NotFoundError", &plan.NotFoundError{Label: `stream "X"`}, `stream "X" not found`, NotFound},
		{"natsconn.SettingError", &natsconn.SettingError{Setting: `nkey file "/x/user.nk"`, Err: errors.New("no such file")},
			`nkey file "/x/user.nk": no such file`, Usage},
		{"dlq.RefusedRedrive", &pkgdlq.RefusedRedrive{Stream: "S"},
			`refusing to redrive: stream "S":  (their filters match the original subjects); nothing was sent. ` +
				`Redrive through a retry subject only the consumer that failed receives (jetctl dlq setup --stream S  --retry-subject), or to every consumer with --all-consumers`, Usage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.text {
				t.Errorf("text = %q, want %q", got, tt.text)
			}
			if got := Of(tt.err); got != tt.want {
				t.Errorf("Of = %d, want %d", got, tt.want)
			}
			if got := Of(fmt.Errorf("stream %q: %w", "X", tt.err)); got != tt.want {
				t.Errorf("Of(wrapped) = %d, want %d", got, tt.want)
			}
			if tt.want == Failure {
				return // a plain failure yields to what it wraps
			}
			for _, other := range []error{context.Canceled, jetstream.ErrKeyNotFound, errors.New("boom")} {
				if got := Of(fmt.Errorf("%w: %w", tt.err, other)); got != tt.want {
					t.Errorf("Of(wrapping %v) = %d, want %d", other, got, tt.want)
				}
			}
		})
	}
}

// TestLeaseErrorsAreFailures: a lease error is a failure (exit 1) even
// though a lost lease wraps the cancellation it caused and a held one may
// wrap the key it read.
func TestLeaseErrorsAreFailures(t *testing.T) {
	for _, err := range []error{pkglease.ErrLocked, pkglease.ErrLost, pkgmigrate.ErrBusy} {
		for _, other := range []error{context.Canceled, jetstream.ErrKeyNotFound} {
			if got := Of(fmt.Errorf("%w: %w", err, other)); got != Failure {
				t.Errorf("Of(%v wrapping %v) = %d, want %d", err, other, got, Failure)
			}
		}
	}
}
