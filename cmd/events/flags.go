package events

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jetctl/jetctl/cmd/exitcode"
	"github.com/jetctl/jetctl/cmd/factory"
	"github.com/jetctl/jetctl/cmd/output"
	pkgevents "github.com/jetctl/jetctl/pkg/events"
)

// selectFlags are what timeline and tail share: which events.
type selectFlags struct {
	stream, consumer string
	since            time.Duration
	fromTime         time.Time
	types            []string
	filter           string
}

const timeHint = "use RFC 3339, e.g. 2026-11-29T02:10:00Z"

func (s *selectFlags) bind(cmd *cobra.Command, f *factory.Factory, fs *pflag.FlagSet) {
	fs.StringVar(&s.stream, "stream", "", "only this stream's events and its consumers'")
	fs.StringVar(&s.consumer, "consumer", "", "only this consumer's events and its stream's (with --stream)")
	factory.DurationVar(fs, &s.since, "since", 0, "start this long ago (e.g. 15m, 2h, 7d)").Positive().Hint("use a duration like 15m, 2h or 7d")
	factory.TimeVar(fs, &s.fromTime, "from-time", "start at this time (RFC 3339)").Hint(timeHint)
	fs.StringSliceVar(&s.types, "type", nil, "only events of this type (repeatable or comma-separated: max_deliveries, terminated, nak, consumer_created, stream_leader_elected, audit, ...)")
	fs.StringVar(&s.filter, "filter", "", "jq program: keep the events for which it is true")
	_ = cmd.RegisterFlagCompletionFunc("stream", f.CompleteStreams())
	_ = cmd.RegisterFlagCompletionFunc("consumer", f.CompleteConsumersOf(func(*cobra.Command, []string) string { return s.stream }))
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions(pkgevents.Types, cobra.ShellCompDirectiveNoFileComp))
}

// config turns the flags into a timeline configuration, checked before
// anything is contacted; keep runs --filter (nil for none).
func (s *selectFlags) config(ctx context.Context, errOut io.Writer) (pkgevents.TimelineConfig, error) {
	cfg := pkgevents.TimelineConfig{Stream: s.stream, Consumer: s.consumer, Types: s.types}
	if s.since > 0 && !s.fromTime.IsZero() {
		return cfg, exitcode.UsageErrorf("use --since or --from-time, not both")
	}
	if s.since > 0 {
		cfg.From = time.Now().Add(-s.since)
	} else {
		cfg.From = s.fromTime
	}
	keep, err := eventFilter(ctx, s.filter, errOut)
	if err != nil {
		return cfg, err
	}
	cfg.Keep = keep
	cfg.Before = func(start time.Time) {
		fmt.Fprintf(errOut, "jetctl: the record starts at %s: nothing before it was recorded (or the recorder's limits dropped it)\n", start.UTC().Format(time.RFC3339))
	}
	return cfg, nil
}

// eventFilter compiles --filter for events: a program that fails on an
// event does not keep it, with one warning.
func eventFilter(ctx context.Context, expr string, errOut io.Writer) (func(*pkgevents.Event) bool, error) {
	filter, err := output.CompileFilter(expr, "events it fails on")
	if filter == nil || err != nil {
		return nil, err
	}
	warn := filter.WarnOnce(errOut)
	return func(e *pkgevents.Event) bool {
		keep, err := filter.Keep(ctx, eventObject{e}, func() (any, error) { return generic(e) })
		if err != nil {
			warn(fmt.Sprintf("the event at %s seq %d", e.From, e.FromSeq), err)
		}
		return keep
	}, nil
}

// eventObject gives the fast path of --filter an event's top-level fields
// without building its whole document.
type eventObject struct{ e *pkgevents.Event }

func (o eventObject) Field(name string) (any, error) {
	e := o.e
	switch name {
	case "type":
		return e.Type, nil
	case "stream":
		return nilIfEmpty(e.Stream), nil
	case "consumer":
		return nilIfEmpty(e.Consumer), nil
	case "seq":
		return nilIfZero(e.Seq), nil
	case "deliveries":
		return nilIfZero(e.Deliveries), nil
	case "reason":
		return nilIfEmpty(e.Reason), nil
	case "leader":
		return nilIfEmpty(e.Leader), nil
	case "user":
		return nilIfEmpty(e.User), nil
	case "text":
		return e.Text, nil
	case "subject":
		return e.Subject, nil
	case "from":
		return e.From, nil
	}
	// The rest (time, advisory, audit, ...) from the whole document.
	doc, err := generic(e)
	if err != nil {
		return nil, err
	}
	return doc.(map[string]any)[name], nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nilIfZero(n uint64) any {
	if n == 0 {
		return nil
	}
	return int(n)
}

// generic is the event's JSON document as gojq takes it.
func generic(e *pkgevents.Event) (any, error) { return output.Generic(e) }

// timeNow is time.Now: the one clock the flags are checked against.
func timeNow() time.Time { return time.Now() }
