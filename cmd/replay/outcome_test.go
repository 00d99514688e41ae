package replay

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/pkg/replay"
)

// TestOutcome pins the exit of a finished run to what the target
// acknowledged: copies not known to be stored never make a success.
func TestOutcome(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		republish bool
		sum       replay.Summary
		err       error
		code      int
		msg       string
	}{
		{name: "all stored", republish: true, sum: replay.Summary{Messages: 10}, code: exitcode.OK},
		{name: "all duplicates", republish: true, sum: replay.Summary{Duplicates: 10}, code: exitcode.OK},
		{name: "some failed", republish: true, sum: replay.Summary{Messages: 8, Failed: []uint64{9, 10}}, code: exitcode.Partial},
		{name: "all failed", republish: true, sum: replay.Summary{Failed: []uint64{1, 2}}, code: exitcode.Failure},
		{name: "some unconfirmed", republish: true, sum: replay.Summary{Messages: 8, Unconfirmed: 2}, code: exitcode.Partial,
			msg: "2 messages sent and not acknowledged: they may or may not be stored (a re-run with --checkpoint settles them)"},
		{name: "all unconfirmed", republish: true, sum: replay.Summary{Unconfirmed: 1}, code: exitcode.Failure,
			msg: "1 message sent and not acknowledged"},
		{name: "interrupted with unconfirmed", republish: true, sum: replay.Summary{Messages: 3, Unconfirmed: 2}, err: context.Canceled, code: exitcode.Interrupted},
		{name: "target failing", republish: true, sum: replay.Summary{Messages: 3}, err: replay.ErrTargetFailing, code: exitcode.Partial, msg: "stopped: "},
		{name: "error", republish: true, sum: replay.Summary{Messages: 3, Unconfirmed: 2}, err: boom, code: exitcode.Failure, msg: "boom"},
		{name: "dump, some failed", sum: replay.Summary{Messages: 0, Failed: []uint64{1}}, code: exitcode.Partial},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := outcome(tc.republish, tc.sum, tc.err)
			if got := exitcode.Of(err); got != tc.code {
				t.Fatalf("exit %d, want %d (err %v)", got, tc.code, err)
			}
			if tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("error %v, want it to say %q", err, tc.msg)
			}
		})
	}
}
