// Package kv implements `jetctl kv`: history, diff and tail of KV buckets.
// The commands parse and check their flags, call pkg/kv, and render.
package kv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/kv"
)

// NewCmd returns `jetctl kv`.
func NewCmd(f *factory.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "kv",
		Short: "inspect KV buckets: history, diffs and filtered tails",
		Long: `Inspect NATS KV buckets with JSON in mind.

  history  every revision of a key, full values in JSON
  diff     two revisions of a key, a bucket at two times, or two buckets
  tail     follow a bucket as JSON lines, with a jq filter, --count and --wait

Values that are JSON are shown and compared as JSON, other text as text, and
anything else as bytes (sizes and SHA-256 hashes, or base64 in tails).`,
		Example: `  jetctl kv history cfg app.config
  jetctl kv diff cfg app.config
  jetctl kv diff cfg --since 1h --exit-code
  jetctl kv tail cfg deploy.status --filter '.value.state == "ready"' --count 1 --wait 5m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	c.AddCommand(newHistoryCmd(f), newDiffCmd(f), newTailCmd(f))
	return c
}

// checkBucket and checkKeys are usage errors (exit 2) found before
// connecting.
func checkBucket(name string) error {
	if err := kv.ValidateBucket(name); err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	return nil
}

func checkKeys(patterns []string, wildcards bool) error {
	for _, p := range patterns {
		if err := kv.ValidateKeyPattern(p, wildcards); err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
	}
	return nil
}

// printData writes v in the chosen format. In the default table format
// (and without --jq) text renders it for people instead: diffs read better
// as lines than as a table.
func printData(f *factory.Factory, p *output.Printer, v any, text func(w io.Writer)) error {
	if p.Format == "table" && f.Output.JQ == "" {
		// A diff of a big bucket is many lines: write them in blocks.
		w := bufio.NewWriterSize(f.IO.Out, 64<<10)
		text(w)
		return w.Flush()
	}
	return p.Print(v, nil)
}

// printItems writes a list; with -o jsonl each element is its own line and
// --jq applies to each, as in a tail.
func printItems[T any](f *factory.Factory, p *output.Printer, items []T, text func(w io.Writer)) error {
	if p.Format == "jsonl" {
		for _, item := range items {
			if err := p.Item(item); err != nil {
				return err
			}
		}
		return nil
	}
	return printData(f, p, items, text)
}

// oneLine renders a value for a table cell or a diff line: JSON compact
// (keys in their stored order),
// text with escaped newlines, binary as its size, cut to width runes with
// an ellipsis.
func oneLine(value []byte, width int) string {
	var s string
	switch kv.KindOf(value) {
	case kv.KindJSON:
		var b bytes.Buffer
		if err := json.Compact(&b, value); err != nil {
			return "(" + plural(len(value), "byte", "bytes") + ")"
		}
		s = b.String()
	case kv.KindText:
		s = strconv.Quote(string(value))
		s = s[1 : len(s)-1]
	default:
		return "(binary, " + plural(len(value), "byte", "bytes") + ")"
	}
	if width > 0 && utf8.RuneCountInString(s) > width {
		r := []rune(s)
		s = string(r[:width-1]) + "…"
	}
	return s
}

func timeText(t time.Time) string { return t.UTC().Format(time.RFC3339) }
