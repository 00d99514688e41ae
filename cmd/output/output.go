// Package output renders command results in the format the user chose:
// a table for people, or JSON, JSON lines or YAML for programs, optionally
// transformed by a jq program. Every command prints its data through it.
package output

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"gopkg.in/yaml.v3"

	"github.com/jetctl/jetctl/cmd/exitcode"
)

// Formats lists the values -o accepts.
var Formats = []string{"table", "json", "jsonl", "yaml"}

// Options are the global output flags.
type Options struct {
	Format string
	JQ     string
}

// Printer writes results to Out.
type Printer struct {
	Out    io.Writer
	Format string
	// Color is true when Out is a terminal and NO_COLOR is not set.
	Color bool
	// Context is the command's: it stops a --jq program that runs long
	// (`def f: f; f`) when the command is interrupted. nil is
	// context.Background().
	Context context.Context
	jq      *gojq.Code
}

// CompileJQ compiles a jq program; a bad program is a usage error (exit 2).
func CompileJQ(expr string) (*gojq.Code, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		return nil, exitcode.UsageErrorf("invalid jq program %q: %v", expr, err)
	}
	code, err := gojq.Compile(q, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, exitcode.UsageErrorf("invalid jq program %q: %v", expr, err)
	}
	return code, nil
}

// NewPrinter validates the options. defaultFormat applies when -o was not
// given; with --jq and no -o the result is JSON.
func NewPrinter(o Options, out io.Writer, color bool, defaultFormat string) (*Printer, error) {
	p := &Printer{Out: out, Format: o.Format, Color: color}
	if p.Format == "" {
		p.Format = defaultFormat
		if o.JQ != "" && p.Format == "table" {
			p.Format = "json"
		}
	}
	if !validFormat(p.Format) {
		return nil, exitcode.UsageErrorf("invalid output format %q: use one of %s", p.Format, strings.Join(Formats, ", "))
	}
	if o.JQ != "" {
		code, err := CompileJQ(o.JQ)
		if err != nil {
			return nil, err
		}
		p.jq = code
	}
	return p, nil
}

// RequireLines is the one -o rule of the commands that stream messages as
// JSON lines (replay, stream tail, kv tail): -o jsonl (their default) and
// -o json both give JSON lines, one object a line; -o table and -o yaml
// cannot describe an endless stream and are refused (exit 2).
func (p *Printer) RequireLines(command string) error {
	if p.Format == "json" || p.Format == "jsonl" {
		return nil
	}
	return exitcode.UsageErrorf("%s writes JSON lines: -o %s is not supported", command, p.Format)
}

func validFormat(f string) bool {
	for _, v := range Formats {
		if v == f {
			return true
		}
	}
	return false
}

// AppendJQ runs the --jq program on a value already in generic JSON form
// (maps, slices, strings, numbers) and appends its output lines to buf.
func (p *Printer) AppendJQ(buf []byte, generic any) ([]byte, error) {
	w := bytes.NewBuffer(buf)
	saved := p.Out
	p.Out = w
	err := p.runJQ(generic)
	p.Out = saved
	return w.Bytes(), err
}

// LineWriter buffers lines for a stream of results and flushes them at
// least every FlushEvery, so that a follower (a tail) shows each line
// promptly without a write per line when lines come fast.
type LineWriter struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// FlushEvery bounds how long a written line may wait in the buffer.
const FlushEvery = 100 * time.Millisecond

// NewLineWriter starts a LineWriter on w; Close flushes and stops it.
func NewLineWriter(w io.Writer) *LineWriter {
	lw := &LineWriter{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(lw.done)
		t := time.NewTicker(FlushEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				lw.mu.Lock()
				lw.w.Flush()
				lw.mu.Unlock()
			case <-lw.stop:
				return
			}
		}
	}()
	return lw
}

// Write buffers p.
func (lw *LineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

// Close flushes what is buffered and stops the background flushes.
func (lw *LineWriter) Close() error {
	close(lw.stop)
	<-lw.done
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Flush()
}

// Table is a table under construction.
type Table struct {
	Header []string
	Rows   [][]string
}

// Row appends a row; values are formatted with fmt.Sprint.
func (t *Table) Row(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = Escape(fmt.Sprint(c))
	}
	t.Rows = append(t.Rows, row)
}

