package jsapi

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestValidateStreamName(t *testing.T) {
	for _, ok := range []string{"ORDERS", "orders-v2", "DLQ_ORDERS", "ÜBER", "a"} {
		if err := ValidateStreamName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'A'
	}
	for _, bad := range []string{"", "OR DERS", "ORD*", "orders.>", "a.b", "a/b", `a\b`, "tab\there", string(long)} {
		if err := ValidateStreamName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestAPIPrefix(t *testing.T) {
	for _, c := range []struct {
		o    jetstream.JetStreamOptions
		want string
	}{
		{jetstream.JetStreamOptions{}, "$JS.API."},
		{jetstream.JetStreamOptions{Domain: "hub"}, "$JS.hub.API."},
		{jetstream.JetStreamOptions{APIPrefix: "$JS.other.API"}, "$JS.other.API."},
		{jetstream.JetStreamOptions{APIPrefix: "x."}, "x."},
	} {
		if got := APIPrefix(c.o); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}

func TestDeleted(t *testing.T) {
	for _, c := range []struct {
		reply string
		want  bool
	}{
		{`{"type":"io.nats.jetstream.api.v1.stream_msg_delete_response","success":true}`, true},
		{`{"type":"io.nats.jetstream.api.v1.stream_msg_delete_response","success":false}`, false},
		{`{"type":"io.nats.jetstream.api.v1.stream_msg_delete_response","error":{"code":400,"err_code":10057,"description":"no message found"},"success":true}`, false},
		{`{"type":"io.nats.jetstream.api.v1.stream_msg_delete_response","error":{"code":404,"err_code":10059,"description":"stream not found"}}`, false},
		{``, false},
	} {
		if got := deleted([]byte(c.reply)); got != c.want {
			t.Errorf("%s: %v, want %v", c.reply, got, c.want)
		}
	}
}

// WithTimeout bounds a request by the client's timeout even when the
// caller's context has a deadline further away (a --wait, a test's), and
// keeps a caller's deadline that comes first.
func TestWithTimeoutKeepsTheEarlierDeadline(t *testing.T) {
	c := &Client{Timeout: time.Second}
	far, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ctx, done := c.WithTimeout(far)
	defer done()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > c.Timeout {
		t.Errorf("with a deadline an hour away: deadline in %s, want at most %s", time.Until(d), c.Timeout)
	}
	near, cancelNear := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancelNear()
	want, _ := near.Deadline()
	ctx, done = c.WithTimeout(near)
	defer done()
	if d, _ := ctx.Deadline(); !d.Equal(want) {
		t.Errorf("with a deadline a millisecond away: %v, want %v", d, want)
	}
}
