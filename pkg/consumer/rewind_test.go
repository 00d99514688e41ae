package consumer

import "testing"

func TestVersionAtLeast(t *testing.T) {
	want := [3]int{2, 14, 0}
	for v, ok := range map[string]bool{
		"2.14.0": true, "2.15.2": true, "v2.14.1": true, "3.0.0": true, "2.14.0-beta.1": true,
		"2.13.9": false, "2.10.22": false, "1.99.0": false, "": false, "garbage": false,
	} {
		if got := versionAtLeast(v, want); got != ok {
			t.Errorf("versionAtLeast(%q) = %v, want %v", v, got, ok)
		}
	}
}

func TestWithoutServerMetadata(t *testing.T) {
	got := withoutServerMetadata(map[string]string{"_nats.ver": "2.15.2", "_nats.level": "2", "owner": "search"})
	if len(got) != 1 || got["owner"] != "search" {
		t.Errorf("got %v, want only owner", got)
	}
	if withoutServerMetadata(map[string]string{"_nats.ver": "x"}) != nil {
		t.Error("only server keys: want nil")
	}
}
