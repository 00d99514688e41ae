package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"gopkg.in/yaml.v3"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/units"
)

// ExportOptions select what Export writes.
type ExportOptions struct {
	Streams      []string
	KV           []string
	ObjectStores []string
	// All exports every stream (with its consumers), bucket and object store.
	All bool
	// LeaderWait bounds the wait for a stream or consumer without a leader
	// (see FetchLive).
	LeaderWait time.Duration
}

// NotFoundError is a selected resource that does not exist.
type NotFoundError struct {
	Label string
}

func (e *NotFoundError) Error() string { return e.Label + " not found" }

// Unwrap makes a NotFoundError an errkind.NotFound.
func (e *NotFoundError) Unwrap() error { return errkind.NotFound }

// Export reads the selected live resources and writes them as a YAML plan
// file: server defaults and server metadata left out, durations and sizes
// human-readable, consumers nested under their streams. Planning the
// result against the same server shows no changes.
func Export(ctx context.Context, js jetstream.JetStream, opts ExportOptions) ([]byte, error) {
	root, err := ExportNode(ctx, js, opts)
	if err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return []byte("{}\n"), nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ExportJSON is Export's document as JSON, in the same order: also a plan
// file (YAML reads JSON). Unlike the YAML, it always has the lists
// streams, kv, object_stores and each stream's consumers, [] when empty,
// so that `--jq '.kv[]'` works on any server.
func ExportJSON(ctx context.Context, js jetstream.JetStream, opts ExportOptions) (json.RawMessage, error) {
	root, err := ExportNode(ctx, js, opts)
	if err != nil {
		return nil, err
	}
	return appendNodeJSON(nil, withEmptyLists(root))
}

// withEmptyLists adds the lists an export document leaves out when empty.
func withEmptyLists(root *yaml.Node) *yaml.Node {
	get := func(m *yaml.Node, key string) *yaml.Node {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == key {
				return m.Content[i+1]
			}
		}
		return nil
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	for _, key := range []string{"streams", "kv", "object_stores"} {
		seq := get(root, key)
		if seq == nil {
			seq = &yaml.Node{Kind: yaml.SequenceNode}
		}
		if key == "streams" {
			for _, s := range seq.Content {
				if get(s, "consumers") == nil {
					s.Content = append(s.Content, scalar("consumers"), &yaml.Node{Kind: yaml.SequenceNode})
				}
			}
		}
		out.Content = append(out.Content, scalar(key), seq)
	}
	return out
}

// ExportNode is Export's document as a YAML node tree.
func ExportNode(ctx context.Context, js jetstream.JetStream, opts ExportOptions) (*yaml.Node, error) {
	selected := map[string]bool{}
	for _, s := range opts.Streams {
		selected[s] = true
	}
	live, err := FetchLive(ctx, js, func(stream string) bool { return opts.All || selected[stream] }, opts.LeaderWait)
	if err != nil {
		return nil, err
	}
	var streams, kvs, objs []string
	if opts.All {
		for name := range live.Streams {
			switch kind, short := kindOfStream(name); kind {
			case KindKV:
				kvs = append(kvs, short)
			case KindObjectStore:
				objs = append(objs, short)
			default:
				streams = append(streams, name)
			}
		}
	} else {
		streams, kvs, objs = opts.Streams, opts.KV, opts.ObjectStores
	}
	sort.Strings(streams)
	sort.Strings(kvs)
	sort.Strings(objs)

	root := &yaml.Node{Kind: yaml.MappingNode}
	if len(streams) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, name := range streams {
			si := live.Streams[name]
			if si == nil || isBucketStream(name) {
				return nil, &NotFoundError{Label: resourceLabel(KindStream, "", name)}
			}
			m := exportNode(KindStream, &si.Config, nil, "name")
			if cs := exportConsumers(live, &si.Config); len(cs.Content) > 0 {
				m.Content = append(m.Content, scalar("consumers"), cs)
			}
			seq.Content = append(seq.Content, m)
		}
		root.Content = append(root.Content, scalar("streams"), seq)
	}
	if len(kvs) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, name := range kvs {
			cfg, _ := live.liveConfig(KindKV, "", name).(*jetstream.KeyValueConfig)
			if cfg == nil {
				return nil, &NotFoundError{Label: resourceLabel(KindKV, "", name)}
			}
			seq.Content = append(seq.Content, exportNode(KindKV, cfg, nil, "bucket"))
		}
		root.Content = append(root.Content, scalar("kv"), seq)
	}
	if len(objs) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, name := range objs {
			cfg, _ := live.liveConfig(KindObjectStore, "", name).(*jetstream.ObjectStoreConfig)
			if cfg == nil {
				return nil, &NotFoundError{Label: resourceLabel(KindObjectStore, "", name)}
			}
			seq.Content = append(seq.Content, exportNode(KindObjectStore, cfg, nil, "bucket"))
		}
		root.Content = append(root.Content, scalar("object_stores"), seq)
	}
	return root, nil
}

