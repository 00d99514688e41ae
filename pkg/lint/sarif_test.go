package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/jetctl/jetctl/pkg/plan"
)

// sarifSchema compiles the vendored SARIF 2.1.0 schema (testdata/README.md
// says where it comes from).
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateSARIF(t *testing.T, s *jsonschema.Schema, log *SARIFLog) map[string]any {
	t.Helper()
	data, err := json.Marshal(log)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("SARIF does not validate: %v\n%s", err, data)
	}
	var generic map[string]any
	_ = json.Unmarshal(data, &generic)
	return generic
}

// A result with findings, a silenced one and a live one (no file)
// validates, and carries what code scanning needs.
func TestSARIFValidatesAgainstSchema(t *testing.T) {
	s := sarifSchema(t)
	src := `streams:
  - name: ORDERS
    subjects: [orders.>]
    storage: memory
    consumers:
      # jetctl:ignore max-deliver-unlimited the handler never fails
      - name: ship
        ack_policy: explicit
      - name: bill
        ack_policy: explicit
`
	d, err := plan.Load([]plan.Source{{Name: "./plans/orders.yaml", Data: []byte(src)}}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	res := Lint(d, Env{})
	res.Findings = append(res.Findings, Finding{Rule: "replicas-single-in-cluster", Severity: Warning, Resource: "stream LIVE", Message: `stream "LIVE": one replica`})
	if len(res.Suppressed) != 1 || len(res.Findings) < 4 {
		t.Fatalf("fixture: %d findings, %d suppressed", len(res.Findings), len(res.Suppressed))
	}
	doc := validateSARIF(t, s, SARIF(res, "1.2.3"))
	run := doc["runs"].([]any)[0].(map[string]any)
	driver := run["tool"].(map[string]any)["driver"].(map[string]any)
	if got := len(driver["rules"].([]any)); got != len(Rules()) {
		t.Errorf("%d rules in SARIF, want %d", got, len(Rules()))
	}
	rule0 := driver["rules"].([]any)[0].(map[string]any)
	if rule0["helpUri"] != DocsURL+"#"+Rules()[0].ID || rule0["help"].(map[string]any)["text"] == "" {
		t.Errorf("rule without help: %v", rule0)
	}
	var located, suppressed, logical int
	for _, r := range run["results"].([]any) {
		res := r.(map[string]any)
		rule := driver["rules"].([]any)[int(res["ruleIndex"].(float64))].(map[string]any)
		if rule["id"] != res["ruleId"] {
			t.Errorf("ruleIndex points at %v, ruleId is %v", rule["id"], res["ruleId"])
		}
		loc := res["locations"].([]any)[0].(map[string]any)
		if pl, ok := loc["physicalLocation"].(map[string]any); ok {
			located++
			uri := pl["artifactLocation"].(map[string]any)["uri"].(string)
			if uri != "plans/orders.yaml" {
				t.Errorf("uri %q, want plans/orders.yaml (relative to the checkout)", uri)
			}
			if pl["region"].(map[string]any)["startLine"].(float64) < 1 {
				t.Errorf("no start line: %v", pl)
			}
		} else {
			logical++
		}
		if sup, ok := res["suppressions"].([]any); ok {
			suppressed++
			if j := sup[0].(map[string]any)["justification"]; j != "the handler never fails" {
				t.Errorf("justification %v", j)
			}
		}
	}
	if located != len(res.Findings)-1+len(res.Suppressed) || logical != 1 || suppressed != 1 {
		t.Errorf("located %d, logical %d, suppressed %d", located, logical, suppressed)
	}
}

// The schema does reject what is not SARIF, so the test above means
// something.
func TestSARIFSchemaRejects(t *testing.T) {
	s := sarifSchema(t)
	bad := `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"jetctl"}},"results":[{"ruleId":"x","level":"severe","message":{"text":"m"}}]}]}`
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err == nil {
		t.Fatal("a result with level \"severe\" validated")
	}
}

func TestFileURI(t *testing.T) {
	for in, want := range map[string]string{
		"plans/a.yaml":        "plans/a.yaml",
		"./plans/a b.yaml":    "plans/a%20b.yaml",
		"/abs/plans/a.yaml":   "file:///abs/plans/a.yaml",
		"examples/orders.yml": "examples/orders.yml",
	} {
		if got := fileURI(in); got != want {
			t.Errorf("fileURI(%q) = %q, want %q", in, got, want)
		}
	}
}

// Plan files that do not load are SARIF error results at their place; a
// file that could not be read has a place without a region. The document
// validates.
func TestSARIFOfLoadFailureValidates(t *testing.T) {
	s := sarifSchema(t)
	res := LoadFailed([]plan.Problem{
		{Pos: plan.Pos{File: "plans/orders.yaml", Line: 4, Column: 5}, Message: `stream "ORDERS": unknown field "max_agee"`},
		{Pos: plan.Pos{File: "plans/gone.yaml"}, Message: "plan file plans/gone.yaml: no such file or directory"},
	})
	doc := validateSARIF(t, s, SARIF(res, "1.2.3"))
	results := doc["runs"].([]any)[0].(map[string]any)["results"].([]any)
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	for i, want := range []string{"plans/orders.yaml:4:5", "plans/gone.yaml"} {
		r := results[i].(map[string]any)
		if r["ruleId"] != "plan-file-invalid" || r["level"] != "error" {
			t.Errorf("result %d: %v %v, want plan-file-invalid error", i, r["ruleId"], r["level"])
		}
		loc := r["locations"].([]any)[0].(map[string]any)
		if _, ok := loc["logicalLocations"]; ok {
			t.Errorf("result %d names a resource: %v", i, loc)
		}
		pl := loc["physicalLocation"].(map[string]any)
		got := pl["artifactLocation"].(map[string]any)["uri"].(string)
		if region, ok := pl["region"].(map[string]any); ok {
			got += fmt.Sprintf(":%v:%v", region["startLine"], region["startColumn"])
		}
		if got != want {
			t.Errorf("result %d at %s, want %s", i, got, want)
		}
	}
}
