package plan

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"gopkg.in/yaml.v3"

	"github.com/jetctl/jetctl/pkg/suggest"
	"github.com/jetctl/jetctl/pkg/units"
)

// Problem is one thing wrong with the plan files, at a position.
type Problem struct {
	Pos     Pos
	Message string
	// Rule is the id of the jetctl lint rule that names the same
	// mistake, when one does (workqueue-ack-none): lint reports the
	// problem under it.
	Rule string
}

func (p Problem) String() string {
	if p.Pos.File == "" {
		return p.Message
	}
	return p.Pos.String() + ": " + p.Message
}

// ValidationError lists every problem found in the plan files.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].String()
	}
	return fmt.Sprintf("%s (and %d more problems)", e.Problems[0], len(e.Problems)-1)
}

// Source is one plan file's name and content.
type Source struct {
	Name string
	Data []byte
}

// LookupFunc returns a variable's value and whether it is defined. Load
// may call it from several goroutines at once.
type LookupFunc func(name string) (string, bool)

// SourceError is a plan file or directory that cannot be read.
type SourceError struct {
	// Path is the file or directory as given (or found in a directory).
	Path string
	Err  error
}

func (e *SourceError) Error() string { return e.Err.Error() }

func (e *SourceError) Unwrap() error { return e.Err }

// ReadSources reads plan files: each path is a file, or a directory whose
// *.yaml and *.yml files are read in name order. A path that cannot be
// read is a *SourceError.
func ReadSources(paths []string) ([]Source, error) {
	var out []Source
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, &SourceError{p, fmt.Errorf("plan file %s: %w", p, unwrapPathError(err))}
		}
		files := []string{p}
		if st.IsDir() {
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, &SourceError{p, fmt.Errorf("plan directory %s: %w", p, unwrapPathError(err))}
			}
			files = files[:0]
			for _, e := range entries {
				ext := strings.ToLower(filepath.Ext(e.Name()))
				if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
			sort.Strings(files)
			if len(files) == 0 {
				return nil, &SourceError{p, fmt.Errorf("plan directory %s holds no *.yaml or *.yml files", p)}
			}
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, &SourceError{f, fmt.Errorf("plan file %s: %w", f, unwrapPathError(err))}
			}
			out = append(out, Source{Name: f, Data: data})
		}
	}
	return out, nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// Load parses and validates plan files. Every problem is reported, in
// file and line order, in a *ValidationError.
func Load(sources []Source, lookup LookupFunc) (*Desired, error) {
	l := &loader{lookup: lookup, desired: &Desired{}, badVars: map[*yaml.Node]bool{}}
	// Each file is read on its own, in parallel; then their resources
	// and problems are put together in file order, as if read one after
	// the other, and validated together.
	files := make([]*loader, len(sources))
	forEach(len(sources), func(i int) {
		fl := &loader{lookup: lookup, desired: &Desired{}, badVars: map[*yaml.Node]bool{}, file: sources[i].Name}
		fl.loadFile(sources[i].Data)
		files[i] = fl
	})
	fileIndex := make(map[string]int, len(sources))
	for i, fl := range files {
		l.desired.Files = append(l.desired.Files, fl.file)
		if _, dup := fileIndex[fl.file]; !dup {
			fileIndex[fl.file] = i
		}
		l.desired.Resources = append(l.desired.Resources, fl.desired.Resources...)
		l.desired.StrayIgnores = append(l.desired.StrayIgnores, fl.desired.StrayIgnores...)
		l.problems = append(l.problems, fl.problems...)
	}
	l.validate()
	if len(l.problems) > 0 {
		index := func(f string) int {
			if i, ok := fileIndex[f]; ok {
				return i
			}
			return len(sources)
		}
		sort.SliceStable(l.problems, func(i, j int) bool {
			a, b := l.problems[i].Pos, l.problems[j].Pos
			if a.File != b.File {
				return index(a.File) < index(b.File)
			}
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Column < b.Column
		})
		return nil, &ValidationError{Problems: l.problems}
	}
	return l.desired, nil
}

