package factory

import (
	"errors"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
)

func TestDurationValue(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var wait, ttl time.Duration
	DurationVar(fs, &wait, "wait", 0, "").Positive()
	DurationVar(fs, &ttl, "lock-ttl", 30*time.Second, "").AtLeast(time.Second).Hint("use e.g. 30s (at least 1s)")
	if got := fs.Lookup("lock-ttl").DefValue; got != "30s" {
		t.Errorf("default shown as %q, want 30s", got)
	}
	if err := fs.Parse([]string{"--wait", "7d", "--lock-ttl", "1m"}); err != nil {
		t.Fatal(err)
	}
	if wait != 7*24*time.Hour || ttl != time.Minute {
		t.Errorf("wait %v ttl %v", wait, ttl)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--wait", "soon"}, `invalid --wait "soon": use a duration such as 90s, 30m, 12h or 7d`},
		{[]string{"--wait", "0"}, `invalid --wait "0": use a duration such as 90s, 30m, 12h or 7d`},
		{[]string{"--lock-ttl", "500ms"}, `invalid --lock-ttl "500ms": use e.g. 30s (at least 1s)`},
	} {
		err := fs.Parse(c.args)
		var coded *exitcode.Error
		if !errors.As(err, &coded) || coded.Code != exitcode.Usage || coded.Error() != c.msg {
			t.Errorf("%v: got %v, want %q", c.args, err, c.msg)
		}
	}
}

func TestRateAndTimeValues(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var rate float64
	var at time.Time
	RateVar(fs, &rate, "rate", "")
	TimeVar(fs, &at, "at", "")
	if fs.Lookup("rate").DefValue != "" || fs.Lookup("at").DefValue != "" {
		t.Error("unset rate and time show a default")
	}
	if err := fs.Parse([]string{"--rate", "30/m", "--at", "2026-01-02T03:04:05Z"}); err != nil {
		t.Fatal(err)
	}
	if rate != 0.5 || !at.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("rate %v at %v", rate, at)
	}
	for args, msg := range map[string]string{
		"--rate=fast":    `invalid --rate "fast": use e.g. 50/s`,
		"--at=yesterday": `invalid --at "yesterday": use an RFC 3339 time such as 2025-06-01T12:00:00Z`,
	} {
		var coded *exitcode.Error
		if err := fs.Parse([]string{args}); !errors.As(err, &coded) || coded.Code != exitcode.Usage || coded.Error() != msg {
			t.Errorf("%s: got %v, want %q", args, err, msg)
		}
	}
}
