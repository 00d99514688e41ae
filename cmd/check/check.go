// Package check implements `jetctl check`: every stream and consumer in
// one call against warning and critical thresholds, rendered for nagios,
// Prometheus, JSON or people, once or served on /metrics.
package check

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/pkg/check"
	pkgconsumer "github.com/jetctl/jetctl/pkg/consumer"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/natsconn"
)

// Formats are the -o values check renders: the usual ones and its own.
var Formats = []string{"table", "json", "jsonl", "yaml", "nagios", "prometheus"}

// options are the flags, as given.
type options struct {
	streams, consumers []string
	all                bool
	lagWarning         time.Duration
	lagCritical        time.Duration
	stallWarning       time.Duration
	stallCritical      time.Duration
	deadLetters        int64
	inactive           time.Duration
	limitsWarning      float64
	limitsCritical     float64
	// natscli's settings, by flag name, as written.
	natscli  map[string]*string
	listen   string
	interval time.Duration
}

// NewCmd returns `jetctl check`.
func NewCmd(f *factory.Factory) *cobra.Command {
	o := &options{natscli: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "check every stream and consumer against warning and critical thresholds",
		Long: `Check every stream and consumer of the account (or those named) in one
call, against warning and critical thresholds, and exit with the nagios
code of the worst: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.

A consumer's verdict is the health model's, the one consumer ls, explain,
status, watch and wait use (its word, findings and severity: critical is
CRITICAL, warning WARNING), with jetctl's thresholds:

  --lag-warning, --lag-critical      the age of the oldest unprocessed message
  --stall-warning, --stall-critical  work pending and the ack floor frozen
                                     this long (nothing pending: never stalled)
  --dead-letters-critical            dead letters waiting (any is a warning)

and natscli's, with natscli's flag names and io.nats.monitor.* metadata
(judged by natscli's own library): --outstanding-ack-critical,
--waiting-critical, --unprocessed-critical, --last-delivery-critical,
--last-ack-critical, --redelivery-critical. A consumer's own thresholds
come from its metadata (io.jetctl.check.lag-warning, ... and
io.nats.monitor.*); a flag beats metadata, key by key.

A stream is checked for a leader, replicas offline or not current, its
limits (--limits-warning, --limits-critical: percent of max_msgs and
max_bytes of a stream with discard new; discard old is never more than
OK), its mirror and sources, and natscli's --msgs-warn, --msgs-critical
(FEWER messages than), --source-lag-critical (natscli's stream
--lag-critical), --seen-critical, --min-sources, --max-sources,
--peer-expect, --peer-lag-critical, --peer-seen-critical.
io.nats.monitor.enabled=false skips a stream or consumer.

A stream or consumer read without a leader is read again for up to
--timeout before it is reported without one: an election is not an
outage. KV, object store and DLQ streams are checked with --all or when
named. An unknown stream or consumer named exits 3 before any report;
thresholds that make no sense exit 2 before connecting.

-o nagios prints a status line with perfdata and one line per item that
is not OK; -o prometheus the text exposition format; -o json one document
(docs/check.md); -o jsonl one line per item. --listen serves /metrics and
/healthz, evaluating on each scrape, or every --interval from a cache.`,
		Example: `  jetctl check
  jetctl check --stream ORDERS --lag-warning 5m --lag-critical 15m -o nagios
  jetctl check --consumer billing --stall-critical 10m -o json --jq '.status'
  jetctl check -o prometheus
  jetctl check --listen 127.0.0.1:9464 --interval 15s`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{factory.FormatsAnnotation: "nagios,prometheus"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := o.config(cmd.Flags())
			if err != nil {
				return err
			}
			format, err := outputFormat(f)
			if err != nil {
				return err
			}
			cfg.ElectionWait = f.Conn.Timeout
			if o.listen != "" {
				return listen(cmd.Context(), f, o, cfg)
			}
			return runOnce(cmd.Context(), f, cfg, format)
		},
	}
	o.bind(cmd, f)
	return cmd
}

