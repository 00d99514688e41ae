package natsconn

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/jetctl/jetctl/pkg/logctx"
)

// PermissionError is the server refusing this user a publish or a
// subscription: the command cannot go on, and waiting for a reply that
// will never come only hides why.
type PermissionError struct {
	// Op is "publish" or "subscribe".
	Op      string
	Subject string
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("permissions violation: this user may not %s to %q", e.Op, e.Subject)
}

var permissionRe = regexp.MustCompile(`(?i)permissions violation for (publish|subscription) to "([^"]+)"`)

// AsPermissionError turns nats.go's permission violation into a
// PermissionError naming the refused subject; ok is false for other errors.
func AsPermissionError(err error) (*PermissionError, bool) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil, false
	}
	m := permissionRe.FindStringSubmatch(err.Error())
	if m == nil {
		return &PermissionError{Op: "use", Subject: "a subject"}, true
	}
	op := "publish"
	if strings.EqualFold(m[1], "subscription") {
		op = "subscribe"
	}
	return &PermissionError{Op: op, Subject: m[2]}, true
}

type abortKey struct{}

// WithAbort returns ctx carrying abort: a connection made with Connect
// under it calls abort with a *PermissionError when the server refuses a
// publish or subscription, so that the command stops at once with that
// error instead of waiting for replies that will never come.
func WithAbort(ctx context.Context, abort func(error)) context.Context {
	return context.WithValue(ctx, abortKey{}, abort)
}

// Interrupted says whether ctx ended for another reason than a
// permission violation (see WithAbort): a signal, the caller.
func Interrupted(ctx context.Context) bool {
	var perr *PermissionError
	return ctx.Err() != nil && !errors.As(context.Cause(ctx), &perr)
}

// tolerations holds, per connection, the subjects whose refusal does not
// abort the command (see Tolerate).
var tolerations sync.Map // *nats.Conn → *tolerated

type tolerated struct {
	mu   sync.Mutex
	list []*toleration
}

type toleration struct {
	match   func(subject string) bool
	refused func(*PermissionError)
}

// Tolerate makes the server refusing a publish on nc to a subject that
// match accepts call refused instead of aborting the command (see
// WithAbort): for the reads a command can do without, such as the lag of
// `consumer ls`, which a user allowed to list consumers but not to get
// messages cannot read. stop ends the toleration.
func Tolerate(nc *nats.Conn, match func(subject string) bool, refused func(*PermissionError)) (stop func()) {
	v, _ := tolerations.LoadOrStore(nc, &tolerated{})
	t := v.(*tolerated)
	tol := &toleration{match: match, refused: refused}
	t.mu.Lock()
	t.list = append(t.list, tol)
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		for i, x := range t.list {
			if x == tol {
				t.list = append(t.list[:i], t.list[i+1:]...)
				break
			}
		}
	}
}

// tolerate reports whether a toleration of nc took the refusal.
func tolerate(nc *nats.Conn, perr *PermissionError) bool {
	v, ok := tolerations.Load(nc)
	if !ok || perr.Op != "publish" {
		return false
	}
	t := v.(*tolerated)
	t.mu.Lock()
	var took []*toleration
	for _, x := range t.list {
		if x.match(perr.Subject) {
			took = append(took, x)
		}
	}
	t.mu.Unlock()
	for _, x := range took {
		x.refused(perr)
	}
	return len(took) > 0
}

// refusals holds the Refusal of each open connection made by Connect.
var refusals sync.Map // *nats.Conn → *Refusal

// Refusal is the first refusal of a publish or subscription on a
// connection that no toleration took (see Tolerate): the one that aborts
// the command (see WithAbort). Code waiting on the connection for replies
// (acknowledgements, say) wakes on Done rather than waiting out a timeout
// for replies that will never come.
type Refusal struct {
	once sync.Once
	done chan struct{}
	err  *PermissionError
}

func newRefusal() *Refusal { return &Refusal{done: make(chan struct{})} }

func (r *Refusal) refuse(perr *PermissionError) {
	r.once.Do(func() {
		r.err = perr
		close(r.done)
	})
}

// RefusalOf returns nc's Refusal; nil (never refused: Done is nil) for a
// connection not made by Connect, or closed.
func RefusalOf(nc *nats.Conn) *Refusal {
	r, _ := refusals.Load(nc)
	ref, _ := r.(*Refusal)
	return ref
}

// Done is closed once the server refused the connection something.
func (r *Refusal) Done() <-chan struct{} {
	if r == nil {
		return nil
	}
	return r.done
}

// Err is the refusal once Done is closed, else nil.
func (r *Refusal) Err() *PermissionError {
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
		return r.err
	default:
		return nil
	}
}

// handlers are the connection handlers natsconn installs on every
// connection it makes (and no other code sets: see
// TestOnlyNatsconnSetsHandlers): asynchronous errors (see asyncErrors),
// and the closed handler that forgets the connection's Refusal.
func handlers(ctx context.Context, ref *Refusal) []nats.Option {
	return []nats.Option{
		asyncErrors(ctx, ref),
		nats.ClosedHandler(func(nc *nats.Conn) {
			refusals.Delete(nc)
			tolerations.Delete(nc)
		}),
	}
}

// asyncErrors handles the errors the server reports outside any request:
// permission violations are the connection's Refusal and abort the
// command (see WithAbort) unless a toleration takes them (see Tolerate);
// the rest (a slow consumer, the client's "write: broken pipe" when the
// server goes away) go to the command's logger (logctx, which --verbose
// turns up) at debug level rather than printed raw by nats.go.
func asyncErrors(ctx context.Context, ref *Refusal) nats.Option {
	abort, _ := ctx.Value(abortKey{}).(func(error))
	return nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
		if perr, ok := AsPermissionError(err); ok {
			if tolerate(nc, perr) {
				return
			}
			ref.refuse(perr)
			if abort != nil {
				abort(perr)
				return
			}
		}
		attrs := []any{"err", err}
		if sub != nil {
			attrs = append(attrs, "subject", sub.Subject)
		}
		logctx.From(ctx).Debug("nats: asynchronous error", attrs...)
	})
}
