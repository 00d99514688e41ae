package factory

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/pkg/units"
)

// The typed flag values below are the one place a command's durations
// (days and weeks included: 7d), rates (50/s) and times (RFC 3339) are
// parsed. A bad value is a usage error (exit 2) that cobra reports while
// parsing the flags, before anything connects; its message is one line,
// "invalid --NAME "VALUE": HINT".

// DefaultDurationHint is what a bad duration's error suggests.
const DefaultDurationHint = "use a duration such as 90s, 30m, 12h or 7d"

// DefaultTimeHint is what a bad time's error suggests.
const DefaultTimeHint = "use an RFC 3339 time such as 2025-06-01T12:00:00Z"

// DurationValue is a duration flag: Go durations plus days and weeks.
type DurationValue struct {
	p        *time.Duration
	name     string
	raw      string
	hint     string
	min      time.Duration
	positive bool
}

// DurationVar defines a duration flag that stores into p.
func DurationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) *DurationValue {
	*p = value
	v := &DurationValue{p: p, name: name, hint: DefaultDurationHint}
	fs.Var(v, name, usage)
	return v
}

// Positive refuses zero (and so makes zero mean "not given").
func (v *DurationValue) Positive() *DurationValue { v.positive = true; return v }

// AtLeast refuses durations shorter than min.
func (v *DurationValue) AtLeast(min time.Duration) *DurationValue { v.min = min; return v }

// Hint replaces what the error suggests, for messages scripts already match.
func (v *DurationValue) Hint(hint string) *DurationValue { v.hint = hint; return v }

// Set parses s.
func (v *DurationValue) Set(s string) error {
	d, err := units.ParseDuration(s)
	if err != nil || d < v.min || (v.positive && d <= 0) {
		return exitcode.UsageErrorf("invalid --%s %q: %s", v.name, s, v.hint)
	}
	*v.p, v.raw = d, s
	return nil
}

// String is the value as given, or the default as plan files write it.
func (v *DurationValue) String() string {
	switch {
	case v.raw != "":
		return v.raw
	case v.p == nil || *v.p == 0:
		return "0"
	}
	return units.FormatDuration(*v.p)
}

// Type names the value in --help.
func (v *DurationValue) Type() string { return "duration" }

// RateValue is a rate flag ("500", "500/s", "30/m", "2/h") stored per
// second; zero means no limit.
type RateValue struct {
	p    *float64
	name string
	raw  string
}

// RateVar defines a rate flag that stores into p (per second, 0 if unset).
func RateVar(fs *pflag.FlagSet, p *float64, name, usage string) *RateValue {
	v := &RateValue{p: p, name: name}
	fs.Var(v, name, usage)
	return v
}

// Set parses s.
func (v *RateValue) Set(s string) error {
	r, err := units.ParseRate(s)
	if err != nil {
		return exitcode.UsageErrorf("invalid --%s %q: use e.g. 50/s", v.name, s)
	}
	*v.p, v.raw = r, s
	return nil
}

// String is the value as given.
func (v *RateValue) String() string { return v.raw }

// Type names the value in --help.
func (v *RateValue) Type() string { return "rate" }

// TimeValue is an RFC 3339 time flag; the zero time means unset.
type TimeValue struct {
	p    *time.Time
	name string
	raw  string
	hint string
}

// TimeVar defines a time flag that stores into p.
func TimeVar(fs *pflag.FlagSet, p *time.Time, name, usage string) *TimeValue {
	v := &TimeValue{p: p, name: name, hint: DefaultTimeHint}
	fs.Var(v, name, usage)
	return v
}

// Hint replaces what the error suggests, for messages scripts already match.
func (v *TimeValue) Hint(hint string) *TimeValue { v.hint = hint; return v }

// Set parses s.
func (v *TimeValue) Set(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return exitcode.UsageErrorf("invalid --%s %q: %s", v.name, s, v.hint)
	}
	*v.p, v.raw = t, s
	return nil
}

// String is the value as given.
func (v *TimeValue) String() string { return v.raw }

// Type names the value in --help.
func (v *TimeValue) Type() string { return "time" }
