package units

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"0": 0, "30s": 30 * time.Second, "1h30m": 90 * time.Minute, "7d": 7 * 24 * time.Hour,
		"2w": 14 * 24 * time.Hour, "1d12h": 36 * time.Hour, "1w2d": 9 * 24 * time.Hour, "500ms": 500 * time.Millisecond,
		"1.5d": 36 * time.Hour,
	}
	for in, want := range good {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "-5m", "7", "d", "3x", "1d-2h"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", in)
		}
	}
}

func TestParseRate(t *testing.T) {
	good := map[string]float64{"500": 500, "500/s": 500, "30/m": 0.5, "7200/h": 2, "0.5/s": 0.5}
	for in, want := range good {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fast", "0", "-1/s", "5/d", "5/"} {
		if _, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) succeeded", in)
		}
	}
}

func TestFormatDurationRoundTrip(t *testing.T) {
	cases := map[string]time.Duration{
		"30s": 30 * time.Second, "2m": 2 * time.Minute, "7d": 7 * 24 * time.Hour,
		"1h30m": 90 * time.Minute, "1d12h": 36 * time.Hour, "500ms": 500 * time.Millisecond, "0": 0,
	}
	for in, want := range cases {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
		if in != "0" && in != "1d12h" {
			back, _ := ParseDuration(FormatDuration(got))
			if back != got {
				t.Errorf("FormatDuration(%v) = %q does not parse back", got, FormatDuration(got))
			}
		}
	}
	for _, bad := range []string{"", "7x", "-1s", "d", "1.5.5d", "30"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", bad)
		}
	}
	for d, want := range map[time.Duration]string{7 * 24 * time.Hour: "7d", 90 * time.Minute: "1h30m", 2 * time.Minute: "2m", 30 * time.Second: "30s", 36 * time.Hour: "1d12h"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseSize(t *testing.T) {
	cases := map[string]int64{"1GiB": 1 << 30, "512MB": 512_000_000, "1048576": 1 << 20, "-1": -1, "64 KiB": 64 << 10}
	for in, want := range cases {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"-2", "12XB", "lots", "-1GiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) succeeded", bad)
		}
	}
	if got := FormatSize(1 << 30); got != "1GiB" {
		t.Errorf("FormatSize(1GiB) = %q", got)
	}
	if got := FormatSize(1000); got != "1000" {
		t.Errorf("FormatSize(1000) = %q", got)
	}
}
