package consumer

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
)

func testFactory() *factory.Factory {
	return factory.New(&factory.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
}

// Bad durations and times are usage errors while the flags are parsed,
// before any command runs or connects.
func TestBadFlagValuesFailWhileParsing(t *testing.T) {
	f := testFactory()
	for _, c := range []struct {
		cmd  *cobra.Command
		args []string
		want string
	}{
		{newCmdLs(f), []string{"--behind", "soon"}, `invalid --behind "soon": `},
		{newCmdLs(f), []string{"--behind", "0"}, `invalid --behind "0": `},
		{newCmdLs(f), []string{"--inactive", "-1m"}, `invalid --inactive "-1m": `},
		{newCmdWatch(f), []string{"--interval", "0s"}, `invalid --interval "0s": `},
		{newCmdWatch(f), []string{"--behind", "soon"}, `invalid --behind "soon": `},
		{newCmdWait(f), []string{"--wait", "forever"}, `invalid --wait "forever": `},
		{newCmdWait(f), []string{"--wait", "0"}, `invalid --wait "0": `},
		{newCmdExplain(f), []string{"--idle", "soon"}, `invalid --idle "soon": `},
		{newCmdExplain(f), []string{"--idle", "0s"}, `invalid --idle "0s": `},
		{newCmdPause(f), []string{"--until", "tomorrow"}, `invalid --until "tomorrow": use an RFC 3339 time`},
		{newCmdPause(f), []string{"--for", "soon"}, `invalid --for "soon": `},
		{newCmdPause(f), []string{"--for", "0"}, `invalid --for "0": `},
		{newCmdRewind(f), []string{"--to-time", "yesterday"}, `invalid --to-time "yesterday": use an RFC 3339 time such as 2026-11-29T02:10:00Z`},
	} {
		err := c.cmd.ParseFlags(c.args)
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(exitcode.Message(err), c.want) {
			t.Errorf("%s %v: %v (exit %d), want exit 2 with %q", c.cmd.Name(), c.args, err, exitcode.Of(err), c.want)
		}
	}
}

func TestSelectThresholds(t *testing.T) {
	f := testFactory()
	for _, c := range []struct {
		args             []string
		behind, inactive time.Duration
	}{
		{nil, time.Minute, time.Minute},
		{[]string{"--behind", "2d", "--inactive", "90s"}, 48 * time.Hour, 90 * time.Second},
		// 0 means "any inactivity": the smallest positive threshold.
		{[]string{"--inactive", "0"}, time.Minute, time.Nanosecond},
	} {
		sf := &selectFlags{}
		cmd := &cobra.Command{Use: "ls"}
		sf.bind(cmd)
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		sel, err := sf.config(f, nil)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if th := sel.list.Thresholds; th.Behind != c.behind || th.Inactive != c.inactive {
			t.Errorf("%v: thresholds %+v, want behind %v inactive %v", c.args, th, c.behind, c.inactive)
		}
	}
}

func TestPauseUntil(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		args []string
		want time.Time
		err  string
	}{
		{nil, now.Add(pauseIndefinitely), ""},
		{[]string{"--for", "1d"}, now.Add(24 * time.Hour), ""},
		// Far ahead, but a time given: not "until resumed".
		{[]string{"--for", "1000000h"}, now.Add(1000000 * time.Hour), ""},
		{[]string{"--until", "2026-12-01T06:00:00Z"}, time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC), ""},
		{[]string{"--until", "2001-01-01T00:00:00Z"}, time.Time{}, "--until 2001-01-01T00:00:00Z is not in the future"},
		{[]string{"--for", "1h", "--until", "2099-01-01T00:00:00Z"}, time.Time{}, "--until and --for exclude each other"},
	} {
		o := &pauseOptions{}
		fs := pflag.NewFlagSet("pause", pflag.ContinueOnError)
		o.bind(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		got, indefinite, err := o.pauseUntil(now)
		if indefinite != (len(c.args) == 0) {
			t.Errorf("%v: indefinite %v", c.args, indefinite)
		}
		if c.err != "" {
			if exitcode.Of(err) != exitcode.Usage || err.Error() != c.err {
				t.Errorf("%v: %v, want exit 2 with %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || !got.Equal(c.want) {
			t.Errorf("%v: %v %v, want %v", c.args, got, err, c.want)
		}
	}
}