// forEach calls f(0) to f(n-1), on as many goroutines as there are
// processors.
func forEach(n int, f func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

type loader struct {
	// badVars are scalars with undefined variables, already reported.
	badVars    map[*yaml.Node]bool
	aliasDepth int
	lookup     LookupFunc
	file       string
	desired    *Desired
	problems   []Problem
	// owners are the current file's resources, by their mapping node.
	owners map[*yaml.Node]*Resource
}

func (l *loader) pos(n *yaml.Node) Pos { return Pos{File: l.file, Line: n.Line, Column: n.Column} }

func (l *loader) problem(n *yaml.Node, format string, args ...any) {
	l.problems = append(l.problems, Problem{Pos: l.pos(n), Message: fmt.Sprintf(format, args...)})
}

func (l *loader) problemAt(p Pos, format string, args ...any) {
	l.problems = append(l.problems, Problem{Pos: p, Message: fmt.Sprintf(format, args...)})
}

const maxAliasDepth = 8

var topLevelKeys = []string{"consumers", "kv", "object_stores", "streams"}

func (l *loader) loadFile(data []byte) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		l.problems = append(l.problems, yamlProblem(l.file, err))
		return
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return
	}
	l.expand(&doc)
	l.owners = map[*yaml.Node]*Resource{}
	defer scanIgnores(l.file, data, &doc, l.owners, &l.desired.StrayIgnores)
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return
	}
	if root.Kind != yaml.MappingNode {
		l.problem(root, "a plan file is a mapping with streams, kv, object_stores and consumers")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		if seen[key.Value] {
			l.problem(key, "%q appears twice", key.Value)
			continue
		}
		seen[key.Value] = true
		if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
			continue
		}
		switch key.Value {
		case "streams", "kv", "object_stores", "consumers":
		default:
			msg := fmt.Sprintf("unknown top-level key %q", key.Value)
			if sug := suggest.Closest(key.Value, topLevelKeys); sug != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", sug)
			} else {
				msg += " (use streams, kv, object_stores or consumers)"
			}
			l.problem(key, "%s", msg)
			continue
		}
		if val.Kind != yaml.SequenceNode {
			l.problem(val, "%s: expected a list, got %s", key.Value, describe(val))
			continue
		}
		for _, item := range val.Content {
			switch key.Value {
			case "streams":
				l.stream(item)
			case "kv":
				l.simple(item, KindKV, kvConfigType)
			case "object_stores":
				l.simple(item, KindObjectStore, objectConfigType)
			case "consumers":
				l.consumer(item, "", nil)
			}
		}
	}
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlProblem turns a YAML syntax error into a positioned problem.
func yamlProblem(file string, err error) Problem {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Pos: Pos{File: file, Line: line, Column: 1}, Message: "invalid YAML: " + m[2]}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return Problem{Pos: Pos{File: file, Line: 1, Column: 1}, Message: "invalid YAML: " + msg}
}

func (l *loader) unknownField(key *yaml.Node, label string, names []string) {
	prefix := ""
	if label != "" {
		prefix = label + ": "
	}
	if s := suggest.Closest(key.Value, names); s != "" {
		l.problem(key, "%sunknown field %q (did you mean %q?)", prefix, key.Value, s)
		return
	}
	l.problem(key, "%sunknown field %q", prefix, key.Value)
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return strconv.Quote(n.Value)
}

// mappingValue returns the value of key in a mapping node.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// nameOf reads the identity field of a resource mapping.
func (l *loader) nameOf(m *yaml.Node, kind Kind, keys ...string) (string, bool) {
	for _, k := range keys {
		if v := mappingValue(m, k); v != nil && v.Kind == yaml.ScalarNode && v.Tag != "!!null" && v.Value != "" {
			return v.Value, true
		}
	}
	l.problem(m, "%s: %s is required", kind, keys[0])
	return "", false
}

func (l *loader) newResource(kind Kind, m *yaml.Node, stream, name string) *Resource {
	// Most fields' positions are recorded, plus one per list item.
	r := &Resource{Kind: kind, Name: name, Stream: stream, Pos: l.pos(m), FieldPos: make(map[string]Pos, len(m.Content)/2+4)}
	l.owners[m] = r
	return r
}

