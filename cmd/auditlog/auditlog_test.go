package auditlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/audit"
	"github.com/jetctl/jetctl/pkg/natsconn"
)

func newFactory(t *testing.T, conn natsconn.Options, args ...string) *factory.Factory {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no natscli context
	f := factory.New(&factory.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	conn.NoContext = true
	f.Conn = conn
	f.Command = "consumer pause"
	f.Args = args
	if _, err := f.Resolve(); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestOrigin(t *testing.T) {
	tests := []struct {
		name     string
		conn     natsconn.Options
		args     []string
		natsUser string
		want     []string
	}{
		{name: "user and password by flag",
			conn:     natsconn.Options{Server: "nats://127.0.0.1:4222", User: "ops", Password: "flag-secret"},
			args:     []string{"jetctl", "--user", "ops", "--password", "flag-secret", "consumer", "pause", "S", "C"},
			natsUser: "ops",
			want:     []string{"jetctl", "--user", "ops", "--password", audit.Mask, "consumer", "pause", "S", "C"}},
		{name: "a password from NATS_PASSWORD, typed elsewhere on the line too",
			conn:     natsconn.Options{Server: "nats://127.0.0.1:4222", User: "ops", Password: "env-secret"},
			args:     []string{"jetctl", "replay", "S", "--filter", `.data.p == "env-secret"`},
			natsUser: "ops",
			want:     []string{"jetctl", "replay", "S", "--filter", `.data.p == "` + audit.Mask + `"`}},
		{name: "user and password in the URL",
			conn:     natsconn.Options{Server: "nats://bob:url-secret@127.0.0.1:4222"},
			args:     []string{"jetctl", "-s", "nats://bob:url-secret@127.0.0.1:4222", "status"},
			natsUser: "bob",
			want:     []string{"jetctl", "-s", "nats://bob:" + audit.Mask + "@127.0.0.1:4222", "status"}},
		{name: "a token in the URL is no user name",
			conn:     natsconn.Options{Server: "nats://tok-secret@127.0.0.1:4222"},
			args:     []string{"jetctl", "-s", "nats://tok-secret@127.0.0.1:4222", "status"},
			natsUser: "",
			want:     []string{"jetctl", "-s", "nats://" + audit.Mask + "@127.0.0.1:4222", "status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, m := Origin(newFactory(t, tt.conn, tt.args...))
			if o.Command != "consumer pause" || o.NATSUser != tt.natsUser || o.Host == "" || o.Version == "" {
				t.Errorf("Origin = %+v", o)
			}
			if !slices.Equal(o.Args, tt.want) {
				t.Errorf("Args\n got %q\nwant %q", o.Args, tt.want)
			}
			// The connection's own secret is masked in any text (a summary,
			// an error), wherever it came from.
			for _, secret := range []string{"flag-secret", "env-secret", "url-secret", "tok-secret"} {
				if !strings.Contains(tt.conn.Password+tt.conn.Server, secret) {
					continue
				}
				if got := m.Text("error: " + secret); strings.Contains(got, secret) {
					t.Errorf("the masker leaves %q in %q", secret, got)
				}
			}
		})
	}
}

func TestMessage(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("nats: stream not found"), "stream not found"},
		{fmt.Errorf("stopped: %w", context.Canceled), "interrupted"},
		{exitcode.Silent(exitcode.Interrupted), "interrupted"},
		{exitcode.Silent(exitcode.Partial), "exit 4"},
		{exitcode.Newf(exitcode.Partial, "2 messages could not be redriven"), "2 messages could not be redriven"},
	}
	for _, tt := range tests {
		got := message(tt.err)
		if (got == nil) != (tt.want == "") || (got != nil && got.Error() != tt.want) {
			t.Errorf("message(%v) = %v, want %q", tt.err, got, tt.want)
		}
	}
}

// Without a connection, nothing is tried: a command that never connected
// changed nothing.
func TestWriteWithoutConnection(t *testing.T) {
	var stderr strings.Builder
	f := factory.New(&factory.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &stderr})
	Write(context.Background(), f, audit.Change{Stream: "S", Action: "pause"})
	if stderr.Len() > 0 {
		t.Errorf("stderr: %q", stderr.String())
	}
}
