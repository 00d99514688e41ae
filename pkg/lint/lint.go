// Package lint checks declared (plan files) or live JetStream
// configurations for the settings that have paged people: each rule has a
// stable id, a severity and a section in docs/lint.md. It prints nothing;
// cmd/lint formats the findings.
package lint

import (
	"fmt"
	"sort"
	"strings"

	"github.com/jetctl/jetctl/pkg/plan"
)

// Severity is how bad a finding is.
type Severity int

// Severities, from the least to the most severe.
const (
	Info Severity = iota + 1
	Warning
	Error
)

var severityNames = map[Severity]string{Info: "info", Warning: "warning", Error: "error"}

func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSeverity reads "info", "warning" or "error".
func ParseSeverity(name string) (Severity, error) {
	for s, n := range severityNames {
		if strings.EqualFold(n, name) {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (use info, warning or error)", name)
}

// DocsURL is where docs/lint.md is published; a rule's help URI is this
// with the rule id as the anchor.
const DocsURL = "https://github.com/jetctl/jetctl/blob/main/docs/lint.md"

// Rule is one check.
type Rule struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	// Summary is the rule in one line, as docs/lint.md's heading says it.
	Summary string `json:"summary"`
	// Why is why it matters, and Fix how to fix it: a sentence or two
	// each, shown in SARIF help and held equal to docs/lint.md by a test.
	Why string `json:"why"`
	Fix string `json:"fix"`
	// Source is where the rule comes from: a seed article, the server's
	// documentation or an incident (a URL or a repository's issue).
	Source string `json:"source"`
	// Live is true for a rule that needs what only a server knows (its
	// cluster size, the DLQ captures); offline it is not checked.
	Live bool `json:"live,omitempty"`
	// Offline is true for a rule that stands in, offline, for a live one.
	Offline bool `json:"offline,omitempty"`
	check   func(*linter, *plan.Resource)
}

// HelpURI is the rule's section in docs/lint.md.
func (r *Rule) HelpURI() string { return DocsURL + "#" + r.ID }

// Finding is one rule's verdict on one resource.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Resource names the resource: "stream ORDERS", "consumer ORDERS/ship",
	// "kv config", "object_store files".
	Resource string `json:"resource"`
	Message  string `json:"message"`
	// Pos is the key the finding is about, or the resource; empty for a
	// live resource.
	Pos plan.Pos `json:"position"`
	// Reason is why it was silenced (suppressed findings only).
	Reason string `json:"reason,omitempty"`
	// IgnorePos is where it was silenced.
	IgnorePos *plan.Pos `json:"ignored_at,omitempty"`
	// Suppressed is true for a silenced finding.
	Suppressed bool `json:"suppressed,omitempty"`
	// Command fixes the finding, when one command does (the message ends
	// with it, in parentheses).
	Command string `json:"command,omitempty"`
}

func (f Finding) String() string {
	s := fmt.Sprintf("%s: %s [%s]", f.Severity, f.Message, f.Rule)
	if p := f.Pos.String(); p != "" {
		s = p + ": " + s
	}
	return s
}

// Env is what the checks know besides the resources.
type Env struct {
	// Live is true when the resources are the server's.
	Live bool
	// ClusterSize is the number of servers in the JetStream cluster the
	// resources live in (1 for a single server); 0 when unknown (offline,
	// or a cluster that does not advertise its servers).
	ClusterSize int
	// Clustered is true on a cluster (also when its size is unknown).
	Clustered bool
	// Cluster is the cluster's name, when known.
	Cluster string
	// APILevel is the server's JetStream API level (live only).
	APILevel int
	// Captured reports whether a DLQ capture covers a consumer's dead
	// letters; nil when unknown (offline).
	Captured func(stream, consumer string) bool
	// Internal is how many of the server's resources are jetctl's own
	// (see Internal) and were left out.
	Internal int
	// Server, with -f and --live, is what the server holds: a consumer
	// of a stream that only the server has is checked against that
	// stream, and the server's consumers count for an interest stream.
	Server *plan.Desired
	// Only, when set, limits the findings to the resources for which it
	// is true (plan shows the findings of what it changes).
	Only func(*plan.Resource) bool
}

// Result is every finding, silenced ones apart.
type Result struct {
	Findings   []Finding `json:"findings"`
	Suppressed []Finding `json:"suppressed"`
	// Resources is how many resources were checked.
	Resources int `json:"resources"`
	// Skipped lists the rules that could not be checked (live rules
	// offline).
	Skipped []string `json:"skipped_rules"`
	// Internal is how many of jetctl's own resources on the server (DLQ
	// and capture streams, the events recorder, the lease bucket) were
	// left out.
	Internal int `json:"internal_left_out"`
}

// Count is the number of findings at or above sev.
func (r *Result) Count(sev Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity >= sev {
			n++
		}
	}
	return n
}

// linter is one run's state.
type linter struct {
	env       Env
	desired   *plan.Desired
	streams   map[string]*plan.Resource
	consumers map[string][]*plan.Resource
	rule      *Rule
	findings  []Finding
}

// report adds a finding of the current rule about r, at the field path
// (a plan.Resource FieldPos key such as "max_deliver"; "" for the
// resource itself).
func (c *linter) report(r *plan.Resource, path, format string, args ...any) {
	c.reportWith(r, path, "", format, args...)
}

// reportWith adds a finding that command fixes.
func (c *linter) reportWith(r *plan.Resource, path, command, format string, args ...any) {
	pos := r.Pos
	if p, ok := r.FieldPos[path]; ok && path != "" {
		pos = p
	}
	msg := r.Label() + ": " + fmt.Sprintf(format, args...)
	if command != "" {
		msg += " (" + command + ")"
	}
	c.findings = append(c.findings, Finding{
		Rule:     c.rule.ID,
		Severity: c.rule.Severity,
		Resource: r.ID(),
		Message:  msg,
		Pos:      pos,
		Command:  command,
	})
}

