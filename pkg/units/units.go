// Package units parses the durations users type: Go durations ("90s",
// "1h30m") plus days and weeks ("7d", "2w", "1d12h").
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

const (
	day  = 24 * time.Hour
	week = 7 * day
)

// ParseDuration reads a non-negative duration; "0" is zero.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "0" {
		return 0, nil
	}
	rest := in
	var total time.Duration
	// Leading week and day parts, then whatever Go understands.
	for _, unit := range []struct {
		suffix byte
		size   time.Duration
	}{{'w', week}, {'d', day}} {
		i := strings.IndexByte(rest, unit.suffix)
		if i <= 0 {
			continue
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			continue
		}
		if n < 0 || n*float64(unit.size) > math.MaxInt64 {
			return 0, fmt.Errorf("invalid duration %q (use e.g. 30s, 2m, 7d, 1h30m)", in)
		}
		total += time.Duration(n * float64(unit.size))
		rest = rest[i+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 || total > math.MaxInt64-d {
			return 0, fmt.Errorf("invalid duration %q (use e.g. 30s, 2m, 7d, 1h30m)", in)
		}
		total += d
	}
	if in == "" {
		return 0, fmt.Errorf("empty duration")
	}
	return total, nil
}

// ParseRate reads a rate as users type it: "500", "500/s", "30/m", "2/h";
// the result is per second and positive.
func ParseRate(s string) (float64, error) {
	num, unit, per := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) || (per && unit == "") {
		return 0, fmt.Errorf("invalid rate %q (use e.g. 500/s)", s)
	}
	switch unit {
	case "", "s":
		return n, nil
	case "m":
		return n / 60, nil
	case "h":
		return n / 3600, nil
	}
	return 0, fmt.Errorf("invalid rate %q (use e.g. 500/s)", s)
}
