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
