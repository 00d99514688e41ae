package plan

import (
	"fmt"
	"strings"
	"testing"
)

// ignoresOf loads plan files and lists every jetctl:ignore comment as
// "owner: RULE (reason) at file:line:col", owner "-" for a stray one.
func ignoresOf(t *testing.T, sources ...Source) []string {
	t.Helper()
	d, err := Load(sources, noVars)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	show := func(owner string, ig Ignore) {
		out = append(out, fmt.Sprintf("%s: %s (%s) at %s", owner, ig.Rule, ig.Reason, ig.Pos))
	}
	for _, r := range d.Resources {
		for _, ig := range r.Ignores {
			show(r.ID(), ig)
		}
	}
	for _, ig := range d.StrayIgnores {
		show("-", ig)
	}
	return out
}

func assertIgnores(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ignores:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseIgnore(t *testing.T) {
	for in, want := range map[string]string{
		"# jetctl:ignore stream-unbounded  kept by an external purge job ": "stream-unbounded|kept by an external purge job",
		"#jetctl:ignore kv-history-one":                                    "kv-history-one|",
		"## jetctl:ignore\treplicas-even\tmigrating":                       "replicas-even|migrating",
		"# jetctl:ignore":                     "|",
		"# jetctl:ignored replicas-even x":    "not",
		"# see jetctl:ignore replicas-even x": "not",
		"jetctl:ignore replicas-even x":       "not",
	} {
		got := "not"
		if rule, reason, ok := parseIgnore(in); ok {
			got = rule + "|" + reason
		}
		if got != want {
			t.Errorf("parseIgnore(%q) = %s, want %s", in, got, want)
		}
	}
}

// A comment is a resource's above its list item (the first item's too,
// whose comment yaml.v3 might keep elsewhere), on any line of its
// mapping, or above any of its keys, nested ones included.
func TestIgnoresOfAStream(t *testing.T) {
	src := `streams:
  # jetctl:ignore stream-unbounded kept by a purge job
  # jetctl:ignore replicas-even

  - name: ORDERS # jetctl:ignore memory-single-replica on the name line
    subjects: [orders.>] # jetctl:ignore unknown-rule on a key line
    # jetctl:ignore kv-history-one above a key
    storage: memory
    placement:
      # jetctl:ignore replicas-even above a nested key
      cluster: east # jetctl:ignore replicas-even on a nested line
    sources: [
      {name: A},
      {name: B}] # jetctl:ignore workqueue-mirrored after a flow list on two lines
  - name: EVENTS
    subjects: [events.>]
  # jetctl:ignore interest-no-consumers above the second item
  - name: AUDIT
    subjects: [audit.>]
`
	assertIgnores(t, ignoresOf(t, Source{Name: "p.yaml", Data: []byte(src)}), []string{
		"stream ORDERS: stream-unbounded (kept by a purge job) at p.yaml:2:3",
		"stream ORDERS: replicas-even () at p.yaml:3:3",
		"stream ORDERS: memory-single-replica (on the name line) at p.yaml:5:18",
		"stream ORDERS: unknown-rule (on a key line) at p.yaml:6:26",
		"stream ORDERS: kv-history-one (above a key) at p.yaml:7:5",
		"stream ORDERS: replicas-even (above a nested key) at p.yaml:10:7",
		"stream ORDERS: replicas-even (on a nested line) at p.yaml:11:21",
		"stream ORDERS: workqueue-mirrored (after a flow list on two lines) at p.yaml:14:18",
		"stream AUDIT: interest-no-consumers (above the second item) at p.yaml:17:3",
	})
}

// A nested consumer's comments are the consumer's; the stream's lines
// around its consumers list stay the stream's.
func TestIgnoresOfNestedConsumers(t *testing.T) {
	src := `streams:
  - name: ORDERS
    subjects: [orders.>]
    consumers: # jetctl:ignore interest-no-consumers on the consumers key
      # jetctl:ignore max-deliver-unlimited above the first consumer
      - name: ship
        # jetctl:ignore backoff-overrides-ack-wait inside the first consumer
        ack_wait: 30s
        backoff: [1s, 5s] # jetctl:ignore backoff-exceeds-max-deliver on its line
      - name: bill # jetctl:ignore durable-inactive-threshold on the second
        inactive_threshold: 1h
        # jetctl:ignore dead-letters-unchecked after the second consumer's last key
    # jetctl:ignore stream-unbounded after the consumers, at the stream's keys
    max_age: 1d
    # jetctl:ignore replicas-even after the stream's last key
  - name: AUDIT
    subjects: [audit.>]
consumers:
  # jetctl:ignore interest-ack-none above a top-level consumer
  - name: audit
    stream: AUDIT
`
	assertIgnores(t, ignoresOf(t, Source{Name: "p.yaml", Data: []byte(src)}), []string{
		"stream ORDERS: interest-no-consumers (on the consumers key) at p.yaml:4:16",
		"stream ORDERS: stream-unbounded (after the consumers, at the stream's keys) at p.yaml:13:5",
		"stream ORDERS: replicas-even (after the stream's last key) at p.yaml:15:5",
		"consumer ORDERS/ship: max-deliver-unlimited (above the first consumer) at p.yaml:5:7",
		"consumer ORDERS/ship: backoff-overrides-ack-wait (inside the first consumer) at p.yaml:7:9",
		"consumer ORDERS/ship: backoff-exceeds-max-deliver (on its line) at p.yaml:9:27",
		"consumer ORDERS/bill: durable-inactive-threshold (on the second) at p.yaml:10:20",
		"consumer ORDERS/bill: dead-letters-unchecked (after the second consumer's last key) at p.yaml:12:9",
		"consumer AUDIT/audit: interest-ack-none (above a top-level consumer) at p.yaml:19:3",
	})
}

// The head comment of a list's first item, in every layout: yaml.v3
// could keep it on the list or on the list's key rather than on the item
// (3.0.1 does not).
func TestIgnoreAboveTheFirstItem(t *testing.T) {
	for name, src := range map[string]string{
		"indented":         "kv:\n  # jetctl:ignore kv-history-one r\n  - bucket: config\n",
		"at column 1":      "kv:\n# jetctl:ignore kv-history-one r\n  - bucket: config\n",
		"list at column 1": "kv:\n# jetctl:ignore kv-history-one r\n- bucket: config\n",
		"deeper":           "kv:\n      # jetctl:ignore kv-history-one r\n  - bucket: config\n",
		"after the dash":   "kv:\n  - # jetctl:ignore kv-history-one r\n    bucket: config\n",
		"blank line after": "kv:\n  # jetctl:ignore kv-history-one r\n\n  - bucket: config\n",
		"flow list":        "kv: [\n  # jetctl:ignore kv-history-one r\n  {bucket: config}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			got := ignoresOf(t, Source{Name: "p.yaml", Data: []byte(src)})
			col := strings.Index(strings.Split(src, "\n")[1], "#") + 1
			assertIgnores(t, got, []string{fmt.Sprintf("kv config: kv-history-one (r) at p.yaml:2:%d", col)})
		})
	}
}