func (o *options) bind(cmd *cobra.Command, f *factory.Factory) {
	fs := cmd.Flags()
	fs.StringArrayVar(&o.streams, "stream", nil, "check this stream (repeatable; default every stream)")
	fs.StringArrayVar(&o.consumers, "consumer", nil, "check only consumers of this name (repeatable)")
	fs.BoolVar(&o.all, "all", false, "include KV, object store and DLQ streams (hidden by default)")
	d := pkgconsumer.DefaultThresholds
	factory.DurationVar(fs, &o.lagWarning, pkgconsumer.ThresholdLagWarning, d.Behind, "warning when the oldest unprocessed message is this old").Positive()
	factory.DurationVar(fs, &o.lagCritical, pkgconsumer.ThresholdLagCritical, 0, "critical when the oldest unprocessed message is this old (0: never)")
	factory.DurationVar(fs, &o.stallWarning, pkgconsumer.ThresholdStallWarning, d.Stall, "warning when work is pending and the ack floor has not moved for this long").Positive()
	factory.DurationVar(fs, &o.stallCritical, pkgconsumer.ThresholdStallCritical, d.StallCritical, "critical when work is pending and the ack floor has not moved for this long").Positive()
	fs.Int64Var(&o.deadLetters, pkgconsumer.ThresholdDeadLettersCritical, 0, "critical from this many dead letters waiting (0: never; any is a warning)")
	factory.DurationVar(fs, &o.inactive, "inactive", d.Inactive, "time without activity after which a consumer with no worker is stalled (messages wait) or idle (0: at once)")
	fs.Float64Var(&o.limitsWarning, check.FlagLimitsWarning, check.DefaultLimitsWarning, "warning from this percent of max_msgs or max_bytes (discard new streams; 0: off)")
	fs.Float64Var(&o.limitsCritical, check.FlagLimitsCritical, check.DefaultLimitsCritical, "critical from this percent of max_msgs or max_bytes (discard new streams; 0: off)")
	for _, s := range append(slices.Clone(check.ConsumerSettings), check.StreamSettings...) {
		v := &rawValue{typ: s.Type}
		o.natscli[s.Flag] = &v.raw
		fs.Var(v, s.Flag, s.Usage)
		if s.Type == "bool" {
			// natscli's --pinned is a switch.
			fs.Lookup(s.Flag).NoOptDefVal = "true"
		}
	}
	fs.StringVar(&o.listen, "listen", "", "serve /metrics and /healthz on this address (host:port) until interrupted")
	factory.DurationVar(fs, &o.interval, "interval", 0, "with --listen: evaluate every interval into a cache that scrapes read (0: on each scrape)")
	_ = cmd.RegisterFlagCompletionFunc("stream", f.CompleteStreams())
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(Formats, cobra.ShellCompDirectiveNoFileComp))
}

