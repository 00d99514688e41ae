package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/jetctl/jetctl/pkg/units"
)

// ParseDuration reads a duration as plan files write it: Go durations
// ("30s", "1h30m", "500ms") plus days and weeks ("7d", "1d12h"). "0" is
// zero.
func ParseDuration(s string) (time.Duration, error) { return units.ParseDuration(s) }

// FormatDuration writes d the way plan files do: whole days as "7d",
// otherwise Go's form without zero units ("1h30m", "2m", "30s").
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	s := d.String()
	if d >= time.Minute {
		s = strings.Replace(s, "m0s", "m", 1)
		s = strings.Replace(s, "h0m", "h", 1)
	}
	if d > 24*time.Hour {
		days := d / (24 * time.Hour)
		return fmt.Sprintf("%dd%s", days, FormatDuration(d-days*24*time.Hour))
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
	units := []struct {
		suffix string
		size   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.suffix)
		}
	}
	return strconv.FormatInt(n, 10)
}
