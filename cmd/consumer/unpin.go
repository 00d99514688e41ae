package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/audit"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
)

type unpinOptions struct {
	group  string
	dryRun bool
	yes    bool
}

func newCmdUnpin(f *factory.Factory) *cobra.Command {
	o := &unpinOptions{}
	cmd := &cobra.Command{
		Use:   "unpin STREAM CONSUMER --group G",
		Short: "unpin the client a priority group is pinned to",
		Long: `Clear the pin of a consumer's priority group (policy pinned_client,
nats-server 2.11+) with the server's unpin API: the next client that pulls
in the group is pinned and gets its messages. The client that was pinned
has its next pull refused (423) and pulls again unpinned.

The server keeps a group pinned to its client until that client has not
pulled for the consumer's priority_timeout, and delivers to nobody else
meanwhile: when the pinned client is gone ("consumer explain" says
pinned-client-gone), unpin ends the wait at once. The server keeps one pin
per consumer, reported under its first group; unpinning any of the
consumer's groups clears it.

--dry-run says which client would be unpinned and since when it has been
pinned, changing nothing. A consumer with no client pinned is left as it
is. Needs --yes when not run in a terminal. An unknown stream, consumer or
group exits 3.`,
		Example: `  jetctl consumer unpin JOBS workers --group jobs --dry-run
  jetctl consumer unpin JOBS workers --group jobs --yes
  jetctl consumer unpin JOBS workers --group jobs --yes -o json`,
		Args:              streamConsumerArgs,
		ValidArgsFunction: completeStreamConsumer(f),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUnpin(cmd.Context(), f, o, args[0], args[1])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.group, "group", "", "the priority group to unpin (required)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "say which client would be unpinned; change nothing")
	fl.BoolVar(&o.yes, "yes", false, "do not ask before unpinning (needed when not in a terminal)")
	_ = cmd.RegisterFlagCompletionFunc("group", completeGroups(f))
	return cmd
}

func runUnpin(ctx context.Context, f *factory.Factory, o *unpinOptions, stream, consumer string) error {
	if o.group == "" {
		return exitcode.UsageErrorf("give the priority group to unpin: --group G")
	}
	if err := pkgconsumer.ValidateGroupName(o.group); err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	what := fmt.Sprintf("unpin %s > %s group %s", stream, consumer, o.group)
	if !o.dryRun && !o.yes && !f.IO.CanPrompt() {
		return f.IO.ConfirmChange(false, what)
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	res, err := pkgconsumer.Unpin(ctx, js, pkgconsumer.UnpinConfig{Stream: stream, Consumer: consumer, Group: o.group, DryRun: o.dryRun,
		Confirm: func(r *pkgconsumer.UnpinResult) error {
			return f.IO.ConfirmChange(o.yes, fmt.Sprintf("%s: client %s, pinned %s", what, r.PinnedClientID, pinnedText(r)))
		}})
	if err != nil {
		return err
	}
	auditUnpin(ctx, f, res)
	if p.Format != "table" || f.Output.JQ != "" {
		return p.Print(res, nil)
	}
	name := output.Escape(stream + " > " + consumer)
	switch {
	case !res.WasPinned && res.PriorityPolicy != pkgconsumer.PolicyPinnedClient:
		fmt.Fprintf(f.IO.Out, "%s group %s pins no client (priority policy %s): nothing %s\n", name, output.Escape(o.group), policyText(res.PriorityPolicy),
			map[bool]string{true: "would change", false: "changed"}[res.DryRun])
	case !res.WasPinned && res.DryRun:
		fmt.Fprintf(f.IO.Out, "dry run: %s group %s has no client pinned: nothing would change\n", name, output.Escape(o.group))
	case !res.WasPinned:
		fmt.Fprintf(f.IO.Out, "%s group %s has no client pinned: nothing changed\n", name, output.Escape(o.group))
	case res.DryRun:
		fmt.Fprintf(f.IO.Out, "dry run: %s group %s would be unpinned from client %s, pinned %s; nothing was changed\n",
			name, output.Escape(o.group), output.Escape(res.PinnedClientID), pinnedText(res))
	default:
		fmt.Fprintf(f.IO.Out, "%s group %s unpinned from client %s, pinned %s: the next client to pull is pinned\n",
			name, output.Escape(o.group), output.Escape(res.PinnedClientID), pinnedText(res))
	}
	return nil
}

func pinnedText(r *pkgconsumer.UnpinResult) string {
	return pinnedSince(r.PinnedSince, r.PinnedSeconds)
}

// pinnedSince says since when a client has been pinned and for how long:
// "since 2026-11-30T06:00:00Z (5m12s)", the same in explain and unpin.
func pinnedSince(since *time.Time, seconds *float64) string {
	if since == nil || seconds == nil {
		return "since an unknown time"
	}
	return fmt.Sprintf("since %s (%s)", since.UTC().Format(time.RFC3339),
		pkgconsumer.ShortDuration(time.Duration(*seconds*float64(time.Second))))
}

func policyText(p string) string {
	if p == "" {
		return "none"
	}
	return p
}

// auditUnpin records an unpin the server made (not a dry run, nor one of
// a group with no client pinned).
func auditUnpin(ctx context.Context, f *factory.Factory, res *pkgconsumer.UnpinResult) {
	if !res.Unpinned {
		return
	}
	auditlog.Write(ctx, f, audit.Change{Stream: res.Stream, Consumer: res.Consumer, Action: "unpin",
		Summary: fmt.Sprintf("unpinned group %s from client %s, pinned %s", res.Group, res.PinnedClientID, pinnedText(res))})
}

// completeGroups completes --group with the priority groups of the
// consumer given as arguments.
func completeGroups(f *factory.Factory) cobra.CompletionFunc {
	return f.CompleteNames(func(ctx context.Context, js jetstream.JetStream, args []string) []string {
		if len(args) < 2 {
			return nil
		}
		st, err := js.Stream(ctx, args[0])
		if err != nil {
			return nil
		}
		c, err := st.Consumer(ctx, args[1])
		if err != nil {
			return nil
		}
		return c.CachedInfo().Config.PriorityGroups
	})
}