// config turns the flags into check.Config, validated before anything
// connects.
func (o *options) config(fs *pflag.FlagSet) (check.Config, error) {
	var cfg check.Config
	for _, name := range o.streams {
		if err := jsapi.ValidateStreamName(name); err != nil {
			return cfg, exitcode.UsageErrorf("%v", err)
		}
		if !slices.Contains(cfg.Streams, name) {
			cfg.Streams = append(cfg.Streams, name)
		}
	}
	for _, name := range o.consumers {
		if name == "" || strings.ContainsAny(name, ".*> \t") {
			return cfg, exitcode.UsageErrorf("invalid --consumer %q: a consumer name has no spaces, dots, * or >", name)
		}
		if !slices.Contains(cfg.Consumers, name) {
			cfg.Consumers = append(cfg.Consumers, name)
		}
	}
	if o.interval != 0 && o.listen == "" {
		return cfg, exitcode.UsageErrorf("--interval needs --listen")
	}
	inactive := o.inactive
	if inactive == 0 {
		inactive = time.Nanosecond
	}
	cfg.All = o.all
	// Only the thresholds given: the model fills in the defaults, and a
	// default warning level comes down to a critical level given lower.
	cfg.Thresholds = pkgconsumer.Thresholds{Inactive: inactive}
	cfg.Fixed = map[string]bool{}
	for name, set := range map[string]func(){
		pkgconsumer.ThresholdLagWarning:          func() { cfg.Thresholds.Behind = o.lagWarning },
		pkgconsumer.ThresholdLagCritical:         func() { cfg.Thresholds.BehindCritical = o.lagCritical },
		pkgconsumer.ThresholdStallWarning:        func() { cfg.Thresholds.Stall = o.stallWarning },
		pkgconsumer.ThresholdStallCritical:       func() { cfg.Thresholds.StallCritical = o.stallCritical },
		pkgconsumer.ThresholdDeadLettersCritical: func() { cfg.Thresholds.DeadLettersCritical = o.deadLetters },
		check.FlagInactive:                       func() {},
		check.FlagLimitsWarning:                  func() {},
		check.FlagLimitsCritical:                 func() {},
	} {
		if fs.Changed(name) {
			set()
			cfg.Fixed[name] = true
		}
	}
	cfg.LimitsWarning, cfg.LimitsCritical = o.limitsWarning, o.limitsCritical
	cfg.ConsumerMonitor, cfg.StreamMonitor = map[string]string{}, map[string]string{}
	for _, s := range check.ConsumerSettings {
		if fs.Changed(s.Flag) {
			cfg.ConsumerMonitor[s.Key] = *o.natscli[s.Flag]
		}
	}
	for _, s := range check.StreamSettings {
		if fs.Changed(s.Flag) {
			cfg.StreamMonitor[s.Key] = *o.natscli[s.Flag]
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, exitcode.New(exitcode.Usage, err)
	}
	return cfg, nil
}

// outputFormat is -o, table when not given (json with --jq).
func outputFormat(f *factory.Factory) (string, error) {
	format := f.Output.Format
	switch {
	case format == "" && f.Output.JQ != "":
		format = "json"
	case format == "":
		format = "table"
	}
	if !slices.Contains(Formats, format) {
		return "", exitcode.UsageErrorf("invalid output format %q: use one of %s", format, strings.Join(Formats, ", "))
	}
	if f.Output.JQ != "" && (format == "nagios" || format == "prometheus") {
		return "", exitcode.UsageErrorf("--jq works on the JSON form: use -o json or jsonl, not -o %s", format)
	}
	return format, nil
}

// runOnce checks once, prints the report and exits with its status.
func runOnce(ctx context.Context, f *factory.Factory, cfg check.Config, format string) error {
	report, err := evaluate(ctx, f, cfg)
	if err != nil {
		err = unknown(ctx, err)
		if format == "nagios" && exitcode.Of(err) == int(check.Unknown) {
			fmt.Fprintf(f.IO.Out, "JETCTL CHECK UNKNOWN: %s\n", nagiosText(exitcode.Message(err)))
		}
		return err
	}
	if err := render(f, cfg, report, format); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "jetctl: check %s: %s in %.2fs\n", report.Status.Nagios(), countsText(report), report.DurationSeconds)
	if report.Status == check.OK {
		return nil
	}
	return exitcode.Silent(int(report.Status))
}

// evaluate connects (on first use) and runs the check.
func evaluate(ctx context.Context, f *factory.Factory, cfg check.Config) (*check.Report, error) {
	js, err := f.JetStream(ctx)
	if err != nil {
		return nil, err
	}
	return check.Run(ctx, js, cfg)
}

// unknown maps an error to check's exit codes: usage (2), not found (3)
// and an interruption (130) keep theirs; anything else (the server or
// the network, a permission the user lacks) is UNKNOWN, 3, as nagios
// expects.
func unknown(ctx context.Context, err error) error {
	var perr *natsconn.PermissionError
	if errors.As(context.Cause(ctx), &perr) {
		// The refusal that stopped the check, not the cancellation.
		return exitcode.New(int(check.Unknown), perr)
	}
	switch code := exitcode.Of(err); code {
	case exitcode.Usage, exitcode.NotFound, exitcode.Interrupted:
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return exitcode.New(int(check.Unknown), err)
}

// rawValue keeps a natscli setting as written: ValidateMonitor parses it
// as its metadata is parsed. typ names it in --help.
type rawValue struct{ raw, typ string }

func (v *rawValue) Set(s string) error { v.raw = s; return nil }
func (v *rawValue) String() string     { return v.raw }
func (v *rawValue) Type() string       { return v.typ }