// Print writes v. In table format, table renders it for people; v is what
// every other format and --jq see, through its JSON encoding.
func (p *Printer) Print(v any, table func() []Table) error {
	if p.Format == "table" && p.jq == nil && table != nil {
		tables := table()
		for i, t := range tables {
			if i > 0 {
				fmt.Fprintln(p.Out)
			}
			if err := p.renderTable(t); err != nil {
				return err
			}
		}
		return nil
	}
	if p.jq != nil {
		generic, err := Generic(v)
		if err != nil {
			return err
		}
		return p.runJQ(generic)
	}
	return p.encode(v)
}

// Item writes one element of a stream of results (JSON lines): the jq
// program, if any, applies to each.
func (p *Printer) Item(v any) error {
	if p.jq != nil {
		generic, err := Generic(v)
		if err != nil {
			return err
		}
		return p.runJQ(generic)
	}
	return writeJSON(p.Out, v, false)
}

func (p *Printer) runJQ(input any) error {
	ctx := p.Context
	if ctx == nil {
		ctx = context.Background()
	}
	iter := p.jq.RunWithContext(ctx, input)
	for {
		v, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, isErr := v.(error); isErr {
			if he, ok := err.(*gojq.HaltError); ok && he.Value() == nil {
				return nil
			}
			return fmt.Errorf("jq: %w", err)
		}
		// Like `jq -r` and gh: strings print raw, everything else as JSON.
		if s, ok := v.(string); ok {
			fmt.Fprintln(p.Out, s)
			continue
		}
		if err := writeJSON(p.Out, v, p.Format == "json"); err != nil {
			return err
		}
	}
}

// encode writes v in the chosen format, keeping its field order.
func (p *Printer) encode(v any) error {
	switch p.Format {
	case "json", "table":
		return writeJSON(p.Out, v, true)
	case "jsonl":
		data, err := marshalJSON(v)
		if err != nil {
			return err
		}
		var items []json.RawMessage
		if len(data) > 0 && data[0] == '[' && json.Unmarshal(data, &items) == nil {
			for _, item := range items {
				if err := writeJSON(p.Out, item, false); err != nil {
					return err
				}
			}
			return nil
		}
		return writeJSON(p.Out, json.RawMessage(data), false)
	case "yaml":
		node, err := yamlNode(v)
		if err != nil {
			return err
		}
		enc := yaml.NewEncoder(p.Out)
		enc.SetIndent(2)
		if err := enc.Encode(node); err != nil {
			return err
		}
		return enc.Close()
	}
	return fmt.Errorf("unknown format %q", p.Format)
}

func (p *Printer) renderTable(t Table) error {
	header := make([]string, len(t.Header))
	for i, h := range t.Header {
		header[i] = strings.ToUpper(h)
		if p.Color {
			header[i] = "\x1b[1m" + header[i] + "\x1b[0m"
		}
	}
	var buf bytes.Buffer
	tbl := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Symbols: tw.NewSymbols(tw.StyleNone),
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off, ShowHeader: tw.Off},
				Lines:      tw.LinesNone,
			},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
		tablewriter.WithTrimSpace(tw.Off),
	)
	tbl.Header(header)
	if err := tbl.Bulk(t.Rows); err != nil {
		return err
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	// The last column's padding would leave trailing blanks on every line.
	lines := strings.SplitAfter(buf.String(), "\n")
	for _, line := range lines {
		trimmed := strings.TrimRight(line, " \n")
		if strings.HasSuffix(line, "\n") {
			trimmed += "\n"
		}
		if _, err := io.WriteString(p.Out, trimmed); err != nil {
			return err
		}
	}
	return nil
}

// Generic turns v into what json.Unmarshal (with UseNumber) gives for its
// encoding, the form jq works on.
func Generic(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	// gojq takes json.Number as it is, so large integers stay exact.
	return generic, nil
}

// marshalJSON is json.Marshal without the escaping of <, > and &, as
// writeJSON writes: subjects such as orders.> stay readable.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func writeJSON(w io.Writer, v any, indent bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// yamlNode converts v through its JSON encoding into a YAML node, keeping
// the field order of the JSON (a map would sort it).
func yamlNode(v any) (*yaml.Node, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return decodeNode(dec)
}

func decodeNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				keyTok, err := dec.Token()
				if err != nil {
					return nil, err
				}
				val, err := decodeNode(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: keyTok.(string)}, val)
			}
			_, err := dec.Token()
			return n, err
		}
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for dec.More() {
			val, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, val)
		}
		_, err := dec.Token()
		return n, err
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}
