package dlq

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
)

type lsOptions struct {
	streamFlags
	consumer string
	since    time.Duration
	filter   string
	listFlags
}

func newCmdLs(f *factory.Factory) *cobra.Command {
	o := &lsOptions{}
	cmd := &cobra.Command{
		Use:   "ls [--stream S] [--consumer C] [--since D] [--filter EXPR] [--list]",
		Short: "count or list the messages in DLQ streams",
		Long: `Count DLQ messages by DLQ stream, consumer and reason (the default in a
table, with a total on stderr; nothing to count prints the total line only),
or list them with --list: DLQ sequence, source stream and sequence,
original subject, consumer, reason (max_deliver or terminated), deliveries,
when it was swept and its payload's size. -o json, jsonl or yaml print the
entries (--summary: the counts). Without --stream, every DLQ stream jetctl
created.

Sizes (PAYLOAD, JSON size and bytes) count the payloads only. What the DLQ
streams store is more (each copy carries its provenance headers, and the
server its own overhead): the total line on stderr gives it, from the
streams' info, when nothing is filtered out.

--filter keeps entries for which a jq program is true; it sees the JSON
fields plus .headers and .data (decoded when JSON). Reading changes nothing.`,
		Example: `  jetctl dlq ls
  jetctl dlq ls --stream ORDERS --consumer billing --since 1h --list
  jetctl dlq ls --stream ORDERS --filter '.data.total > 100' -o json
  jetctl dlq ls --summary -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runLs(cmd.Context(), f, o) },
	}
	o.streamFlags.bind(cmd, f)
	cmd.Flags().StringVar(&o.consumer, "consumer", "", "only messages this consumer gave up on")
	factory.DurationVar(cmd.Flags(), &o.since, "since", 0, "only messages swept in this past duration (e.g. 1h, 7d)").Positive()
	cmd.Flags().StringVar(&o.filter, "filter", "", "jq program: keep entries for which it is true")
	o.listFlags.bind(cmd, "DLQ message")
	return cmd
}

type summaryRow struct {
	DLQStream string `json:"dlq_stream"`
	Consumer  string `json:"consumer"`
	Reason    string `json:"reason"`
	Messages  int    `json:"messages"`
	Bytes     int64  `json:"bytes"`
}

func runLs(ctx context.Context, f *factory.Factory, o *lsOptions) error {
	if err := o.streamFlags.validate(); err != nil {
		return err
	}
	sel, err := selection(f, o.consumer, o.since, 0, o.filter)
	if err != nil {
		return err
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	listRecords, err := o.listFlags.records(p)
	if err != nil {
		return err
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	streams, err := pkgdlq.DLQStreams(ctx, js, o.stream, o.dlqStream)
	if err != nil {
		return err
	}
	entries := []pkgdlq.Entry{}
	for _, s := range streams {
		if err := pkgdlq.Each(ctx, js, s, sel, func(e pkgdlq.Entry) error {
			entries = append(entries, e)
			return nil
		}); err != nil {
			return err
		}
	}
	// Nothing filtered out: the streams' stored size is the entries'.
	whole := o.consumer == "" && o.since == 0 && o.filter == ""
	if !listRecords {
		rows := summarise(entries)
		if p.Format == "table" {
			defer lsTotal(ctx, f, js, streams, entries, whole)
		}
		return p.Print(rows, func() []output.Table {
			if len(rows) == 0 {
				return nil
			}
			t := output.Table{Header: []string{"dlq stream", "consumer", "reason", "messages", "payload"}}
			for _, r := range rows {
				t.Row(r.DLQStream, r.Consumer, r.Reason, r.Messages, humanize.IBytes(uint64(r.Bytes)))
			}
			return []output.Table{t}
		})
	}
	if p.Format == "jsonl" {
		// One entry a line, and --jq sees each entry.
		for _, e := range entries {
			if err := p.Item(e); err != nil {
				return err
			}
		}
		return nil
	}
	if p.Format == "table" {
		defer lsTotal(ctx, f, js, streams, entries, whole)
	}
	return p.Print(entries, func() []output.Table {
		if len(entries) == 0 {
			return nil
		}
		t := output.Table{Header: []string{"dlq seq", "source", "subject", "consumer", "reason", "deliveries", "swept at", "payload"}}
		for _, e := range entries {
			name := e.DLQStream
			if len(streams) == 1 {
				name = ""
			} else {
				name += ":"
			}
			t.Row(fmt.Sprintf("%s%d", name, e.DLQSeq), fmt.Sprintf("%s:%d", e.SourceStream, e.SourceSeq), e.Subject, e.Consumer,
				e.Reason, e.Deliveries, e.SweptAt.UTC().Format(time.RFC3339), humanize.IBytes(uint64(e.Size)))
		}
		return []output.Table{t}
	})
}

// lsTotal writes the one summary line of a table listing on stderr,
// after the table: the payloads' size, and when whole (nothing filtered
// out) what the DLQ streams store, as their info says.
func lsTotal(ctx context.Context, f *factory.Factory, js jetstream.JetStream, streams []string, entries []pkgdlq.Entry, whole bool) {
	if len(streams) == 0 {
		fmt.Fprintln(f.IO.ErrOut, "jetctl: no DLQ streams (run: jetctl dlq setup --stream STREAM)")
		return
	}
	var bytes int64
	for _, e := range entries {
		bytes += int64(e.Size)
	}
	size := humanize.IBytes(uint64(bytes)) + " of payload"
	if whole {
		var stored uint64
		for _, s := range streams {
			st, err := js.Stream(ctx, s)
			if err != nil {
				stored = 0
				break
			}
			stored += st.CachedInfo().State.Bytes
		}
		if stored > 0 || len(entries) == 0 {
			size += ", " + humanize.IBytes(stored) + " stored"
		}
	}
	fmt.Fprintf(f.IO.ErrOut, "jetctl: %s (%s) in %s\n", plural(len(entries), "message", "messages"), size, strings.Join(streams, ", "))
}

func summarise(entries []pkgdlq.Entry) []summaryRow {
	type key struct{ s, c, r string }
	counts := map[key]*summaryRow{}
	for _, e := range entries {
		k := key{e.DLQStream, e.Consumer, e.Reason}
		if counts[k] == nil {
			counts[k] = &summaryRow{DLQStream: e.DLQStream, Consumer: e.Consumer, Reason: e.Reason}
		}
		counts[k].Messages++
		counts[k].Bytes += int64(e.Size)
	}
	rows := []summaryRow{}
	for _, r := range counts {
		rows = append(rows, *r)
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.DLQStream != b.DLQStream {
			return a.DLQStream < b.DLQStream
		}
		if a.Consumer != b.Consumer {
			return a.Consumer < b.Consumer
		}
		return a.Reason < b.Reason
	})
	return rows
}

// selection turns the selection flags into a pkg/dlq Select.
func selection(f *factory.Factory, consumer string, since, olderThan time.Duration, filter string) (pkgdlq.Select, error) {
	sel := pkgdlq.Select{Consumer: consumer}
	if since > 0 {
		sel.Since = time.Now().Add(-since)
	}
	if olderThan > 0 {
		sel.Before = time.Now().Add(-olderThan)
	}
	fn, err := filterFlag(f, filter)
	if err != nil {
		return sel, err
	}
	sel.Filter = fn
	return sel, nil
}