// Rules lists every rule, in the order of docs/lint.md.
func Rules() []Rule { return rules }

// RuleByID returns the rule with that id.
func RuleByID(id string) (*Rule, bool) {
	for i := range rules {
		if rules[i].ID == id {
			return &rules[i], true
		}
	}
	return nil, false
}

// Lint checks the resources. A finding silenced by a `# jetctl:ignore ID
// reason` comment on its resource goes to Suppressed.
func Lint(d *plan.Desired, env Env) *Result {
	c := &linter{env: env, desired: d, streams: map[string]*plan.Resource{}, consumers: map[string][]*plan.Resource{}}
	for _, r := range d.Resources {
		if r.Kind == plan.KindConsumer {
			c.consumers[r.Stream] = append(c.consumers[r.Stream], r)
		} else if r.Kind == plan.KindStream {
			c.streams[r.Name] = r
		}
	}
	res := &Result{Findings: []Finding{}, Suppressed: []Finding{}, Skipped: []string{}, Internal: env.Internal}
	for i := range rules {
		rule := &rules[i]
		if rule.check == nil {
			continue
		}
		if rule.Live && !env.Live {
			res.Skipped = append(res.Skipped, rule.ID)
			continue
		}
		if rule.Offline && env.Live {
			continue
		}
		c.rule = rule
		for _, r := range d.Resources {
			if env.Only != nil && !env.Only(r) {
				continue
			}
			rule.check(c, r)
		}
	}
	for _, r := range d.Resources {
		if env.Only == nil || env.Only(r) {
			res.Resources++
		}
	}
	c.applyIgnores(res)
	order := map[string]int{}
	for i, r := range d.Resources {
		order[r.ID()] = i
	}
	sortFindings(d.Files, order, res.Findings)
	sortFindings(d.Files, order, res.Suppressed)
	return res
}

// applyIgnores moves silenced findings to Suppressed, and reports
// ignores that name no rule, give no reason, or silence nothing.
func (c *linter) applyIgnores(res *Result) {
	type key struct{ resource, rule string }
	byRes := map[*plan.Resource]bool{}
	used := map[*plan.Ignore]bool{}
	ignores := map[key]*plan.Ignore{}
	for _, r := range c.desired.Resources {
		if c.env.Only != nil && !c.env.Only(r) {
			continue
		}
		byRes[r] = true
		for i := range r.Ignores {
			ig := &r.Ignores[i]
			if _, ok := RuleByID(ig.Rule); !ok || ig.Reason == "" {
				continue
			}
			ignores[key{r.ID(), ig.Rule}] = ig
		}
	}
	for _, f := range c.findings {
		if ig := ignores[key{f.Resource, f.Rule}]; ig != nil {
			used[ig] = true
			f.Reason = ig.Reason
			p := ig.Pos
			f.IgnorePos = &p
			f.Suppressed = true
			res.Suppressed = append(res.Suppressed, f)
			continue
		}
		res.Findings = append(res.Findings, f)
	}
	// An ignore of a rule that did not run (a live rule offline, an
	// offline one live) is not unused: the same file is linted both ways.
	skipped := map[string]bool{}
	for _, id := range res.Skipped {
		skipped[id] = true
	}
	for i := range rules {
		if rules[i].Offline && c.env.Live {
			skipped[rules[i].ID] = true
		}
	}
	invalid, _ := RuleByID("ignore-invalid")
	unused, _ := RuleByID("ignore-unused")
	for _, r := range c.desired.Resources {
		if !byRes[r] {
			continue
		}
		for i := range r.Ignores {
			ig := &r.Ignores[i]
			f := Finding{Resource: r.ID(), Pos: ig.Pos}
			switch _, known := RuleByID(ig.Rule); {
			case !known:
				f.Rule, f.Severity = invalid.ID, invalid.Severity
				f.Message = fmt.Sprintf("%s: jetctl:ignore names no rule %q (see jetctl lint --rules)", r.Label(), ig.Rule)
			case ig.Reason == "":
				f.Rule, f.Severity = invalid.ID, invalid.Severity
				f.Message = fmt.Sprintf("%s: jetctl:ignore %s gives no reason: say why after the rule id", r.Label(), ig.Rule)
			case !used[ig] && !skipped[ig.Rule]:
				f.Rule, f.Severity = unused.ID, unused.Severity
				f.Message = fmt.Sprintf("%s: jetctl:ignore %s silences nothing: the rule finds nothing here", r.Label(), ig.Rule)
			default:
				continue
			}
			res.Findings = append(res.Findings, f)
		}
	}
	if c.env.Only != nil {
		return // only some resources' findings: a stray comment is none of them
	}
	for _, ig := range c.desired.StrayIgnores {
		res.Findings = append(res.Findings, Finding{Rule: invalid.ID, Severity: invalid.Severity, Pos: ig.Pos,
			Message: fmt.Sprintf("jetctl:ignore %s is on no resource: write it above the resource's list item or on one of its lines", ig.Rule)})
	}
}

// sortFindings orders findings by file, line and column; the server's
// (no position) by resource, in the order they were given (a stream
// before its consumers), then rule.
func sortFindings(files []string, order map[string]int, fs []Finding) {
	index := map[string]int{}
	for i, f := range files {
		index[f] = i
	}
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i].Pos, fs[j].Pos
		if a.File != b.File {
			return index[a.File] < index[b.File]
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		if fs[i].Resource != fs[j].Resource {
			return order[fs[i].Resource] < order[fs[j].Resource]
		}
		return fs[i].Rule < fs[j].Rule
	})
}
