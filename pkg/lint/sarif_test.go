package lint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	doc := validateSARIF(t, s, SARIF(res, "1.2.3", SourceRoot{Dir: "/src/repo", Repository: true, WorkDir: "/src/repo"}))
	run := doc["runs"].([]any)[0].(map[string]any)
	if base := run["originalUriBaseIds"].(map[string]any)["%SRCROOT%"].(map[string]any)["uri"]; base != "file:///src/repo/" {
		t.Errorf("%%SRCROOT%% is %v, want file:///src/repo/", base)
	}
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
			art := pl["artifactLocation"].(map[string]any)
			if art["uri"] != "plans/orders.yaml" || art["uriBaseId"] != "%SRCROOT%" {
				t.Errorf("artifact %v, want plans/orders.yaml from %%SRCROOT%% (the repository's root)", art)
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

// A plan file's place is relative to the source root, whatever the
// working directory and however the path was given; outside the root it
// is an absolute file: URI, without a base.
func TestSourceRootArtifacts(t *testing.T) {
	repo := SourceRoot{Dir: "/src/repo", Repository: true, WorkDir: "/src/repo/plans"}
	for _, tc := range []struct {
		root       SourceRoot
		path, want string
	}{
		{repo, "orders.yaml", "%SRCROOT% plans/orders.yaml"},
		{repo, "./sub/a b.yaml", "%SRCROOT% plans/sub/a%20b.yaml"},
		{repo, "../examples/orders.yml", "%SRCROOT% examples/orders.yml"},
		{repo, "/src/repo/plans/orders.yaml", "%SRCROOT% plans/orders.yaml"},
		{repo, "/elsewhere/x.yaml", " file:///elsewhere/x.yaml"},
		{repo, "../../repo2/x.yaml", " file:///src/repo2/x.yaml"},
		{SourceRoot{Dir: "/w", WorkDir: "/w"}, "plans/a.yaml", "%SRCROOT% plans/a.yaml"},
		{SourceRoot{Dir: "/w", WorkDir: "/w"}, "/abs/plans/a.yaml", " file:///abs/plans/a.yaml"},
	} {
		a := tc.root.artifact(tc.path)
		if got := a.URIBaseID + " " + a.URI; got != tc.want {
			t.Errorf("%s from %s: %q, want %q", tc.path, tc.root.WorkDir, got, tc.want)
		}
	}
}

// The source root is the nearest enclosing git work tree of the first
// plan file in one (.git a directory, or the file of a linked worktree or
// a submodule), else the working directory.
func TestFindSourceRoot(t *testing.T) {
	top := t.TempDir()
	mkdir := func(p string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(top, p), 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(top, p)
	}
	repo := mkdir("repo/.git")
	repo = filepath.Dir(repo)
	mkdir("repo/plans/deep")
	wt := mkdir("wt/plans")
	wt = filepath.Dir(wt)
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: ../repo/.git/worktrees/wt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := mkdir("outside")
	for _, tc := range []struct {
		workDir string
		files   []string
		want    string
		repo    bool
	}{
		{repo, []string{"plans/deep/a.yaml"}, repo, true},
		{filepath.Join(repo, "plans"), []string{"deep/a.yaml"}, repo, true},
		{outside, []string{filepath.Join(repo, "plans", "a.yaml")}, repo, true},
		{outside, []string{"a.yaml", "../wt/plans/b.yaml"}, wt, true},
		{outside, []string{"a.yaml"}, outside, false},
	} {
		root, err := FindSourceRoot(tc.workDir, tc.files)
		if err != nil {
			t.Fatal(err)
		}
		if root.Dir != tc.want || root.Repository != tc.repo || root.WorkDir != tc.workDir {
			t.Errorf("%v from %s: %+v, want %s (repository %v)", tc.files, tc.workDir, root, tc.want, tc.repo)
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
	doc := validateSARIF(t, s, SARIF(res, "1.2.3", SourceRoot{Dir: "/w", WorkDir: "/w"}))
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
