package plan

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzLoad feeds arbitrary plan files to the loader and validator: they
// must never panic, must return either resources or positioned problems,
// and what they accept must survive the JSON round trip that plan files
// saved with -o json go through. The seed corpus is in
// testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("streams:\n  - name: ORDERS\n    subjects: [orders.>]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lookup := func(name string) (string, bool) {
			if name == "DEFINED" {
				return "7d", true
			}
			return "", false
		}
		d, err := Load([]Source{{Name: "fuzz.yaml", Data: data}}, lookup)
		if err != nil {
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Problems) == 0 {
				t.Fatalf("Load returned %T %v, want a ValidationError", err, err)
			}
			for _, p := range verr.Problems {
				if p.Pos.File != "fuzz.yaml" || p.Pos.Line < 1 || p.Message == "" {
					t.Fatalf("problem without a position: %+v", p)
				}
			}
			return
		}
		for _, r := range d.Resources {
			if r.config() == nil || r.Name == "" {
				t.Fatalf("resource %s has no config", r.ID())
			}
			data := marshalConfig(r.config())
			if !json.Valid(data) {
				t.Fatalf("%s: invalid JSON", r.ID())
			}
			_ = view(r.Kind, r.config(), nil)
		}
		p, err := Compute(d, &Live{Streams: nil, Consumers: nil}, Options{})
		if err == nil {
			if _, err := DesiredFromPlan(roundTrip(t, p)); err != nil {
				t.Fatalf("plan does not round-trip: %v", err)
			}
		}
	})
}

func roundTrip(t *testing.T, p *Plan) *Plan {
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var out Plan
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}
