package logctx

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	From(With(context.Background(), l)).Debug("reading", "of", "ORDERS")
	if !strings.Contains(buf.String(), "msg=reading of=ORDERS") {
		t.Errorf("logged %q", buf.String())
	}
	// Without one, nothing is written anywhere (not to slog's default).
	From(context.Background()).Error("dropped")
}
