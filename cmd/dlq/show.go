package dlq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
)

type showOptions struct {
	streamFlags
	sourceSeq uint64
}

func newCmdShow(f *factory.Factory) *cobra.Command {
	o := &showOptions{}
	cmd := &cobra.Command{
		Use:   "show SEQ | --source-seq N",
		Short: "show one DLQ message with its headers and payload",
		Long: `Show a DLQ message whole: where it came from, why it died, every header, and
the payload (pretty-printed when it is JSON). SEQ is the DLQ sequence (as
"dlq ls" shows it); --source-seq N finds the copy of source sequence N.
-o json gives the entry with headers and data.`,
		Example: `  jetctl dlq show 42 --stream ORDERS
  jetctl dlq show --stream ORDERS --source-seq 1187
  jetctl dlq show 42 --stream ORDERS -o json --jq .data`,
		Args: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (o.sourceSeq > 0) || len(args) > 1 {
				return exitcode.UsageErrorf("give one DLQ SEQ or --source-seq N")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var seq uint64
			if len(args) == 1 {
				v, err := strconv.ParseUint(args[0], 10, 64)
				if err != nil || v == 0 {
					return exitcode.UsageErrorf("invalid DLQ sequence %q", args[0])
				}
				seq = v
			}
			return runShow(cmd.Context(), f, o, seq)
		},
	}
	o.streamFlags.bind(cmd, f)
	cmd.Flags().Uint64Var(&o.sourceSeq, "source-seq", 0, "show the copy of this source stream sequence")
	return cmd
}

func runShow(ctx context.Context, f *factory.Factory, o *showOptions, seq uint64) error {
	if err := o.streamFlags.validate(); err != nil {
		return err
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	stream, err := oneDLQ(ctx, js, o.streamFlags)
	if err != nil {
		return err
	}
	e, err := pkgdlq.Get(ctx, js, stream, seq, o.sourceSeq)
	if err != nil {
		return err
	}
	if p.Format != "table" || f.Output.JQ != "" {
		return p.Print(e.Detail(), nil)
	}
	// Everything below comes from a message: escape control characters so
	// that a header cannot drive the terminal.
	esc := output.Escape
	w := f.IO.Out
	fmt.Fprintf(w, "DLQ:         %s seq %d\n", e.DLQStream, e.DLQSeq)
	fmt.Fprintf(w, "Source:      %s seq %d\n", esc(e.SourceStream), e.SourceSeq)
	if e.Redriven() {
		fmt.Fprintf(w, "Original:    %s seq %d (%s), stored %s\n", esc(e.OriginalStream), e.OriginalSeq, esc(e.OriginalSubject), e.OriginalTime.UTC().Format(time.RFC3339Nano))
	}
	fmt.Fprintf(w, "Subject:     %s\n", esc(e.Subject))
	fmt.Fprintf(w, "Consumer:    %s\n", esc(e.Consumer))
	reason := e.Reason
	if e.TermReason != "" {
		reason += " (" + e.TermReason + ")"
	}
	fmt.Fprintf(w, "Reason:      %s after %s\n", esc(reason), plural(int(e.Deliveries), "delivery", "deliveries"))
	fmt.Fprintf(w, "Swept at:    %s\n", e.SweptAt.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(w, "Redrives:    %d\n", e.Redrives)
	fmt.Fprintf(w, "Size:        %s\n", plural(e.Size, "byte", "bytes"))
	fmt.Fprintln(w, "Headers:")
	names := make([]string, 0, len(e.Message.Header))
	for k := range e.Message.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, v := range e.Message.Header[k] {
			fmt.Fprintf(w, "  %s: %s\n", esc(k), esc(v))
		}
	}
	fmt.Fprintln(w, "Payload:")
	data := e.Message.Data
	var pretty bytes.Buffer
	switch {
	case e.PayloadOmitted > 0:
		fmt.Fprintf(w, "(not in the DLQ: %s, too large to copy; it is in stream %s at sequence %d)\n",
			plural(e.PayloadOmitted, "byte", "bytes"), esc(e.SourceStream), e.SourceSeq)
	case json.Valid(data) && json.Indent(&pretty, data, "", "  ") == nil:
		fmt.Fprintln(w, output.EscapeLines(pretty.String()))
	case utf8.Valid(data):
		fmt.Fprintln(w, output.EscapeLines(string(data)))
	default:
		fmt.Fprintf(w, "(%s of binary data; -o json shows it as data_b64)\n", plural(len(data), "byte", "bytes"))
	}
	return nil
}

// oneDLQ names the one DLQ stream a command works on: --dlq-stream, the
// DLQ of --stream, or the only DLQ stream there is.
func oneDLQ(ctx context.Context, js jetstream.JetStream, s streamFlags) (string, error) {
	streams, err := pkgdlq.DLQStreams(ctx, js, s.stream, s.dlqStream)
	if err != nil {
		return "", err
	}
	switch len(streams) {
	case 1:
		return streams[0], nil
	case 0:
		return "", exitcode.Newf(exitcode.NotFound, "no DLQ streams (run: jetctl dlq setup --stream STREAM)")
	}
	return "", exitcode.UsageErrorf("there are %d DLQ streams: choose one with --stream or --dlq-stream", len(streams))
}
