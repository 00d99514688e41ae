package events

import (
	"fmt"
	"github.com/dustin/go-humanize"
	"strings"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgevents "github.com/jetctl/jetctl/pkg/events"
	"github.com/jetctl/jetctl/pkg/units"
)

type recordOptions struct {
	maxAge   time.Duration
	maxBytes string
	perSubj  int64
	replicas int
	dryRun   bool
}

func newCmdRecord(f *factory.Factory) *cobra.Command {
	o := &recordOptions{}
	cmd := &cobra.Command{
		Use:   "record [--max-age D] [--max-bytes SIZE] [--max-per-subject N] [--replicas N] [--dry-run]",
		Short: "make the server keep JetStream's advisories and jetctl's audit records",
		Long: `Create, or on later runs verify, the recorder: the stream JETCTL_EVENTS, in
which the server itself keeps JetStream's advisories and jetctl's audit
records. Because the server captures them, nothing is lost while no jetctl
runs, nor while a client reconnects.

It captures the advisory families $JS.EVENT.ADVISORY.STREAM.>,
$JS.EVENT.ADVISORY.CONSUMER.>, $JS.EVENT.ADVISORY.DOMAIN.> and
$JS.EVENT.ADVISORY.SERVER.> (the last two are sent in the system account
only), and jetctl.audit.> - never $JS.EVENT.ADVISORY.API.>, whose audit
advisories carry request bodies. It keeps them for --max-age (7d) and at
most --max-bytes (1GiB), dropping the oldest first; file storage, 3
replicas on a cluster, 1 on a single server.

What repeats cannot push out what an incident needs: at most
--max-per-subject (100000) events are kept per subject, that is per kind
and per stream or consumer. A poison message NAKed in a hot loop sends
hundreds of thousands of NAK advisories a minute, all on one subject;
without the bound they would drop every older event and audit record.

Run again it changes nothing, or the limits given. --dry-run shows what it
would create or change.

DLQ captures made by "jetctl dlq setup" own their advisory subjects, which
the recorder's overlap: record hands each over to the recorder (the capture
then reads its advisories from it, keeping its messages and the sweep's
checkpoint), with a safety net for the moment when neither owns them (see
docs/events.md).`,
		Example: `  jetctl events record
  jetctl events record --max-age 30d --max-bytes 4GiB --replicas 3
  jetctl events record --max-per-subject 100000
  jetctl events record --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := o.config()
			if err != nil {
				return err
			}
			cfg.At = factory.KillAt(cmd.Context(), f)
			p, err := f.Printer("table")
			if err != nil {
				return err
			}
			js, err := f.JetStream(cmd.Context())
			if err != nil {
				return err
			}
			res, err := pkgevents.Record(cmd.Context(), js, cfg)
			if err != nil {
				return err
			}
			if err := p.Print(res, output.ResourcesTable(res.Resources)); err != nil {
				return err
			}
			recordNotes(f, res)
			return nil
		},
	}
	fl := cmd.Flags()
	factory.DurationVar(fl, &o.maxAge, "max-age", 0, "how long events are kept (default 7d, or the recorder's)").Positive().Hint("use a duration like 7d or 720h")
	fl.StringVar(&o.maxBytes, "max-bytes", "", "at most this much is kept, the oldest dropped first (default 1GiB, or the recorder's)")
	fl.Int64Var(&o.perSubj, "max-per-subject", 0, "at most this many events per subject (one kind, of one stream or consumer), the oldest dropped first (default 100000 for a new recorder, or the recorder's)")
	fl.IntVar(&o.replicas, "replicas", 0, "replicas of the recorder (default 3 on a cluster, 1 on a single server, or the recorder's)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "show what would be created or changed; change nothing")
	factory.AcceptedYes(fl)
	return cmd
}

func (o *recordOptions) config() (pkgevents.RecordConfig, error) {
	cfg := pkgevents.RecordConfig{MaxAge: o.maxAge, MaxPerSubject: o.perSubj, Replicas: o.replicas, DryRun: o.dryRun}
	if o.perSubj < 0 {
		return cfg, exitcode.UsageErrorf("invalid --max-per-subject %d: use a positive count (the recorder is always bounded)", o.perSubj)
	}
	if o.maxBytes != "" {
		n, err := units.ParseSize(o.maxBytes)
		if err != nil || n <= 0 {
			return cfg, exitcode.UsageErrorf("invalid --max-bytes %q: use a size like 512MiB or 4GiB (the recorder is always bounded)", o.maxBytes)
		}
		cfg.MaxBytes = n
	}
	if o.replicas < 0 || o.replicas > 5 {
		return cfg, exitcode.UsageErrorf("--replicas must be between 1 and 5")
	}
	return cfg, nil
}

// recordNotes says on stderr what the recorder captures and for how long,
// and whether anything changed.
func recordNotes(f *factory.Factory, res *pkgevents.RecordResult) {
	w := f.IO.ErrOut
	perSubject := "no limit per subject"
	if res.MaxPerSubject > 0 {
		perSubject = humanize.Comma(res.MaxPerSubject) + " per subject"
	}
	keeps := fmt.Sprintf("%s keeps %s for %s, at most %s and %s (oldest dropped first)", res.Stream, strings.Join(res.Subjects, ", "),
		res.MaxAgeText, units.FormatSize(res.MaxBytes), perSubject)
	defer func() {
		if res.MaxPerSubject <= 0 {
			fmt.Fprintln(w, "jetctl: the recorder keeps any number of events per subject, so a NAK storm can push out every older event: run jetctl events record --max-per-subject 100000")
		}
	}()
	switch {
	case res.DryRun && res.Changed:
		fmt.Fprintf(w, "jetctl: dry run, nothing was changed; then %s\n", keeps)
	case !res.Changed:
		fmt.Fprintf(w, "jetctl: nothing changed: %s\n", keeps)
	default:
		fmt.Fprintf(w, "jetctl: %s\n", keeps)
	}
	if len(res.Adopted) > 0 && !res.DryRun {
		fmt.Fprintf(w, "jetctl: %s now read%s the dead-letter advisories from %s (their sweeps go on from their checkpoints); %s recovered by the safety net\n",
			strings.Join(res.Adopted, ", "), map[bool]string{true: "s", false: ""}[len(res.Adopted) == 1], res.Stream, english.Plural(res.Recovered, "advisory", "advisories"))
	}
}
