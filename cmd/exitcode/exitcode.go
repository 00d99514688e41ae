// Package exitcode holds jetctl's exit codes and the one place where errors
// are mapped to them.
package exitcode

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/errkind"
)

// Exit codes, identical for every command (DESIGN §4).
const (
	OK          = 0
	Failure     = 1
	Usage       = 2
	NotFound    = 3
	Partial     = 4
	Timeout     = 5
	Changes     = 8
	Destructive = 9
	Interrupted = 130
)

// Table is the exit-code table shown by `jetctl help exit-codes` and in docs.
var Table = []struct {
	Code    int
	Meaning string
}{
	{OK, "success; plan in sync; condition met"},
	{Failure, "failure: server, network or I/O error"},
	{Usage, "usage or invalid input (flags, YAML, jq, durations); nothing was changed"},
	{NotFound, "not found: stream, consumer, bucket, key, sequence"},
	{Partial, "partial: finished, but some items failed; the output lists them"},
	{Timeout, "timed out waiting (--wait)"},
	{Changes, "plan --detailed-exitcode: changes pending"},
	{Destructive, "plan --detailed-exitcode: destructive changes pending; apply refusing them"},
	{Interrupted, "interrupted, after a clean stop"},
}

// TableText renders Table for terminals and help.
func TableText() string {
	var b strings.Builder
	b.WriteString("Exit codes (the same for every jetctl command):\n\n")
	for _, row := range Table {
		fmt.Fprintf(&b, "  %3d  %s\n", row.Code, row.Meaning)
	}
	b.WriteString("\nA plugin's exit code passes through unchanged.\n")
	return b.String()
}

// Error carries an exit code with an error. Message may be empty when the
// command already reported everything it had to say (e.g. a partial result).
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// New wraps err with an exit code.
func New(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Newf formats an error with an exit code.
func Newf(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Silent is an exit code with nothing more to print.
func Silent(code int) error { return &Error{Code: code} }

// UsageErrorf is an invalid-input error (exit 2).
func UsageErrorf(format string, args ...any) error { return Newf(Usage, format, args...) }

// PluginExit passes a plugin's own exit code through unchanged.
type PluginExit struct{ Code int }

func (e *PluginExit) Error() string { return "" }

// Of maps an error to its exit code. It is the only place that does.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var pe *PluginExit
	if errors.As(err, &pe) {
		return pe.Code
	}
	var ee *Error
	if errors.As(err, &ee) {
		return ee.Code
	}
	// pkg/'s own errors first, by their kind: it says what went wrong
	// even when they wrap a cancellation or a server's error.
	for _, k := range kinds {
		if errors.Is(err, k.kind) {
			return k.code
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Interrupted
	case errors.Is(err, jetstream.ErrStreamNotFound),
		errors.Is(err, jetstream.ErrConsumerNotFound),
		errors.Is(err, jetstream.ErrConsumerDoesNotExist),
		errors.Is(err, jetstream.ErrBucketNotFound),
		errors.Is(err, jetstream.ErrKeyNotFound),
		errors.Is(err, jetstream.ErrMsgNotFound),
		errors.Is(err, jetstream.ErrObjectNotFound):
		return NotFound
	}
	return Failure
}

// kinds are the kinds of pkg/'s errors (pkg/errkind) and their exit
// codes, in the order they are checked. pkg/ sentinels wrap a kind; the
// table of them is in sentinels_test.go.
var kinds = []struct {
	kind *errkind.Kind
	code int
}{
	{errkind.NotFound, NotFound},
	{errkind.Invalid, Usage},
	// A lease held by another process, or lost: a failure, though a lost
	// lease wraps the cancellation it caused and a held one the key read.
	{errkind.Busy, Failure},
	{errkind.Partial, Partial},
}

var apiErrorFraming = regexp.MustCompile(`API error: code=\d+ err_code=\d+ description=`)

// Message is the one line printed for err, or "" when there is nothing to
// add. JetStream API errors lose their "nats: API error: code=…" framing.
func Message(err error) string {
	if err == nil {
		return ""
	}
	var pe *PluginExit
	if errors.As(err, &pe) {
		return ""
	}
	msg := err.Error()
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return "JetStream is not enabled for this account"
	}
	msg = strings.ReplaceAll(msg, "nats: ", "")
	// JetStream API errors: keep the description, not the framing.
	msg = apiErrorFraming.ReplaceAllString(msg, "")
	// Keep the output to one line whatever the error carried.
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