func (l *loader) stream(m *yaml.Node) {
	if m.Kind != yaml.MappingNode {
		l.problem(m, "streams: expected a mapping for each stream, got %s", describe(m))
		return
	}
	name, ok := l.nameOf(m, KindStream, "name")
	if !ok {
		return
	}
	r := l.newResource(KindStream, m, "", name)
	var consumers *yaml.Node
	generic := l.object(m, streamConfigType, "", r, r.Label(), map[string]*yaml.Node{"consumers": nil}, func(key string, val *yaml.Node) {
		consumers = val
	})
	r.StreamConfig = decodeTyped[jetstream.StreamConfig](l, m, r, generic)
	if r.StreamConfig != nil {
		l.desired.Resources = append(l.desired.Resources, r)
	}
	if consumers == nil || (consumers.Kind == yaml.ScalarNode && consumers.Tag == "!!null") {
		return
	}
	if consumers.Kind != yaml.SequenceNode {
		l.problem(consumers, "%s: consumers: expected a list, got %s", r.Label(), describe(consumers))
		return
	}
	for _, c := range consumers.Content {
		l.consumer(c, name, consumers)
	}
}

// consumer reads a consumer nested under stream, or a top-level one
// (stream == "") that names its stream.
func (l *loader) consumer(m *yaml.Node, stream string, parent *yaml.Node) {
	if m.Kind != yaml.MappingNode {
		l.problem(m, "consumers: expected a mapping for each consumer, got %s", describe(m))
		return
	}
	extra := map[string]*yaml.Node{}
	if parent == nil {
		extra["stream"] = nil
		v := mappingValue(m, "stream")
		if v == nil || v.Kind != yaml.ScalarNode || v.Value == "" {
			l.problem(m, "consumer: stream is required for a consumer outside a stream's consumers list")
			return
		}
		stream = v.Value
	}
	name, ok := l.nameOf(m, KindConsumer, "name", "durable_name")
	if !ok {
		return
	}
	r := l.newResource(KindConsumer, m, stream, name)
	generic := l.object(m, consumerConfigType, "", r, r.Label(), extra, nil)
	cfg := decodeTyped[jetstream.ConsumerConfig](l, m, r, generic)
	if cfg == nil {
		return
	}
	if cfg.Name != "" && cfg.Durable != "" && cfg.Name != cfg.Durable {
		l.problemAt(r.FieldPos["durable_name"], "%s: name and durable_name differ (%q, %q); give one", r.Label(), cfg.Name, cfg.Durable)
	}
	cfg.Name, cfg.Durable = name, name
	r.ConsumerConfig = cfg
	l.desired.Resources = append(l.desired.Resources, r)
}

// simple reads a KV bucket or an object store.
func (l *loader) simple(m *yaml.Node, kind Kind, t reflect.Type) {
	if m.Kind != yaml.MappingNode {
		l.problem(m, "%s: expected a mapping for each entry, got %s", kind, describe(m))
		return
	}
	name, ok := l.nameOf(m, kind, "bucket")
	if !ok {
		return
	}
	r := l.newResource(kind, m, "", name)
	generic := l.object(m, t, "", r, r.Label(), nil, nil)
	switch kind {
	case KindKV:
		r.KeyValueConfig = decodeTyped[jetstream.KeyValueConfig](l, m, r, generic)
		if r.KeyValueConfig == nil {
			return
		}
	case KindObjectStore:
		r.ObjectStoreConfig = decodeTyped[jetstream.ObjectStoreConfig](l, m, r, generic)
		if r.ObjectStoreConfig == nil {
			return
		}
	}
	l.desired.Resources = append(l.desired.Resources, r)
}

// decodeTyped turns the validated generic form into the typed config.
func decodeTyped[T any](l *loader, m *yaml.Node, r *Resource, generic map[string]any) *T {
	if generic == nil {
		return nil
	}
	data, err := json.Marshal(generic)
	if err != nil {
		l.problem(m, "%s: %v", r.Label(), err)
		return nil
	}
	var cfg T
	if err := json.Unmarshal(data, &cfg); err != nil {
		l.problem(m, "%s: %v", r.Label(), strings.TrimPrefix(err.Error(), "nats: "))
		return nil
	}
	return &cfg
}

