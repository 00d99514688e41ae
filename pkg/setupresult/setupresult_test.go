package setupresult

import (
	"encoding/json"
	"testing"
)

// dlq setup and events record print these names; scripts read them.
func TestResourceJSON(t *testing.T) {
	b, err := json.Marshal(Resource{Kind: "stream", Name: "DLQ_ORDERS", Action: ActionWouldCreate, Detail: "dlq.ORDERS.*"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"stream","name":"DLQ_ORDERS","action":"would create","detail":"dlq.ORDERS.*"}`; string(b) != want {
		t.Errorf("got %s want %s", b, want)
	}
}
