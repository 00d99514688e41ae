package natsconn

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestRedactURL(t *testing.T) {
	tests := map[string]string{
		"nats://127.0.0.1:4222":                         "nats://127.0.0.1:4222",
		"nats://user:secret@host:4222":                  "nats://user:xxxxx@host:4222",
		"nats://s3cr3t-token@host:4222":                 "nats://xxxxx@host:4222",
		"nats://a:b@h1:4222, nats://h2:4222":            "nats://a:xxxxx@h1:4222,nats://h2:4222",
		"tls://user:p%40ss@example.com:4443,nats://h:1": "tls://user:xxxxx@example.com:4443,nats://h:1",
	}
	for in, want := range tests {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(RedactURL(in), "secret") {
			t.Errorf("RedactURL(%q) leaks the password", in)
		}
	}
}

func TestResolveWithoutContextUsesFlagsAndDefaults(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	r, err := Resolve(Options{User: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Server != "nats://127.0.0.1:4222" {
		t.Errorf("default server = %q", r.Server)
	}
	if r.Timeout != DefaultTimeout {
		t.Errorf("default timeout = %s", r.Timeout)
	}
	env := strings.Join(r.Env(), "\n")
	for _, want := range []string{"NATS_URL=nats://127.0.0.1:4222", "NATS_USER=u", "NATS_PASSWORD=p", "NATS_TIMEOUT=5s"} {
		if !strings.Contains(env, want) {
			t.Errorf("Env() lacks %s:\n%s", want, env)
		}
	}
	if strings.Contains(env, "NATS_CONTEXT=") {
		t.Errorf("Env() names a context although none was used:\n%s", env)
	}
}

func TestResolveUnknownContext(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	_, err := Resolve(Options{Context: "missing"})
	if !errors.Is(err, ErrContext) {
		t.Fatalf("err = %v, want ErrContext", err)
	}
}

func TestConnectRefusedNamesTheCause(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	r, err := Resolve(Options{Server: "nats://" + addr, NoContext: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Connect(context.Background(), "test")
	var ce *ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want ConnectError", err)
	}
	if want := "cannot connect to nats://" + addr + ": connection refused"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}
