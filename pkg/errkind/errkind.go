// Package errkind names the few kinds of failure that decide jetctl's exit
// code: not found, invalid input, busy, partial. A pkg/ sentinel is made
// with New, which gives it a kind and keeps its text, so that
// errors.Is(err, errkind.NotFound) holds for it and for whatever wraps it;
// cmd/exitcode maps the kinds to codes and needs no domain package.
//
// It is a leaf: it imports nothing of jetctl's.
package errkind

// Kind is a kind of failure. It is an error only so that errors.Is finds
// it in a chain; a command never returns a Kind itself.
type Kind struct{ name string }

func (k *Kind) Error() string { return k.name }

// The kinds. A kind says what went wrong even when the error wraps a
// cancellation or a server's error: a lost lease wraps the cancellation it
// caused, a held one the key it found.
var (
	// NotFound: what was asked for does not exist (a stream, a consumer,
	// a DLQ entry, a sequence, the data to rewind to).
	NotFound = &Kind{"not found"}
	// Invalid: input or a request that cannot work; nothing was changed.
	Invalid = &Kind{"invalid"}
	// Busy: another process holds the work's lease, or took it over
	// while this one worked; a failure, not an interruption.
	Busy = &Kind{"busy"}
	// Partial: the work finished, but some of it failed.
	Partial = &Kind{"partial"}
)

// All lists every kind, for tests that each has its exit code.
func All() []*Kind { return []*Kind{NotFound, Invalid, Busy, Partial} }

// New returns a sentinel error of kind k whose text is msg, and nothing
// more: each call is a distinct error, as with errors.New.
func New(k *Kind, msg string) error { return &sentinel{msg: msg, kind: k} }

type sentinel struct {
	msg  string
	kind *Kind
}

func (e *sentinel) Error() string { return e.msg }

// Unwrap makes the sentinel its kind for errors.Is.
func (e *sentinel) Unwrap() error { return e.kind }