// object converts a mapping into the generic (JSON) form of struct t,
// reporting unknown fields and bad values. extra are keys handled by the
// caller (passed to onExtra).
func (l *loader) object(m *yaml.Node, t reflect.Type, path string, r *Resource, label string, extra map[string]*yaml.Node, onExtra func(string, *yaml.Node)) map[string]any {
	fields := fieldSetOf(t)
	out := make(map[string]any, len(m.Content)/2)
	seen := make(map[string]bool, len(m.Content)/2)
	ok := true
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i], m.Content[i+1]
		if seen[key.Value] {
			l.problem(key, "%s: field %q appears twice", label, key.Value)
			ok = false
			continue
		}
		seen[key.Value] = true
		if _, isExtra := extra[key.Value]; isExtra && path == "" {
			if onExtra != nil {
				onExtra(key.Value, val)
			}
			continue
		}
		f, known := fields.byName[key.Value]
		if !known {
			var extraNames []string
			for k := range extra {
				extraNames = append(extraNames, k)
			}
			l.unknownField(key, label, fieldNames(fields.list, extraNames...))
			ok = false
			continue
		}
		p := joinPath(path, f.Name)
		r.FieldPos[p] = l.pos(val)
		if val.Kind == yaml.ScalarNode && val.Tag == "!!null" {
			continue
		}
		v, good := l.value(val, f.Type, p, r, label, sizeFields[t][f.Name])
		if !good {
			ok = false
			continue
		}
		out[f.Name] = v
	}
	// A partial result still goes through the other checks, so that one
	// run reports every problem; Load fails anyway.
	_ = ok
	return out
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// value converts one YAML value into the JSON form of Go type t.
func (l *loader) value(n *yaml.Node, t reflect.Type, path string, r *Resource, label string, size bool) (any, bool) {
	bad := func(format string, args ...any) (any, bool) {
		l.problem(n, "%s: %s: %s", label, path, fmt.Sprintf(format, args...))
		return nil, false
	}
	if n.Kind == yaml.AliasNode {
		// An alias may point at its own ancestor: bound how deep they go.
		if l.aliasDepth >= maxAliasDepth {
			return bad("aliases nested too deeply")
		}
		l.aliasDepth++
		defer func() { l.aliasDepth-- }()
		n = n.Alias
	}
	if l.badVars[n] {
		return nil, false
	}
	if vals, isEnum := enumValues[t]; isEnum {
		if n.Kind != yaml.ScalarNode {
			return bad("expected one of %s, got %s", strings.Join(nonEmpty(vals), ", "), describe(n))
		}
		v := strings.ToLower(n.Value)
		for _, ok := range vals {
			if v == ok {
				return v, true
			}
		}
		msg := fmt.Sprintf("invalid value %q (use one of %s", n.Value, strings.Join(nonEmpty(vals), ", "))
		if s := suggest.Closest(v, vals); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return bad("%s)", msg)
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return bad("expected a duration such as 30s or 7d, got %s", describe(n))
		}
		if n.Tag == "!!int" && n.Value != "0" {
			return bad("expected a duration with a unit, such as %ss or %sd, got %s", n.Value, n.Value, n.Value)
		}
		d, err := units.ParseDuration(n.Value)
		if err != nil {
			return bad("%v", err)
		}
		return int64(d), true
	case t == timePtrType:
		if n.Kind != yaml.ScalarNode {
			return bad("expected an RFC 3339 time, got %s", describe(n))
		}
		ts, err := time.Parse(time.RFC3339Nano, n.Value)
		if err != nil {
			return bad("invalid time %q (use RFC 3339, e.g. 2024-05-01T00:00:00Z)", n.Value)
		}
		return ts.Format(time.RFC3339Nano), true
	}
	switch t.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return bad("expected a string, got %s", describe(n))
		}
		return n.Value, true
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return bad("expected true or false, got %s", describe(n))
		}
		b, _ := strconv.ParseBool(n.Value)
		return b, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.Kind != yaml.ScalarNode {
			return bad("expected an integer, got %s", describe(n))
		}
		var v int64
		if size {
			s, err := units.ParseSize(n.Value)
			if err != nil {
				return bad("%v", err)
			}
			v = s
		} else {
			if n.Tag != "!!int" {
				return bad("expected an integer, got %s", describe(n))
			}
			i, err := strconv.ParseInt(n.Value, 0, 64)
			if err != nil {
				return bad("integer %s out of range", n.Value)
			}
			v = i
		}
		if limit := int64(1)<<(t.Bits()-1) - 1; v > limit || v < -limit-1 {
			return bad("%s is too large (at most %d)", n.Value, limit)
		}
		return v, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return bad("expected a non-negative integer, got %s", describe(n))
		}
		u, err := strconv.ParseUint(n.Value, 0, 64)
		if err != nil {
			return bad("expected a non-negative integer, got %s", n.Value)
		}
		if t.Bits() < 64 && u > uint64(1)<<t.Bits()-1 {
			return bad("%d is too large (at most %d)", u, uint64(1)<<t.Bits()-1)
		}
		if u > math.MaxInt64 {
			return bad("%d is too large", u)
		}
		return u, true
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return bad("expected a list, got %s", describe(n))
		}
		out := make([]any, 0, len(n.Content))
		ok := true
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			r.FieldPos[p] = l.pos(item)
			v, good := l.value(item, t.Elem(), p, r, label, false)
			if !good {
				ok = false
				continue
			}
			out = append(out, v)
		}
		return out, ok
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return bad("expected a mapping, got %s", describe(n))
		}
		out := map[string]any{}
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := path + "." + k.Value
			r.FieldPos[p] = l.pos(v)
			if v.Kind != yaml.ScalarNode {
				l.problem(v, "%s: %s: expected a string, got %s", label, p, describe(v))
				ok = false
				continue
			}
			out[k.Value] = v.Value
		}
		return out, ok
	case reflect.Pointer:
		return l.value(n, t.Elem(), path, r, label, size)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return bad("expected a mapping, got %s", describe(n))
		}
		before := len(l.problems)
		obj := l.object(n, t, path, r, label, nil, nil)
		return obj, len(l.problems) == before
	}
	return bad("unsupported field type %s", t)
}

