package consumer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/units"
)

// Thresholds are the limits the health rules use. A zero field takes its
// default (DefaultThresholds); a warning level left at its default never
// sits above a critical level that is set (it comes down to it).
type Thresholds struct {
	// Behind is the lag (age of the oldest undelivered message) from which
	// a consumer is behind. Default 1m.
	Behind time.Duration
	// Inactive is how long without activity (no delivery, no ack, since
	// creation at the earliest) makes a consumer with no waiting pull
	// stalled (messages wait) or idle (nothing pending). Default 1m.
	Inactive time.Duration
	// PoisonRedeliveries: this many redeliveries since the ack floor last
	// moved make a poison message (or a consumer acknowledging nothing).
	// Default 3.
	PoisonRedeliveries uint64
	// DeadScanLimit bounds how many stored messages are looked at to count
	// those past MaxDeliver. Default 1000.
	DeadScanLimit int

	// BehindCritical, when set, makes a lag of at least this long critical
	// (the behind finding's severity); Behind is its warning level. Zero:
	// a lag alone is never critical.
	BehindCritical time.Duration
	// Stall and StallCritical: work is pending (unprocessed or awaiting an
	// ack, not paused) and the ack floor has not moved (no ack since this
	// long ago, or since the consumer was created) for this long: the
	// ack-floor-frozen finding, a warning from Stall, critical from
	// StallCritical. A consumer with nothing pending is never stalled.
	// Defaults 5m and 15m (DefaultThresholds).
	Stall, StallCritical time.Duration
	// DeadLettersCritical, when set, makes this many dead letters waiting
	// critical (any dead letter is a warning).
	DeadLettersCritical int64
}

// MetaThresholdPrefix prefixes the consumer metadata keys that set a
// consumer's own thresholds, in every command that judges its health:
// io.jetctl.check.lag-warning, lag-critical, stall-warning,
// stall-critical (durations) and dead-letters-critical (a count). A
// threshold the command was given as a flag (ListConfig.Fixed) wins.
const MetaThresholdPrefix = "io.jetctl.check."

// The threshold names: the metadata key after MetaThresholdPrefix, and
// check's flag without --.
const (
	ThresholdLagWarning          = "lag-warning"
	ThresholdLagCritical         = "lag-critical"
	ThresholdStallWarning        = "stall-warning"
	ThresholdStallCritical       = "stall-critical"
	ThresholdDeadLettersCritical = "dead-letters-critical"
)

// ThresholdNames are the thresholds a consumer's metadata can set, in the
// order they are reported.
var ThresholdNames = []string{ThresholdLagWarning, ThresholdLagCritical, ThresholdStallWarning, ThresholdStallCritical, ThresholdDeadLettersCritical}

// Where a consumer's threshold came from (State.ThresholdSource).
const (
	SourceFlag     = "flag"
	SourceMetadata = "metadata"
	SourceDefault  = "default"
)

// DefaultThresholds are the thresholds when none are given.
var DefaultThresholds = Thresholds{Behind: time.Minute, Inactive: time.Minute, PoisonRedeliveries: 3, DeadScanLimit: 1000,
	Stall: 5 * time.Minute, StallCritical: 15 * time.Minute}

// orDefault fills the zero fields. A warning level taken by default comes
// down to its critical level when that is lower: a critical level of 1s
// alone means "critical after 1s", not "warning above critical".
func (t Thresholds) orDefault() Thresholds {
	if t.Behind <= 0 {
		t.Behind = DefaultThresholds.Behind
		if t.BehindCritical > 0 {
			t.Behind = min(t.Behind, t.BehindCritical)
		}
	}
	if t.BehindCritical < 0 {
		t.BehindCritical = 0
	}
	if t.StallCritical <= 0 {
		t.StallCritical = DefaultThresholds.StallCritical
	}
	if t.Stall <= 0 {
		t.Stall = min(DefaultThresholds.Stall, t.StallCritical)
	}
	if t.DeadLettersCritical < 0 {
		t.DeadLettersCritical = 0
	}
	if t.Inactive <= 0 {
		t.Inactive = DefaultThresholds.Inactive
	}
	if t.PoisonRedeliveries == 0 {
		t.PoisonRedeliveries = DefaultThresholds.PoisonRedeliveries
	}
	if t.DeadScanLimit <= 0 {
		t.DeadScanLimit = DefaultThresholds.DeadScanLimit
	}
	return t
}

