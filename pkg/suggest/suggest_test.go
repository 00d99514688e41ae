package suggest

import "testing"

func TestClosest(t *testing.T) {
	fields := []string{"max_age", "max_bytes", "max_msgs", "subjects"}
	for _, tc := range []struct {
		s     string
		names []string
		want  string
	}{
		{"max_agee", fields, "max_age"},
		{"maxage", fields, "max_age"},
		{"MAX_AGE", fields, "max_age"},
		{"subject", fields, "subjects"},
		{"retention", fields, ""},
	} {
		if got := Closest(tc.s, tc.names); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestName(t *testing.T) {
	streams := []string{"ORDERS", "ORDERS_ARCHIVE", "FULFILMENT", "DLQ_ORDERS", "JOBS", "AGG"}
	for _, tc := range []struct{ s, want string }{
		{"ORDRES", "ORDERS"}, // a swap is one edit
		{"ODRERS", "ORDERS"},
		{"orders", "ORDERS"}, // case
		{"ORDER", "ORDERS"},  // one letter short
		{"FULFILLMENT", "FULFILMENT"},
		{"JBOS", "JOBS"},
		{"NOPE", ""}, // 3 edits from JOBS: a different name
		{"PAYMENTS", ""},
		{"X", ""},
		{"AG", "AGG"},
		{"ORDERS_ARCHVE", "ORDERS_ARCHIVE"},
	} {
		if got := Name(tc.s, streams); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
	if got := Name("ORDERS", nil); got != "" {
		t.Errorf("Name with no names = %q", got)
	}
}
