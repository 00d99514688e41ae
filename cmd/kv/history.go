package kv

import (
	"fmt"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/kv"
)

// historyValueWidth is where the table cuts values unless --full; -o json
// shows them whole.
const historyValueWidth = 60

func newHistoryCmd(f *factory.Factory) *cobra.Command {
	var full bool
	c := &cobra.Command{
		Use:   "history BUCKET KEY",
		Short: "show every revision of a key, with full values in JSON",
		Long: `Show every revision the bucket keeps of KEY, oldest first: revision, operation
(PUT, DEL, PURGE), time, size and value. A subject delete marker the server
wrote (a key's TTL or the bucket's max age passed, in a bucket with limit
markers) is the delete it stands for, with its reason: PURGE (MaxAge); JSON
gives it as "reason".

The table cuts values at 60 characters with an ellipsis (and says so on
stderr); --full shows them whole, on one line each. Binary values show as
their size. -o json, jsonl and yaml always show each value whole: a JSON
value as the document itself, other text as a string, binary values as
value_b64. KEY may be a pattern (app.*, app.>), which adds a key column.

A bucket or key that does not exist is exit 3.`,
		Example: `  jetctl kv history cfg app.config
  jetctl kv history cfg app.config --full
  jetctl kv history cfg app.config -o json
  jetctl kv history cfg 'app.>' -o jsonl --jq 'select(.op == "PUT") | .value.version'`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: bucketArg(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := kv.HistoryConfig{Bucket: args[0], Key: args[1]}
			if err := checkBucket(cfg.Bucket); err != nil {
				return err
			}
			if err := checkKeys([]string{cfg.Key}, true); err != nil {
				return err
			}
			p, err := f.Printer("table")
			if err != nil {
				return err
			}
			js, err := f.JetStream(cmd.Context())
			if err != nil {
				return err
			}
			entries, err := kv.History(cmd.Context(), js, cfg)
			if err != nil {
				return err
			}
			if p.Format == "jsonl" {
				return printItems(f, p, entries, nil)
			}
			withKey := strings.ContainsAny(cfg.Key, "*>")
			width := historyValueWidth
			if full {
				width = 0
			}
			cut := false
			err = p.Print(entries, func() []output.Table {
				t, c := historyTable(entries, withKey, width)
				cut = c
				return []output.Table{t}
			})
			if err == nil && cut {
				fmt.Fprintf(f.IO.ErrOut, "jetctl: note: values are cut at %d characters; --full or -o json shows them whole\n", historyValueWidth)
			}
			return err
		},
	}
	c.Flags().BoolVar(&full, "full", false, "in the table, show values whole instead of cut at 60 characters")
	return c
}

// historyTable is the table of revisions, values cut at width runes (0:
// whole); cut reports whether a value was.
func historyTable(entries []kv.Entry, withKey bool, width int) (t output.Table, cut bool) {
	header := []string{"revision", "op", "time", "size", "value"}
	if withKey {
		header = append([]string{"key"}, header...)
	}
	t = output.Table{Header: header}
	for _, e := range entries {
		value := "-"
		if e.Op == kv.OpPut {
			value = oneLine(e.Value, width)
			cut = cut || (width > 0 && value != oneLine(e.Value, 0))
		}
		op := string(e.Op)
		if e.Reason != "" {
			op += " (" + e.Reason + ")"
		}
		cells := []any{e.Revision, op, timeText(e.Time), humanize.IBytes(uint64(len(e.Value))), value}
		if withKey {
			cells = append([]any{e.Key}, cells...)
		}
		t.Row(cells...)
	}
	return t, cut
}

// bucketArg completes the bucket name, the first argument.
func bucketArg(f *factory.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f.CompleteBuckets()(cmd, args, toComplete)
	}
}
