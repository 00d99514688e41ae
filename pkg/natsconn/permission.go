package natsconn

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

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

// asyncErrors handles the errors the server reports outside any request:
// permission violations abort the command (see WithAbort); the rest are
// logged at debug level rather than printed raw by nats.go.
func asyncErrors(ctx context.Context) nats.Option {
	abort, _ := ctx.Value(abortKey{}).(func(error))
	return nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if perr, ok := AsPermissionError(err); ok && abort != nil {
			abort(perr)
			return
		}
		attrs := []any{"err", err}
		if sub != nil {
			attrs = append(attrs, "subject", sub.Subject)
		}
		logctx.From(ctx).Debug("nats: asynchronous error", attrs...)
	})
}
