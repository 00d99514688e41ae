package check

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/check"
	"github.com/jetctl/jetctl/pkg/embedded/embeddedtest"
)

// docsCheck is docs/check.md.
func docsCheck(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../docs/check.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// fenced returns the bodies of the fenced blocks of lang ("" for plain).
func fenced(doc, lang string) []string {
	var out []string
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "```"+lang {
			continue
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		out = append(out, strings.Join(body, "\n"))
	}
	return out
}

// scrape checks a real server (a stream with a consumer behind) and
// returns what -o prometheus prints, parsed.
func scrape(t *testing.T) map[string][]map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	js := embeddedtest.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}, MaxMsgs: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "shipping", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "orders.paid", []byte("1")); err != nil {
		t.Fatal(err)
	}
	r, err := check.Run(ctx, js, check.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := writePrometheus(&buf, r); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(&buf)
	if err != nil {
		t.Fatalf("-o prometheus does not parse: %v", err)
	}
	series := map[string][]map[string]string{}
	for name, mf := range families {
		for _, m := range mf.Metric {
			labels := map[string]string{}
			for _, lp := range m.Label {
				labels[lp.GetName()] = lp.GetValue()
			}
			series[name] = append(series[name], labels)
		}
	}
	return series
}

var (
	metricRE  = regexp.MustCompile(`jetctl_[a-z_]+`)
	matcherRE = regexp.MustCompile(`(jetctl_[a-z_]+)\{([^}]*)\}`)
	byRE      = regexp.MustCompile(`by \(([^)]*)\)`)
	labelsRE  = regexp.MustCompile(`\$labels\.([a-z_]+)`)
)

// The alert rules of docs/check.md use metrics and labels a real scrape
// has: every metric, every label matcher (with its value), every label
// grouped by and every label an annotation reads.
func TestDocsAlertRulesMatchAScrape(t *testing.T) {
	series := scrape(t)
	has := func(metric string, want map[string]string) bool {
		for _, labels := range series[metric] {
			ok := true
			for k, v := range want {
				got, present := labels[k]
				ok = ok && present && (v == "" || got == v)
			}
			if ok {
				return true
			}
		}
		return false
	}
	var rules []struct {
		Alert       string            `yaml:"alert"`
		Expr        string            `yaml:"expr"`
		Annotations map[string]string `yaml:"annotations"`
	}
	for _, block := range fenced(docsCheck(t), "yaml") {
		var doc struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `yaml:"alert"`
					Expr        string            `yaml:"expr"`
					Annotations map[string]string `yaml:"annotations"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
			t.Fatalf("a yaml block of docs/check.md does not parse: %v", err)
		}
		for _, g := range doc.Groups {
			for _, r := range g.Rules {
				rules = append(rules, struct {
					Alert       string            `yaml:"alert"`
					Expr        string            `yaml:"expr"`
					Annotations map[string]string `yaml:"annotations"`
				}(r))
			}
		}
	}
	if len(rules) < 3 {
		t.Fatalf("docs/check.md has %d alert rules, want the documented ones", len(rules))
	}
	for _, r := range rules {
		metrics := slices.Compact(metricRE.FindAllString(r.Expr, -1))
		if len(metrics) == 0 {
			t.Errorf("%s: %q uses no jetctl metric", r.Alert, r.Expr)
		}
		for _, m := range metrics {
			if !has(m, nil) {
				t.Errorf("%s: %s is not in a scrape", r.Alert, m)
			}
		}
		for _, sel := range matcherRE.FindAllStringSubmatch(r.Expr, -1) {
			want := map[string]string{}
			for _, matcher := range strings.Split(sel[2], ",") {
				k, v, _ := strings.Cut(matcher, "=")
				want[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
			}
			if !has(sel[1], want) {
				t.Errorf("%s: no %s{%s} in a scrape", r.Alert, sel[1], sel[2])
			}
		}
		var used []string
		for _, by := range byRE.FindAllStringSubmatch(r.Expr, -1) {
			for _, l := range strings.Split(by[1], ",") {
				used = append(used, strings.TrimSpace(l))
			}
		}
		for _, a := range r.Annotations {
			for _, l := range labelsRE.FindAllStringSubmatch(a, -1) {
				used = append(used, l[1])
			}
		}
		for _, l := range used {
			if !slices.ContainsFunc(metrics, func(m string) bool { return has(m, map[string]string{l: ""}) }) {
				t.Errorf("%s: label %q is on none of %v", r.Alert, l, metrics)
			}
		}
	}
}

// Every metric is documented, and the docs name no other (in backticks).
func TestDocsListEveryMetric(t *testing.T) {
	doc := docsCheck(t)
	names := MetricNames()
	for _, name := range names {
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("docs/check.md does not document %s", name)
		}
	}
	for _, m := range regexp.MustCompile("`(jetctl_[a-z_]+)`").FindAllStringSubmatch(doc, -1) {
		if name := m[1]; !slices.Contains(names, name) {
			t.Errorf("docs/check.md names %s, which check does not expose", name)
		}
	}
	series := scrape(t)
	for _, name := range []string{"jetctl_check_status", "jetctl_consumer_status", "jetctl_consumer_lag_seconds", "jetctl_stream_limit_used_ratio"} {
		if len(series[name]) == 0 {
			t.Errorf("%s is not in a scrape", name)
		}
	}
}

// The nagios command of docs/check.md, expanded with its service's
// arguments, is one of the doc's shell examples (which docs_test.go runs).
func TestDocsNagiosCommandIsRun(t *testing.T) {
	doc := docsCheck(t)
	var commandLine, checkCommand string
	for _, block := range fenced(doc, "") {
		for _, line := range strings.Split(block, "\n") {
			fields := strings.Fields(line)
			if len(fields) > 1 && fields[0] == "command_line" {
				commandLine = strings.Join(fields[1:], " ")
			}
			if len(fields) > 1 && fields[0] == "check_command" {
				checkCommand = fields[1]
			}
		}
	}
	if commandLine == "" || checkCommand == "" {
		t.Fatal("docs/check.md has no nagios command_line and check_command")
	}
	args := strings.Split(checkCommand, "!")[1:]
	for i, a := range args {
		commandLine = strings.ReplaceAll(commandLine, "$ARG"+string(rune('1'+i))+"$", a)
	}
	commandLine = strings.TrimPrefix(commandLine, "/usr/local/bin/")
	for _, block := range fenced(doc, "sh") {
		for _, line := range strings.Split(block, "\n") {
			if strings.TrimSpace(line) == commandLine {
				return
			}
		}
	}
	t.Errorf("docs/check.md has no shell example %q (the nagios command, expanded)", commandLine)
}

// Every flag of check is in docs/check.md, and every threshold in --help.
func TestDocsListEveryFlag(t *testing.T) {
	doc := docsCheck(t)
	cmd := NewCmd(factory.New(&factory.IOStreams{}))
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if !strings.Contains(doc, "--"+fl.Name) {
			t.Errorf("docs/check.md does not mention --%s", fl.Name)
		}
	})
	for _, s := range append(slices.Clone(check.ConsumerSettings), check.StreamSettings...) {
		if s.Flag != "pinned" && !strings.HasPrefix(s.Flag, "subjects-") && !strings.Contains(cmd.Long, "--"+s.Flag) {
			t.Errorf("--help does not mention --%s", s.Flag)
		}
		if !strings.Contains(doc, "`"+s.Key+"`") {
			t.Errorf("docs/check.md does not list the key %s", s.Key)
		}
	}
}