// An anchored value's comments count once, where it is written: the
// loader reads an alias as its anchor's value, but its comments are not
// the aliasing resource's.
func TestIgnoresAndAliases(t *testing.T) {
	src := `streams:
  - name: A
    subjects: [a.>]
    placement: &east
      # jetctl:ignore replicas-even above an anchored key
      cluster: east # jetctl:ignore memory-single-replica in the anchor
  - name: B
    subjects: [b.>]
    placement: *east # jetctl:ignore stream-unbounded on the alias
`
	assertIgnores(t, ignoresOf(t, Source{Name: "p.yaml", Data: []byte(src)}), []string{
		"stream A: replicas-even (above an anchored key) at p.yaml:5:7",
		"stream A: memory-single-replica (in the anchor) at p.yaml:6:21",
		"stream B: stream-unbounded (on the alias) at p.yaml:9:22",
	})
}

// Comments on no resource (above a top-level key, after a list at the
// list's indentation, at the end of the file) are kept apart, for lint
// to report; other comments, and jetctl:ignore inside strings, are no
// ignores at all.
func TestStrayIgnores(t *testing.T) {
	src := `# jetctl:ignore stream-unbounded above a top-level key
kv: # jetctl:ignore kv-history-one on a top-level key
  - bucket: config
    description: "# jetctl:ignore kv-history-one in a string"
    history: 5 # a comment
    metadata:
      note: |
        # jetctl:ignore kv-history-one in a block scalar
  # jetctl:ignore kv-history-one after the list, at its indentation

# jetctl:ignore replicas-even at the end
`
	assertIgnores(t, ignoresOf(t, Source{Name: "p.yaml", Data: []byte(src)}), []string{
		"-: stream-unbounded (above a top-level key) at p.yaml:1:1",
		"-: kv-history-one (on a top-level key) at p.yaml:2:5",
		"-: kv-history-one (after the list, at its indentation) at p.yaml:9:3",
		"-: replicas-even (at the end) at p.yaml:11:1",
	})
}

// Positions name the file, count columns in characters, and survive
// CRLF line ends.
func TestIgnorePositions(t *testing.T) {
	a := "object_stores:\r\n  - bucket: files\r\n    description: \"épreuve\" # jetctl:ignore memory-single-replica née\r\n"
	b := "kv:\n  - bucket: config\n    # jetctl:ignore kv-history-one one line\n    # jetctl:ignore replicas-even  another line \n    history: 1\n"
	assertIgnores(t, ignoresOf(t, Source{Name: "a.yaml", Data: []byte(a)}, Source{Name: "dir/b.yml", Data: []byte(b)}), []string{
		"object_store files: memory-single-replica (née) at a.yaml:3:28",
		"kv config: kv-history-one (one line) at dir/b.yml:3:5",
		"kv config: replicas-even (another line) at dir/b.yml:4:5",
	})
}
