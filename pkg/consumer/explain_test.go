package consumer

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/streamread"
)

func TestSubjectsCollide(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"orders.paid", "orders.>", true},
		{"order.paid", "orders.>", false},
		{"orders.*", "orders.paid", true},
		{"orders.*", "orders.paid.eu", false},
		{"orders.*.eu", "orders.>", true},
		{">", "anything.at.all", true},
		{"a.b", "a.b", true},
		{"a.b", "a.c", false},
		{"a", "a.b", false},
	} {
		if got := streamread.SubjectsOverlap(c.a, c.b); got != c.want {
			t.Errorf("SubjectsOverlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := streamread.SubjectsOverlap(c.b, c.a); got != c.want {
			t.Errorf("SubjectsOverlap(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

// The redelivery count is a lower bound: a filtered consumer skips stream
// sequences, which can only hide redeliveries, never invent them.
func TestRedeliveriesSinceFloor(t *testing.T) {
	for _, c := range []struct {
		name                       string
		floorC, floorS, delC, delS uint64
		want                       uint64
	}{
		{"caught up", 10, 10, 10, 10, 0},
		{"first deliveries only", 10, 10, 15, 15, 0},
		{"one message five times", 2, 2, 9, 5, 4},
		{"filtered, gaps in the stream", 2, 2, 5, 40, 0},
		{"floor ahead (reset)", 9, 9, 3, 3, 0},
	} {
		e := &evaluation{ci: &jetstream.ConsumerInfo{
			AckFloor:  jetstream.SequenceInfo{Consumer: c.floorC, Stream: c.floorS},
			Delivered: jetstream.SequenceInfo{Consumer: c.delC, Stream: c.delS},
		}}
		if got := e.redeliveriesSinceFloor(); got != c.want {
			t.Errorf("%s: redeliveriesSinceFloor() = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestSeverityAtLeastWarning(t *testing.T) {
	if SeverityInfo.AtLeastWarning() || !SeverityWarning.AtLeastWarning() || !SeverityCritical.AtLeastWarning() {
		t.Fatal("info must not count, warning and critical must")
	}
	e := &Explanation{Findings: []Finding{{Severity: SeverityInfo}}}
	if !e.Healthy() {
		t.Error("info findings only: healthy")
	}
	e.Findings = append(e.Findings, Finding{Severity: SeverityWarning})
	if e.Healthy() {
		t.Error("a warning: not healthy")
	}
}
