// Package logctx carries a command's logger in its context: pkg/ code logs
// what it does (at debug level) to the logger its caller passed in, not to
// a process-wide default that any package could change.
package logctx

import (
	"context"
	"log/slog"
)

type key struct{}

var discard = slog.New(slog.DiscardHandler)

// With returns ctx carrying l.
func With(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, key{}, l)
}

// From returns the logger ctx carries, or one that drops everything.
func From(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(key{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return discard
}
