package dlq

import (
	"context"
	"fmt"
	"os"
	"os/user"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/audit"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/jsapi"
)

type takeOptions struct {
	stream   string
	consumer string
	seq      uint64
	dryRun   bool
	yes      bool
}

func newCmdTake(f *factory.Factory) *cobra.Command {
	o := &takeOptions{}
	cmd := &cobra.Command{
		Use:   "take --stream S --consumer C --seq N",
		Short: "take one held message out of one consumer's way, into the DLQ",
		Long: `Take the message at stream sequence N out of consumer C's way: a poison
message that C keeps getting back (and that holds its ack floor) goes into
the DLQ, and C moves on. Other consumers are not touched: on a limits
stream they still receive the message.

It copies the message into the DLQ with the provenance headers a sweep
writes (reason "taken", Jetctl-Dlq-Taken-By: who took it, and when), then
terminates it for C alone, as C's worker would with AckTerm. The copy is
written once per sequence (as a sweep's), so a take killed between the
copy and the termination is finished by running it again, and a take run
again after that says "already taken" (exit 0).

Refused (exit 2, nothing changed) when C does not hold the message: not
yet delivered to it, below its ack floor (acknowledged or given up on),
or not on its filter; also when C does not acknowledge explicitly. The
DLQ must be set up (jetctl dlq setup --stream S).

Safety: take needs --yes when not run in a terminal; --dry-run says what
it would do and changes nothing.`,
		Example: `  jetctl dlq take --stream ORDERS --consumer mailer --seq 42 --dry-run
  jetctl dlq take --stream ORDERS --consumer mailer --seq 42 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runTake(cmd.Context(), f, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.stream, "stream", "", "the stream the message is in (required)")
	fl.StringVar(&o.consumer, "consumer", "", "the consumer it holds up (required)")
	fl.Uint64Var(&o.seq, "seq", 0, "the message's stream sequence (required)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "say what would be taken; change nothing")
	fl.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
	_ = cmd.RegisterFlagCompletionFunc("stream", f.CompleteStreams())
	_ = cmd.RegisterFlagCompletionFunc("consumer", f.CompleteConsumersOf(func(cmd *cobra.Command, _ []string) string { return o.stream }))
	return cmd
}

func runTake(ctx context.Context, f *factory.Factory, o *takeOptions) error {
	if err := validateStream(o.stream); err != nil {
		return err
	}
	if o.consumer == "" {
		return exitcode.UsageErrorf("--consumer is required")
	}
	if err := jsapi.ValidateStreamName(o.consumer); err != nil {
		return exitcode.UsageErrorf("--consumer: %v", err)
	}
	if o.seq == 0 {
		return exitcode.UsageErrorf("--seq is required (a stream sequence, 1 or more)")
	}
	if f.Conn.JSDomain != "" || f.Conn.JSAPIPrefix != "" {
		// The +TERM goes to the consumer's ack subject, which neither a
		// domain nor an API prefix maps.
		return exitcode.UsageErrorf("take terminates the message on the consumer's ack subject ($JS.ACK.%s.%s...), which --js-domain and --js-api-prefix do not route: connect to the stream's own domain and account", o.stream, o.consumer)
	}
	p, err := f.Printer("table")
	if err != nil {
		return err
	}
	if !o.dryRun {
		if err := f.IO.ConfirmChange(o.yes, fmt.Sprintf("take copies %s seq %d into the DLQ and terminates it for consumer %q", o.stream, o.seq, o.consumer)); err != nil {
			return err
		}
	}
	js, err := f.JetStream(ctx)
	if err != nil {
		return err
	}
	res, err := pkgdlq.Take(ctx, js, pkgdlq.TakeConfig{Stream: o.stream, Consumer: o.consumer, Seq: o.seq, By: takenBy(), DryRun: o.dryRun, AtStep: factory.KillAt(ctx, f)})
	if res == nil {
		return err
	}
	if res.Status == pkgdlq.StatusTaken {
		auditlog.Write(ctx, f, audit.Change{Stream: res.Stream, Consumer: res.Consumer, Action: "take", Err: err, Target: res.DLQStream,
			Summary: fmt.Sprintf("took seq %d out of the consumer's way: %s seq %d (%s), terminated for it alone (ack floor %d -> %d); source: %s",
				res.Seq, res.DLQStream, res.DLQSeq, res.Copy, res.AckFloorBefore, res.AckFloorAfter, res.Source),
			Counts: map[string]int64{"seq": int64(res.Seq), "dlq_seq": int64(res.DLQSeq),
				"ack_floor_before": int64(res.AckFloorBefore), "ack_floor_after": int64(res.AckFloorAfter)}})
	}
	if p.Format != "table" {
		if perr := p.Print(res, nil); perr != nil {
			return perr
		}
	}
	w := f.IO.ErrOut
	subject := output.Escape(res.Subject)
	switch res.Status {
	case pkgdlq.StatusWouldTake:
		copyNote := fmt.Sprintf("copy it to %s (as dlq.%s.%d)", res.DLQStream, res.Stream, res.Seq)
		if res.Copy == pkgdlq.CopyAlreadyCopied {
			copyNote = fmt.Sprintf("find its copy in %s at seq %d", res.DLQStream, res.DLQSeq)
		}
		fmt.Fprintf(w, "jetctl: dry run: would take %s seq %d (%s) out of consumer %q's way: %s, then terminate it for %q alone; source: %s\n",
			res.Stream, res.Seq, subject, res.Consumer, copyNote, res.Consumer, res.Source)
	case pkgdlq.StatusAlreadyTaken:
		fmt.Fprintf(w, "jetctl: %s seq %d was already taken out of consumer %q's way: its copy is %s seq %d, and %q's ack floor is at %d\n",
			res.Stream, res.Seq, res.Consumer, res.DLQStream, res.DLQSeq, res.Consumer, res.AckFloorAfter)
	default:
		copied := "copied to"
		if res.Copy == pkgdlq.CopyAlreadyCopied {
			copied = "its copy was already in"
		}
		fmt.Fprintf(w, "jetctl: took %s seq %d (%s) out of consumer %q's way: %s %s seq %d, terminated for %q (ack floor %d -> %d); source: %s\n",
			res.Stream, res.Seq, subject, res.Consumer, copied, res.DLQStream, res.DLQSeq, res.Consumer, res.AckFloorBefore, res.AckFloorAfter, res.Source)
	}
	return err
}

// takenBy is user@host, for the copy's provenance.
func takenBy() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	switch {
	case name == "":
		return host
	case host == "":
		return name
	}
	return name + "@" + host
}
