package natsconn

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestAsPermissionError(t *testing.T) {
	tests := []struct {
		err  error
		want PermissionError
	}{
		{fmt.Errorf("%w: %s", nats.ErrPermissionViolation, `Permissions Violation for Publish to "$JS.API.STREAM.CREATE.X"`), PermissionError{Op: "publish", Subject: "$JS.API.STREAM.CREATE.X"}},
		{fmt.Errorf("%w: %s", nats.ErrPermissionViolation, `Permissions Violation for Subscription to "_INBOX.>" using queue "q"`), PermissionError{Op: "subscribe", Subject: "_INBOX.>"}},
	}
	for _, tt := range tests {
		got, ok := AsPermissionError(tt.err)
		if !ok || *got != tt.want {
			t.Errorf("AsPermissionError(%v) = %+v, %v; want %+v", tt.err, got, ok, tt.want)
		}
	}
	if _, ok := AsPermissionError(errors.New("nats: timeout")); ok {
		t.Error("a timeout is not a permission error")
	}
	want := `permissions violation: this user may not publish to "$JS.API.INFO"`
	if got := (&PermissionError{Op: "publish", Subject: "$JS.API.INFO"}).Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
