package plan

import (
	"maps"
	"testing"

	"github.com/jetctl/jetctl/pkg/consumer"
)

// The health thresholds a consumer declares in its metadata are compared
// like any other key; jetctl's bookkeeping and the server's keys are not.
func TestCleanMetadataKeepsThresholds(t *testing.T) {
	if thresholdKeyPrefix != consumer.MetaThresholdPrefix {
		t.Fatalf("plan keeps %q, the health model reads %q", thresholdKeyPrefix, consumer.MetaThresholdPrefix)
	}
	got := cleanMetadata(map[string]string{
		"team":                     "billing",
		"_nats.level":              "1",
		ManagedKey:                 "true",
		AppliedKey:                 "abc",
		"io.jetctl.rewind.billing": "{}",
		consumer.MetaThresholdPrefix + "stall-warning": "2m",
	})
	want := map[string]string{"team": "billing", "io.jetctl.check.stall-warning": "2m"}
	if !maps.Equal(got, want) {
		t.Errorf("cleanMetadata = %v, want %v", got, want)
	}
}
