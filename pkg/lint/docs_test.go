package lint

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jetctl/jetctl/pkg/plan"
)

const docsPage = "../../docs/lint.md"

// docSections splits a Markdown page at its "## " headings: the headings
// in order, and each one's text with runs of white space made one space
// (so that the page may wrap its lines).
func docSections(t *testing.T) ([]string, map[string]string) {
	t.Helper()
	data, err := os.ReadFile(docsPage)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	body := map[string]string{}
	heading := ""
	var text []string
	flush := func() {
		body[heading] = strings.Join(strings.Fields(strings.Join(text, "\n")), " ")
	}
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			flush()
			heading, text = strings.TrimSpace(h), nil
			order = append(order, heading)
			continue
		}
		text = append(text, line)
	}
	flush()
	return order, body
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

var ruleIDRe = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)+$`)

// docs/lint.md has a section per rule, headed by its id (the anchor of its
// help URI), in the order of Rules(), with its severity, where it is
// checked, and its summary, Why, Fix and Source as rules.go says them;
// and no section names a rule that does not exist.
func TestDocsListEveryRule(t *testing.T) {
	headings, body := docSections(t)
	var documented []string
	for _, h := range headings {
		if !ruleIDRe.MatchString(h) {
			continue
		}
		if _, ok := RuleByID(h); !ok {
			t.Errorf("docs/lint.md: section %q names no rule", h)
			continue
		}
		documented = append(documented, h)
	}
	var ids []string
	for _, r := range Rules() {
		ids = append(ids, r.ID)
		text, ok := body[r.ID]
		if !ok {
			t.Errorf("docs/lint.md: no section ## %s", r.ID)
			continue
		}
		checked := "offline and live"
		if r.Live {
			checked = "live only"
		} else if r.Offline {
			checked = "offline only"
		}
		summary := strings.ToUpper(r.Summary[:1]) + r.Summary[1:] + "."
		for what, want := range map[string]string{
			"summary":  summary,
			"severity": "**Severity:** " + r.Severity.String() + " ·",
			"checked":  "**Checked:** " + checked,
			"why":      "**Why.** " + oneLine(r.Why),
			"fix":      "**Fix.** " + oneLine(r.Fix),
			"source":   "**Source:** " + oneLine(r.Source),
		} {
			if !strings.Contains(text, want) {
				t.Errorf("docs/lint.md ## %s: its %s is not %q", r.ID, what, want)
			}
		}
		if !strings.Contains(body["Rules"], "["+r.ID+"](#"+r.ID+")") {
			t.Errorf("docs/lint.md: the rules' table does not link %s", r.ID)
		}
	}
	if !slices.Equal(documented, ids) {
		t.Errorf("docs/lint.md's rule sections are\n%v\nwant Rules() order\n%v", documented, ids)
	}
	if _, ok := body["Output and exit codes"]; !ok {
		t.Error("docs/lint.md has no section ## Output and exit codes")
	}
}

// The page's example of jetctl:ignore comments loads, and each comment
// silences a finding.
func TestDocsIgnoreExample(t *testing.T) {
	data, err := os.ReadFile(docsPage)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "```yaml\n")
	example, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/lint.md has no yaml example")
	}
	res := Lint(load(t, plan.Source{Name: "lint.md", Data: []byte(example)}), Env{})
	if len(res.Findings) != 0 || len(res.Suppressed) != 2 {
		t.Errorf("the example finds %v and silences %v, want nothing found and two silenced", show(res.Findings), show(res.Suppressed))
	}
}