// Validate refuses thresholds that make no sense, naming check's flags:
// a negative value, or a warning level above its critical level
// ("--lag-warning 10m is above --lag-critical 5m"; a stall warning given
// alone is held to the default critical level, 15m). Zero is "not given".
// The error wraps errkind.Invalid (a usage error, exit 2).
func (t Thresholds) Validate() error {
	var problems []string
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{ThresholdLagWarning, t.Behind}, {ThresholdLagCritical, t.BehindCritical}, {ThresholdStallWarning, t.Stall},
		{ThresholdStallCritical, t.StallCritical}, {"inactive", t.Inactive}} {
		if d.value < 0 {
			problems = append(problems, fmt.Sprintf("--%s %s is negative", d.flag, d.value))
		}
	}
	if t.DeadLettersCritical < 0 {
		problems = append(problems, fmt.Sprintf("--%s %d is negative", ThresholdDeadLettersCritical, t.DeadLettersCritical))
	}
	if len(problems) == 0 {
		for _, c := range t.conflicts() {
			critical := fmt.Sprintf("--%s %s", c.critical, units.FormatDuration(c.criticalLevel))
			if c.criticalDefault {
				critical += " (its default; give --" + c.critical + " too)"
			}
			problems = append(problems, fmt.Sprintf("--%s %s is above %s", c.warning, units.FormatDuration(c.warningLevel), critical))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return errkind.New(errkind.Invalid, strings.Join(problems, "; "))
}

// conflict is a warning level above its critical level.
type conflict struct {
	warning, critical           string
	warningLevel, criticalLevel time.Duration
	// criticalDefault: the critical level was not given (its default).
	criticalDefault bool
}

// conflicts lists the warning levels given above their critical levels
// (zero is not given: a default warning level comes down by itself).
func (t Thresholds) conflicts() []conflict {
	var out []conflict
	if t.Behind > 0 && t.BehindCritical > 0 && t.Behind > t.BehindCritical {
		out = append(out, conflict{ThresholdLagWarning, ThresholdLagCritical, t.Behind, t.BehindCritical, false})
	}
	critical, byDefault := t.StallCritical, t.StallCritical <= 0
	if byDefault {
		critical = DefaultThresholds.StallCritical
	}
	if t.Stall > 0 && t.Stall > critical {
		out = append(out, conflict{ThresholdStallWarning, ThresholdStallCritical, t.Stall, critical, byDefault})
	}
	return out
}

// With computes a consumer's effective thresholds: t (the command's, from
// its flags or the defaults) with the consumer's metadata keys
// (MetaThresholdPrefix + a ThresholdNames entry) laid over it, except for
// the thresholds named in fixed (given as flags), which metadata never
// overrides. eff has every default filled in. source says where each
// threshold came from: SourceFlag, SourceMetadata or SourceDefault.
//
// A metadata value that does not parse (durations as flags take them,
// "90s", "15m", "1d"; a count for dead-letters-critical), or that would
// put a warning level above its critical level, is ignored: problems
// says so, one line each ("metadata io.jetctl.check.stall-warning="soon":
// ..."). It never fails: a consumer's health is still judged, by the
// command's thresholds.
func (t Thresholds) With(meta map[string]string, fixed map[string]bool) (eff Thresholds, source map[string]string, problems []string) {
	eff = t
	source = make(map[string]string, len(ThresholdNames))
	raw := map[string]string{}
	for _, name := range ThresholdNames {
		source[name] = SourceDefault
		if fixed[name] {
			source[name] = SourceFlag
			continue
		}
		value, ok := meta[MetaThresholdPrefix+name]
		if !ok {
			continue
		}
		if err := eff.set(name, value); err != nil {
			problems = append(problems, fmt.Sprintf("metadata %s%s=%q: %v; ignored", MetaThresholdPrefix, name, value, err))
			continue
		}
		source[name], raw[name] = SourceMetadata, value
	}
	// A warning level nobody gave (the command's default) comes down to a
	// critical level set lower; one given above its critical level is a
	// contradiction, and the metadata that made it is ignored.
	for _, p := range []struct {
		warning, critical  string
		w, c, wBase, cBase *time.Duration
	}{
		{ThresholdLagWarning, ThresholdLagCritical, &eff.Behind, &eff.BehindCritical, &t.Behind, &t.BehindCritical},
		{ThresholdStallWarning, ThresholdStallCritical, &eff.Stall, &eff.StallCritical, &t.Stall, &t.StallCritical},
	} {
		if source[p.warning] == SourceDefault && *p.c > 0 && *p.w > *p.c {
			*p.w = *p.c
		}
		hit := false
		for _, c := range eff.conflicts() {
			hit = hit || c.warning == p.warning
		}
		if !hit {
			continue
		}
		resolved, c := eff.orDefault(), ""
		switch {
		case source[p.warning] == SourceMetadata && source[p.critical] == SourceMetadata:
			c = fmt.Sprintf("metadata %s%s=%q is above %s%s=%q; both ignored", MetaThresholdPrefix, p.warning, raw[p.warning],
				MetaThresholdPrefix, p.critical, raw[p.critical])
			*p.w, *p.c = *p.wBase, *p.cBase
			source[p.warning], source[p.critical] = SourceDefault, SourceDefault
		case source[p.warning] == SourceMetadata:
			c = fmt.Sprintf("metadata %s%s=%q: above the %s level %s (%s); ignored", MetaThresholdPrefix, p.warning, raw[p.warning],
				p.critical, units.FormatDuration(resolved.level(p.critical)), source[p.critical])
			*p.w = *p.wBase
			source[p.warning] = SourceDefault
		case source[p.critical] == SourceMetadata:
			c = fmt.Sprintf("metadata %s%s=%q: below the %s level %s (%s); ignored", MetaThresholdPrefix, p.critical, raw[p.critical],
				p.warning, units.FormatDuration(resolved.level(p.warning)), source[p.warning])
			*p.c = *p.cBase
			source[p.critical] = SourceDefault
		default:
			// The command's own thresholds contradict each other:
			// Validate's business, not the metadata's.
			continue
		}
		problems = append(problems, c)
		if source[p.warning] == SourceDefault && *p.c > 0 && *p.w > *p.c {
			*p.w = *p.c
		}
	}
	return eff.orDefault(), source, problems
}

// level is the duration threshold name.
func (t Thresholds) level(name string) time.Duration {
	switch name {
	case ThresholdLagWarning:
		return t.Behind
	case ThresholdLagCritical:
		return t.BehindCritical
	case ThresholdStallWarning:
		return t.Stall
	case ThresholdStallCritical:
		return t.StallCritical
	}
	return 0
}

// set parses a metadata value for the threshold name.
func (t *Thresholds) set(name, value string) error {
	if name == ThresholdDeadLettersCritical {
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("not a count of 1 or more")
		}
		t.DeadLettersCritical = n
		return nil
	}
	d, err := units.ParseDuration(value)
	if err != nil || d <= 0 {
		return fmt.Errorf("not a positive duration (use e.g. 90s, 15m, 2h, 1d)")
	}
	switch name {
	case ThresholdLagWarning:
		t.Behind = d
	case ThresholdLagCritical:
		t.BehindCritical = d
	case ThresholdStallWarning:
		t.Stall = d
	case ThresholdStallCritical:
		t.StallCritical = d
	}
	return nil
}