// appendNodeJSON writes an export node tree as JSON: mappings as objects in
// their order, sequences as arrays, and scalars by the tags export gives
// them (!!int and !!bool as they are, everything else a string). Strings
// leave <, > and & as they are: subjects such as orders.> stay readable.
func appendNodeJSON(buf []byte, n *yaml.Node) ([]byte, error) {
	switch n.Kind {
	case yaml.MappingNode:
		buf = append(buf, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = envelope.AppendJSONString(buf, n.Content[i].Value)
			buf = append(buf, ':')
			var err error
			if buf, err = appendNodeJSON(buf, n.Content[i+1]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case yaml.SequenceNode:
		buf = append(buf, '[')
		for i, c := range n.Content {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendNodeJSON(buf, c); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!int", "!!bool":
			return append(buf, n.Value...), nil
		}
		return envelope.AppendJSONString(buf, n.Value), nil
	}
	return nil, fmt.Errorf("export: unexpected YAML node kind %v", n.Kind)
}

func exportConsumers(live *Live, stream *jetstream.StreamConfig) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	consumers := live.Consumers[stream.Name]
	names := make([]string, 0, len(consumers))
	for name, ci := range consumers {
		// A mirror's or a sourcing stream's consumer is durable from 2.14
		// on, but the server's: a plan file declaring it would have apply
		// create a stray push consumer on another server.
		if ci.Config.Durable != "" && !jsapi.ReplicationConsumer(ci.Config.Metadata) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		seq.Content = append(seq.Content, exportNode(KindConsumer, &consumers[name].Config, stream, "name"))
	}
	return seq
}

// exportNode writes cfg without the fields that are at their defaults: a
// field is left out when the config without it normalises to the same.
func exportNode(kind Kind, cfg any, stream *jetstream.StreamConfig, idField string) *yaml.Node {
	ptr := reflect.New(reflect.TypeOf(cfg).Elem())
	ptr.Elem().Set(reflect.ValueOf(cfg).Elem())
	cur := ptr.Interface()
	// Metadata jetctl or the server wrote is not configuration.
	md := ptr.Elem().FieldByName("Metadata")
	if md.IsValid() {
		cleaned := cleanMetadata(md.Interface().(map[string]string))
		md.Set(reflect.ValueOf(cleaned))
	}
	if kind == KindConsumer {
		c := cur.(*jetstream.ConsumerConfig)
		c.Durable = ""
		// Normalised filters compare the same whichever field holds them.
		if c.FilterSubject == "" && len(c.FilterSubjects) == 1 {
			c.FilterSubject, c.FilterSubjects = c.FilterSubjects[0], nil
		}
	}
	if kind == KindStream {
		c := cur.(*jetstream.StreamConfig)
		c.MirrorDirect = false
	}
	want := view(kind, cur, stream)
	for _, f := range fieldsOf(ptr.Elem().Type()) {
		if f.Name == idField {
			continue
		}
		fv := ptr.Elem().Field(f.Index)
		if fv.IsZero() {
			continue
		}
		saved := reflect.New(fv.Type()).Elem()
		saved.Set(fv)
		fv.Set(reflect.Zero(fv.Type()))
		if !reflect.DeepEqual(view(kind, cur, stream), want) {
			fv.Set(saved)
		}
	}
	g := generic(cur)
	// A zero value is what an absent field decodes to: the enums' first
	// values (retention limits, ack_policy explicit, ...) are defaults.
	for _, f := range fieldsOf(ptr.Elem().Type()) {
		if f.Name != idField && ptr.Elem().Field(f.Index).IsZero() {
			delete(g, f.Name)
		}
	}
	dropEmpty(g)
	if kind == KindConsumer {
		delete(g, "durable_name")
	}
	return mappingNode(kind, ptr.Elem().Type(), g, idField)
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

// mappingNode writes g in the order of t's fields, the identity first.
func mappingNode(kind Kind, t reflect.Type, g map[string]any, idField string) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	names := []string{}
	if idField != "" {
		names = append(names, idField)
	}
	for _, f := range fieldsOf(t) {
		if f.Name != idField {
			names = append(names, f.Name)
		}
	}
	for _, name := range names {
		v, ok := g[name]
		if !ok {
			continue
		}
		var ft reflect.Type
		if sf, ok := fieldByJSON(t, name); ok {
			ft = sf
		}
		m.Content = append(m.Content, scalar(name), valueNode(kind, name, ft, v))
	}
	return m
}

func fieldByJSON(t reflect.Type, name string) (reflect.Type, bool) {
	for _, f := range fieldsOf(t) {
		if f.Name == name {
			return f.Type, true
		}
	}
	return nil, false
}

func valueNode(kind Kind, name string, t reflect.Type, v any) *yaml.Node {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) && t != durationType {
		if t.Kind() == reflect.Slice {
			break
		}
		t = t.Elem()
	}
	switch x := v.(type) {
	case map[string]any:
		if t != nil && t.Kind() == reflect.Struct {
			return mappingNode(kind, t, x, "")
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		m := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range keys {
			m.Content = append(m.Content, scalar(k), valueNode(kind, k, nil, x[k]))
		}
		return m
	case []any:
		seq := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		var et reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			et = t.Elem()
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
		}
		for _, e := range x {
			n := valueNode(kind, name, et, e)
			if n.Kind == yaml.MappingNode {
				seq.Style = 0
			}
			seq.Content = append(seq.Content, n)
		}
		return seq
	case json.Number:
		i, err := x.Int64()
		if err == nil && (t == durationType || durationFields[kind][name]) {
			return scalar(units.FormatDuration(time.Duration(i)))
		}
		if err == nil && sizeFieldsByKind[kind][name] && i > 0 && units.FormatSize(i) != fmt.Sprint(i) {
			return scalar(units.FormatSize(i))
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: x.String()}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(x)}
	case string:
		return scalar(x)
	}
	return scalar(fmt.Sprint(v))
}