func nonEmpty(vals []string) []string {
	var out []string
	for _, v := range vals {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

var varRe = regexp.MustCompile(`\$\$\{|\$\{([^}]*)\}`)
var varNameRe = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$`)

// expand replaces ${VAR} and ${VAR:-default} in every scalar value; $${
// is a literal ${. A value that came from a variable is typed again, so
// that "max_msgs: ${LIMIT}" is an integer.
func (l *loader) expand(n *yaml.Node) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			l.expand(c)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			l.expand(n.Content[i])
		}
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		out := varRe.ReplaceAllStringFunc(n.Value, func(m string) string {
			if m == "$${" {
				return "${"
			}
			sub := varNameRe.FindStringSubmatch(m[2 : len(m)-1])
			if sub == nil {
				l.problem(n, "invalid variable reference %q", m)
				return m
			}
			if v, ok := l.lookup(sub[1]); ok && (v != "" || !strings.Contains(m, ":-")) {
				return v
			}
			if strings.Contains(m, ":-") {
				return sub[2]
			}
			l.problem(n, "undefined variable %q (set it in the environment or with --var %s=VALUE)", sub[1], sub[1])
			l.badVars[n] = true
			return m
		})
		if out != n.Value {
			n.Value = out
			n.Tag = resolveTag(out)
			n.Style = 0
		}
	}
}

var intRe = regexp.MustCompile(`^-?[0-9]+$`)

func resolveTag(v string) string {
	switch {
	case v == "true" || v == "false":
		return "!!bool"
	case intRe.MatchString(v):
		return "!!int"
	}
	return "!!str"
}
