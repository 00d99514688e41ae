package jsapi

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

func TestValidateStreamName(t *testing.T) {
	for _, ok := range []string{"ORDERS", "orders-v2", "DLQ_ORDERS", "ÜBER", "a"} {
		if err := ValidateStreamName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	long := make([]byte, 256)
	for i := range long {
		long[i] = 'A'
	}
	for _, bad := range []string{"", "OR DERS", "ORD*", "orders.>", "a.b", "a/b", `a\b`, "tab\there", string(long)} {
		if err := ValidateStreamName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
