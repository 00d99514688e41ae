package dlq

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize/english"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/auditlog"
	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	"github.com/jetctl/jetctl/pkg/audit"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/setupresult"
)

type setupOptions struct {
	stream     string
	consumers  []string
	dlqStream  string
	replicas   int
	maxAge     time.Duration
	captureAge time.Duration
	dryRun     bool
	// allConsumers widens an existing capture to every consumer.
	allConsumers bool
	// retrySubject adds the named consumers' retry subjects;
	// removeRetrySubject takes them out again.
	retrySubject, removeRetrySubject bool
}

func newCmdSetup(f *factory.Factory) *cobra.Command {
	o := &setupOptions{}
	cmd := &cobra.Command{
		Use:   "setup --stream STREAM [--consumer C]... [--all-consumers]",
		Short: "capture a stream's dead-letter advisories and create its DLQ stream",
		Long: `Create, or on later runs verify, what a DLQ needs:

  - DLQ_ADVISORIES_<stream>: a file stream capturing the MAX_DELIVERIES and
    MSG_TERMINATED advisories of the named consumers (of every consumer of
    the stream when none is named), and nothing else;
  - its durable consumer jetctl-dlq-sweep, whose ack floor is the sweep's
    checkpoint;
  - the DLQ stream (DLQ_<stream> on dlq.<stream>.>, or --dlq-stream).

Run again it changes nothing unless asked: --consumer C adds C's
advisories to the capture, --all-consumers widens a capture of named
consumers to every consumer of the stream; without either it only verifies
(a CI check can run it). Every name is checked before anything is created.

Advisories are sent only to whoever listens at that instant: those sent
before the capture existed were never captured. With an event recorder
(jetctl events record) the capture reads the recorder from its start: the
dead letters recorded before setup are captured too, and the next sweep
takes them. Of the rest, on workqueue and interest streams "jetctl dlq
sweep --scan" finds those messages from the consumers' state; on a limits
stream they cannot be told apart from processed ones (see docs/dlq.md).
--dry-run shows what would be created.

A redrive sends a dead letter back to its original subject only where no
other consumer receives it there. On a limits or interest stream with
several consumers, --retry-subject (with --consumer C) gives C a subject
of its own for redriven messages: _jetctl.retry.<stream>.<C>.> is added to
the stream's subjects and to C's filter subjects (C's worker finds the
original subject in the Jetctl-Redrive-Subject header).
--remove-retry-subject takes it out again, once C has processed every
message sent there.`,
		Example: `  jetctl dlq setup --stream ORDERS --consumer billing --consumer shipping
  jetctl dlq setup --stream FULFILMENT --max-age 30d --replicas 3
  jetctl dlq setup --stream ORDERS --all-consumers
  jetctl dlq setup --stream ORDERS --dry-run
  jetctl dlq setup --stream ORDERS --consumer mailer --retry-subject --dry-run`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := o.config()
			if err != nil {
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
			res, err := setupWithRetry(cmd.Context(), js, cfg, o)
			if err != nil {
				return err
			}
			auditSetup(cmd.Context(), f, res)
			if err := p.Print(res, output.ResourcesTable(res.Resources)); err != nil {
				return err
			}
			setupNotes(f, o, res)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.stream, "stream", "", "the stream whose dead messages to capture (required)")
	fl.StringArrayVar(&o.consumers, "consumer", nil, "capture this consumer's advisories (repeatable; default on the first run: every consumer)")
	fl.BoolVar(&o.allConsumers, "all-consumers", false, "widen an existing capture of named consumers to every consumer of the stream")
	fl.StringVar(&o.dlqStream, "dlq-stream", "", "name of the DLQ stream (default DLQ_<stream>)")
	fl.IntVar(&o.replicas, "replicas", 0, "replicas of the streams created (default: the source stream's)")
	factory.DurationVar(fl, &o.maxAge, "max-age", 0, "how long the DLQ keeps messages (e.g. 30d; 0 keeps them)").Hint("invalid duration (use e.g. 30s, 2m, 7d, 1h30m)")
	factory.DurationVar(fl, &o.captureAge, "capture-max-age", 7*24*time.Hour, "how long captured advisories are kept").Hint("invalid duration (use e.g. 30s, 2m, 7d, 1h30m)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "show what would be created; change nothing")
	factory.AcceptedYes(fl)
	fl.BoolVar(&o.retrySubject, "retry-subject", false, "give each --consumer a retry subject of its own, which redrives of its dead letters go to (adds it to the stream's subjects and the consumer's filter)")
	fl.BoolVar(&o.removeRetrySubject, "remove-retry-subject", false, "take each --consumer's retry subject out of the stream's subjects and the consumer's filter")
	_ = cmd.RegisterFlagCompletionFunc("stream", f.CompleteStreams())
	_ = cmd.RegisterFlagCompletionFunc("consumer", f.CompleteConsumersOf(func(cmd *cobra.Command, _ []string) string { return o.stream }))
	return cmd
}

// setupNotes says on stderr what setup cannot do: advisories sent before a
// consumer's capture started were never captured (said once, when the
// capture starts), and how to widen a capture of named consumers.
func setupNotes(f *factory.Factory, o *setupOptions, res *pkgdlq.SetupResult) {
	w := f.IO.ErrOut
	if len(res.NewlyCaptured) > 0 {
		who := consumerNames(res.NewlyCaptured)
		before := "now"
		if h := res.RecorderHistory; h != nil && !h.Start.IsZero() {
			since := h.Start.UTC().Format(time.RFC3339)
			before = "the record starts (" + since + ")"
			switch {
			case h.Advisories == 0:
			case h.Captured:
				what := "they are captured too, and the next sweep takes them"
				if o.dryRun {
					what = "they would be captured too, for the next sweep"
				}
				fmt.Fprintf(w, "jetctl: %s recorded %s of %s since %s: %s (jetctl dlq sweep --stream %s)\n",
					h.Stream, english.Plural(h.Advisories, "dead-letter advisory", "dead-letter advisories"), who, since, what, o.stream)
			default:
				fmt.Fprintf(w, "jetctl: %s recorded %s of the other consumers before now: they stay there, not captured (the capture of every consumer starts now, "+
					"or it would take the named consumers' again); jetctl events timeline --stream %s --type max_deliveries,terminated lists them, and consumer ls counts them\n",
					h.Stream, english.Plural(h.Advisories, "dead-letter advisory", "dead-letter advisories"), o.stream)
			}
		}
		if res.Retention == pkgdlq.RetentionName(jetstream.LimitsPolicy) {
			fmt.Fprintf(w, "jetctl: advisories of %s sent before %s were never captured. %s has limits retention: a message that died earlier "+
				"cannot be told apart from one that was processed, and no sweep can find it (--scan works on workqueue and interest streams only). "+
				"If you know when the failures happened, keep a copy of that window: jetctl replay %s --from-time T1 --to-time T2 --to-file dead.jsonl\n",
				who, before, o.stream, o.stream)
		} else {
			fmt.Fprintf(w, "jetctl: advisories of %s sent before %s were never captured; to find messages that died earlier run: jetctl dlq sweep --stream %s --scan\n",
				who, before, o.stream)
		}
	}
	if len(o.consumers) == 0 && !o.allConsumers && !slices.Contains(res.CapturedConsumers, "*") && len(res.CapturedConsumers) > 0 {
		fmt.Fprintf(w, "jetctl: capturing the advisories of %s only; to capture every consumer of %s run: jetctl dlq setup --stream %s --all-consumers\n",
			consumerNames(res.CapturedConsumers), o.stream, o.stream)
	}
}

// setupWithRetry runs setup and, when asked, adds (or removes) the named
// consumers' retry subjects, whose resources it lists after setup's. The
// retry subjects are checked (a dry run) before setup changes anything; a
// removal leaves the rest of the setup as it is (only verified).
func setupWithRetry(ctx context.Context, js jetstream.JetStream, cfg pkgdlq.SetupConfig, o *setupOptions) (*pkgdlq.SetupResult, error) {
	retry := pkgdlq.RetrySetupConfig{Stream: cfg.Stream, Consumers: cfg.Consumers, Remove: o.removeRetrySubject, DryRun: true}
	if o.retrySubject || o.removeRetrySubject {
		if _, err := pkgdlq.SetupRetrySubjects(ctx, js, retry); err != nil {
			return nil, err
		}
	}
	if o.removeRetrySubject {
		cfg.Consumers = nil
	}
	res, err := pkgdlq.Setup(ctx, js, cfg)
	if err != nil || (!o.retrySubject && !o.removeRetrySubject) {
		return res, err
	}
	retry.DryRun = cfg.DryRun
	more, err := pkgdlq.SetupRetrySubjects(ctx, js, retry)
	if err != nil {
		return nil, err
	}
	res.Resources = append(res.Resources, more...)
	return res, nil
}

// consumerNames says "consumer a", "consumers a, b" or "every consumer" ("*").
func consumerNames(names []string) string {
	switch {
	case slices.Contains(names, "*"):
		return "every consumer"
	case len(names) == 1:
		return "consumer " + names[0]
	}
	return "consumers " + strings.Join(names, ", ")
}

func (o *setupOptions) config() (pkgdlq.SetupConfig, error) {
	cfg := pkgdlq.SetupConfig{Stream: o.stream, Consumers: o.consumers, AllConsumers: o.allConsumers, DLQStream: o.dlqStream, Replicas: o.replicas, DryRun: o.dryRun}
	if err := validateStream(o.stream); err != nil {
		return cfg, err
	}
	if o.retrySubject && o.removeRetrySubject {
		return cfg, exitcode.UsageErrorf("--retry-subject and --remove-retry-subject exclude each other")
	}
	if (o.retrySubject || o.removeRetrySubject) && len(o.consumers) == 0 {
		return cfg, exitcode.UsageErrorf("a retry subject is per consumer: name it with --consumer")
	}
	if err := pkgdlq.ValidateSetup(cfg); err != nil {
		return cfg, err
	}
	if o.replicas < 0 || o.replicas > 5 {
		return cfg, exitcode.UsageErrorf("--replicas must be between 1 and 5")
	}
	cfg.MaxAge, cfg.CaptureMaxAge = o.maxAge, o.captureAge
	return cfg, nil
}

func validateStream(s string) error {
	if s == "" {
		return exitcode.UsageErrorf("--stream is required")
	}
	if err := jsapi.ValidateStreamName(s); err != nil {
		return exitcode.UsageErrorf("%v", err)
	}
	return nil
}

// auditSetup records each resource setup created or changed: the capture
// and DLQ streams and the sweep's durable under their own names, a retry
// subject under the source stream (and its consumer).
func auditSetup(ctx context.Context, f *factory.Factory, res *pkgdlq.SetupResult) {
	var changes []audit.Change
	for _, r := range res.Resources {
		action := ""
		switch r.Action {
		case setupresult.ActionCreated:
			action = "create"
		case setupresult.ActionUpdated:
			action = "update"
		default:
			continue
		}
		stream, consumer, _ := strings.Cut(r.Name, " > ")
		summary := fmt.Sprintf("%s %s %s", r.Action, r.Kind, r.Name)
		if r.Detail != "" {
			summary += ": " + r.Detail
		}
		changes = append(changes, audit.Change{Stream: stream, Consumer: consumer, Action: action, Summary: summary, Target: res.Stream})
	}
	auditlog.Write(ctx, f, changes...)
}
