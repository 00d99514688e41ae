package dlq

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgdlq "github.com/jetctl/jetctl/pkg/dlq"
	"github.com/jetctl/jetctl/pkg/units"
)

type setupOptions struct {
	stream     string
	consumers  []string
	dlqStream  string
	replicas   int
	maxAge     string
	captureAge string
	dryRun     bool
}

func newCmdSetup(f *factory.Factory) *cobra.Command {
	o := &setupOptions{}
	cmd := &cobra.Command{
		Use:   "setup --stream STREAM [--consumer C]...",
		Short: "capture a stream's dead-letter advisories and create its DLQ stream",
		Long: `Create, or on later runs verify, what a DLQ needs:

  - DLQ_ADVISORIES_<stream>: a file stream capturing the MAX_DELIVERIES and
    MSG_TERMINATED advisories of the named consumers (of every consumer of
    the stream when none is named), and nothing else;
  - its durable consumer jetctl-dlq-sweep, whose ack floor is the sweep's
    checkpoint;
  - the DLQ stream (DLQ_<stream> on dlq.<stream>.>, or --dlq-stream).

Run again it changes nothing, except that consumers named for the first
time have their advisories captured too. Advisories are sent only to
whoever listens at that instant: those sent before setup were never
captured; "jetctl dlq sweep --scan" finds those messages from the
consumers' state. --dry-run shows what would be created.`,
		Example: `  jetctl dlq setup --stream ORDERS --consumer billing --consumer shipping
  jetctl dlq setup --stream FULFILMENT --max-age 30d --replicas 3
  jetctl dlq setup --stream ORDERS --dry-run`,
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
			res, err := pkgdlq.Setup(cmd.Context(), js, cfg)
			if err != nil {
				return mapErr(err)
			}
			if err := p.Print(res, func() []output.Table {
				t := output.Table{Header: []string{"kind", "name", "action", "detail"}}
				for _, r := range res.Resources {
					t.Row(r.Kind, r.Name, r.Action, r.Detail)
				}
				return []output.Table{t}
			}); err != nil {
				return err
			}
			if res.CaptureCreated || o.dryRun {
				fmt.Fprintf(f.IO.ErrOut, "jetctl: advisories sent before now were never captured; to find messages that died earlier run: jetctl dlq sweep --stream %s --scan\n", o.stream)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.stream, "stream", "", "the stream whose dead messages to capture (required)")
	fl.StringArrayVar(&o.consumers, "consumer", nil, "capture this consumer's advisories (repeatable; default: every consumer)")
	fl.StringVar(&o.dlqStream, "dlq-stream", "", "name of the DLQ stream (default DLQ_<stream>)")
	fl.IntVar(&o.replicas, "replicas", 0, "replicas of the streams created (default: the source stream's)")
	fl.StringVar(&o.maxAge, "max-age", "0", "how long the DLQ keeps messages (e.g. 30d; 0 keeps them)")
	fl.StringVar(&o.captureAge, "capture-max-age", "7d", "how long captured advisories are kept")
	fl.BoolVar(&o.dryRun, "dry-run", false, "show what would be created; change nothing")
	_ = cmd.RegisterFlagCompletionFunc("stream", f.CompleteStreams())
	_ = cmd.RegisterFlagCompletionFunc("consumer", f.CompleteConsumersOf(func(cmd *cobra.Command, _ []string) string { return o.stream }))
	return cmd
}

func (o *setupOptions) config() (pkgdlq.SetupConfig, error) {
	cfg := pkgdlq.SetupConfig{Stream: o.stream, Consumers: o.consumers, DLQStream: o.dlqStream, Replicas: o.replicas, DryRun: o.dryRun}
	if err := validateStream(o.stream); err != nil {
		return cfg, err
	}
	for _, c := range o.consumers {
		if c == "" || strings.ContainsAny(c, ".*> \t") {
			return cfg, exitcode.UsageErrorf("invalid --consumer %q", c)
		}
	}
	if o.replicas < 0 || o.replicas > 5 {
		return cfg, exitcode.UsageErrorf("--replicas must be between 1 and 5")
	}
	var err error
	if cfg.MaxAge, err = units.ParseDuration(o.maxAge); err != nil {
		return cfg, exitcode.UsageErrorf("--max-age: %v", err)
	}
	if cfg.CaptureMaxAge, err = units.ParseDuration(o.captureAge); err != nil {
		return cfg, exitcode.UsageErrorf("--capture-max-age: %v", err)
	}
	return cfg, nil
}

func validateStream(s string) error {
	if s == "" {
		return exitcode.UsageErrorf("--stream is required")
	}
	if strings.ContainsAny(s, ".*> \t") {
		return exitcode.UsageErrorf("invalid stream name %q", s)
	}
	return nil
}
