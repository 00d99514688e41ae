// Package units parses and writes the quantities users type: durations
// (Go durations plus days and weeks: "7d", "2w", "1d12h"), rates ("50/s")
// and sizes ("1GiB"). Flags and plan files both read them here.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
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

// FormatDuration writes d the way plan files do: whole days as "7d",
// otherwise Go's form without zero units ("1h30m", "2m", "30s").
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%day == 0:
		return fmt.Sprintf("%dd", d/day)
	case d > day:
		days := d / day
		return fmt.Sprintf("%dd%s", days, FormatDuration(d-days*day))
	}
	s := d.String()
	if d >= time.Minute {
		s = strings.Replace(s, "m0s", "m", 1)
		s = strings.Replace(s, "h0m", "h", 1)
	}
	return s
}

// ParseSize reads a size: bytes ("1048576"), with a unit ("1GiB",
// "512MB", "64 KiB"), or -1 for unlimited.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "-1" {
		return -1, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < -1 {
			return 0, fmt.Errorf("invalid size %q: negative sizes other than -1 (unlimited) are not allowed", s)
		}
		return n, nil
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("invalid size %q (use bytes, e.g. 1GiB, 512MB, or -1 for unlimited)", s)
	}
	n, err := humanize.ParseBytes(s)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q (use bytes, e.g. 1GiB, 512MB, or -1 for unlimited)", s)
	}
	return int64(n), nil
}

// FormatSize writes a size exactly, with the largest binary unit that
// divides it ("1GiB", "512MiB"), or plain bytes.
func FormatSize(n int64) string {
	if n <= 0 {
		return strconv.FormatInt(n, 10)
	}
	binary := []struct {
		suffix string
		size   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range binary {
		if n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return strconv.FormatInt(n, 10)
}
