package plan

import (
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// The sample plan at the top of docs/plan.md is the output of a real run:
// testscripts/plan_docs_sample.txtar asserts the output as want-plan.txt,
// and this test holds the docs to that file.
func TestDocsSample(t *testing.T) {
	ar, err := txtar.ParseFile("../../testscripts/plan_docs_sample.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, f := range ar.Files {
		if f.Name == "want-plan.txt" {
			want = string(f.Data)
		}
	}
	if want == "" {
		t.Fatal("plan_docs_sample.txtar has no want-plan.txt")
	}
	docs, err := os.ReadFile("../../docs/plan.md")
	if err != nil {
		t.Fatal(err)
	}
	block := "```\n$ jetctl plan -f plans/orders.yaml\n" + want + "```\n"
	if !strings.Contains(string(docs), block) {
		t.Errorf("docs/plan.md does not show the output of testscripts/plan_docs_sample.txtar; want this block:\n%s", block)
	}
}
