package streamread

import "testing"

func TestSubjectMatches(t *testing.T) {
	tests := []struct {
		filter, subject string
		want            bool
	}{
		{"", "anything", true},
		{">", "a.b", true},
		{"orders.*", "orders.created", true},
		{"orders.*", "orders.created.eu", false},
		{"orders.>", "orders.created.eu", true},
		{"orders.>", "orders", false},
		{"*.created", "orders.created", true},
		{"orders.created", "orders.paid", false},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false},
		{"a.b", "a.b", true},
		{">", "x", true},
	}
	for _, tt := range tests {
		if got := SubjectMatches(tt.filter, tt.subject); got != tt.want {
			t.Errorf("SubjectMatches(%q, %q) = %v", tt.filter, tt.subject, got)
		}
	}
}

func TestSubjectMatchesAny(t *testing.T) {
	if !SubjectMatchesAny(nil, "anything") {
		t.Error("no filters should match everything")
	}
	if !SubjectMatchesAny([]string{"orders.paid", "orders.*"}, "orders.created") {
		t.Error("the second filter matches")
	}
	if SubjectMatchesAny([]string{"orders.paid", "returns.>"}, "orders.created") {
		t.Error("no filter matches")
	}
}

func TestSubjectCoversAndOverlap(t *testing.T) {
	for _, tt := range []struct {
		a, b          string
		covers, overl bool
	}{
		{">", "a.b", true, true},
		{"a.*", "a.b", true, true},
		{"a.*", "a.b.c", false, false},
		{"a.>", "a.b.c", true, true},
		{"a.>", "a", false, false},
		{"a.*", "*.b", false, true},
		{"a.b", "a.c", false, false},
		{"a.*", "a.>", false, true},
	} {
		if got := SubjectCovers(tt.a, tt.b); got != tt.covers {
			t.Errorf("SubjectCovers(%s, %s) = %v", tt.a, tt.b, got)
		}
		if got := SubjectsOverlap(tt.a, tt.b); got != tt.overl {
			t.Errorf("SubjectsOverlap(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}
