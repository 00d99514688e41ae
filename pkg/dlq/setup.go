package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/setupresult"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// SetupConfig says what to set up for one source stream.
type SetupConfig struct {
	Stream string
	// Consumers whose advisories are captured; all of the stream's when empty.
	Consumers []string
	// DLQStream overrides the default DLQ_<stream>.
	DLQStream string
	// Replicas of the streams created; 0 takes the source stream's.
	Replicas int
	// MaxAge of the DLQ stream (0: keep forever).
	MaxAge time.Duration
	// AllConsumers widens an existing capture of named consumers to every
	// consumer of the stream. Without it (and without Consumers) a run on
	// an existing setup changes nothing.
	AllConsumers bool
	// CaptureMaxAge of the advisory capture stream (default 7d).
	CaptureMaxAge time.Duration
	DryRun        bool
}

const defaultCaptureMaxAge = 7 * 24 * time.Hour

// SetupResult lists the resources of a DLQ.
type SetupResult struct {
	Stream string `json:"stream"`
	// Retention is the source stream's retention policy: it decides
	// whether messages that died before the capture can still be found
	// (sweep --scan, workqueue and interest only).
	Retention string                 `json:"retention"`
	Resources []setupresult.Resource `json:"resources"`
	// CaptureCreated is true when advisories start being captured now:
	// earlier ones were never captured.
	CaptureCreated bool `json:"capture_created"`
	// NewlyCaptured lists the consumers (or "*", every consumer) whose
	// advisories are captured from this run on, created or widened: their
	// earlier advisories were never captured. Empty when nothing changed.
	NewlyCaptured []string `json:"newly_captured"`
	// CapturedConsumers are the consumers whose advisories the capture
	// stream holds after this run ("*": every consumer of the stream).
	CapturedConsumers []string `json:"captured_consumers"`
	// RecorderHistory is set when the capture reads the recorder and
	// starts capturing consumers now (NewlyCaptured).
	RecorderHistory *RecorderHistory `json:"recorder_history,omitempty"`
}

// RecorderHistory is what the recorder (jetctl events record) held of the
// newly captured consumers' dead letters when setup ran.
type RecorderHistory struct {
	// Stream is the recorder, Start its oldest event: what happened
	// before was never recorded.
	Stream string    `json:"stream"`
	Start  time.Time `json:"start"`
	// Advisories counts the dead-letter advisories (MAX_DELIVERIES and
	// MSG_TERMINATED) of NewlyCaptured it held.
	Advisories int `json:"advisories"`
	// Captured: the capture starts at the recorder's history and holds
	// them, for the next sweep. False where --all-consumers widened a
	// capture of named consumers: the other consumers' stay in the
	// recorder (a source cannot start one subject's history without
	// taking the named consumers' again).
	Captured bool `json:"captured"`
}

// Setup creates what is missing and verifies what exists. Run again, it
// changes nothing unless asked: consumers named for the first time have
// their advisories captured too, and AllConsumers widens a capture of
// named consumers to every consumer. Every check that can refuse the
// configuration runs before the first change.
func Setup(ctx context.Context, js jetstream.JetStream, cfg SetupConfig) (*SetupResult, error) {
	if err := ValidateSetup(cfg); err != nil {
		return nil, err
	}
	src, err := sourceStream(ctx, js, cfg.Stream, cfg.Consumers)
	if err != nil {
		return nil, err
	}
	replicas := cfg.Replicas
	if replicas <= 0 {
		replicas = src.CachedInfo().Config.Replicas
	}
	captureAge := cfg.CaptureMaxAge
	if captureAge <= 0 {
		captureAge = defaultCaptureMaxAge
	}
	n := DefaultNames(cfg.Stream, cfg.DLQStream)
	res := &SetupResult{Stream: cfg.Stream, Retention: RetentionName(src.CachedInfo().Config.Retention), Resources: []setupresult.Resource{}, NewlyCaptured: []string{}}
	add := func(kind, name, action, detail string) {
		res.Resources = append(res.Resources, setupresult.Resource{Kind: kind, Name: name, Action: action, Detail: detail})
	}

	// Look first: everything that can refuse is checked before a change.
	capture, err := js.Stream(ctx, n.Capture)
	captureExists := err == nil
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return nil, fmt.Errorf("stream %q: %w", n.Capture, err)
	default:
		cc := capture.CachedInfo().Config
		if cc.Metadata[MetaSource] != cfg.Stream {
			return nil, fmt.Errorf("%w: stream %q exists and was not created by jetctl dlq setup for %q", ErrInvalid, n.Capture, cfg.Stream)
		}
		if dlq := cc.Metadata[MetaDLQ]; cfg.DLQStream != "" && dlq != cfg.DLQStream {
			return nil, fmt.Errorf("%w: stream %q already sweeps into %q, not %q", ErrInvalid, cfg.Stream, dlq, cfg.DLQStream)
		}
		if dlq := cc.Metadata[MetaDLQ]; dlq != "" {
			n.DLQ = dlq
		}
	}
	var durable jetstream.Consumer
	if captureExists {
		durable, err = js.Consumer(ctx, n.Capture, n.Durable)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
		case err != nil:
			return nil, fmt.Errorf("stream %q: consumer %q: %w", n.Capture, n.Durable, err)
		case durable.CachedInfo().Config.AckPolicy != jetstream.AckExplicitPolicy:
			return nil, fmt.Errorf("%w: consumer %q on %q does not ack explicitly", ErrInvalid, n.Durable, n.Capture)
		}
	}
	dlq, err := js.Stream(ctx, n.DLQ)
	dlqExists := err == nil
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return nil, fmt.Errorf("stream %q: %w", n.DLQ, err)
	default:
		dc := dlq.CachedInfo().Config
		if dc.Metadata[MetaSource] != cfg.Stream || dc.Metadata[MetaRole] != roleDLQ || !slices.Contains(dc.Subjects, n.SubjectPrefix+".>") {
			return nil, fmt.Errorf("%w: stream %q exists but is not the DLQ of %q (it needs subject %s.> and metadata %s=%s); nothing was changed",
				ErrInvalid, n.DLQ, cfg.Stream, n.SubjectPrefix, MetaSource, cfg.Stream)
		}
	}

	// The capture stream: it owns its subjects, or, where the account has
	// a recorder, reads them from it (capture_source.go).
	rec, err := usableRecorder(ctx, js)
	if err != nil {
		return nil, err
	}
	if !captureExists {
		want := AdvisorySubjects(cfg.Stream, cfg.Consumers)
		res.NewlyCaptured = capturedConsumers(want)
		res.CapturedConsumers = capturedConsumers(want)
		sc := jetstream.StreamConfig{
			Name:        n.Capture,
			Description: "Consumer advisories of stream " + cfg.Stream + " captured by jetctl dlq",
			Subjects:    want,
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			Replicas:    replicas,
			MaxAge:      captureAge,
			Discard:     jetstream.DiscardOld,
			Metadata:    map[string]string{MetaSource: cfg.Stream, MetaRole: roleCapture, MetaDLQ: n.DLQ},
		}
		if rec != nil {
			// From the recorder's history on: the dead letters it
			// recorded before the capture existed are captured too,
			// and the sweep takes them as any other
			// (TestFactSourceCopiesTheOriginsHistory).
			start := HistoryStart(rec)
			ReadRecorder(&sc, want, start)
			setRecorderFrom(&sc, fromSeq(want, start))
			if res.RecorderHistory, err = recorderHistory(ctx, js, rec, cfg.Stream, want, nil, true); err != nil {
				return nil, err
			}
		}
		detail := captureDetail(&sc)
		if cfg.DryRun {
			add("stream", n.Capture, setupresult.ActionWouldCreate, detail)
		} else {
			if _, err := js.CreateStream(ctx, sc); err != nil {
				return nil, fmt.Errorf("stream %q: %w", n.Capture, err)
			}
			res.CaptureCreated = true
			add("stream", n.Capture, setupresult.ActionCreated, detail)
		}
	} else {
		cc := capture.CachedInfo().Config
		// Without --consumer (or --all-consumers) a run verifies: what
		// was set up stays as it is.
		var want []string
		switch {
		case cfg.AllConsumers:
			want = AdvisorySubjects(cfg.Stream, nil)
		case len(cfg.Consumers) > 0:
			want = AdvisorySubjects(cfg.Stream, cfg.Consumers)
		}
		have := CaptureFilters(&cc)
		subjects := mergeSubjects(have, want)
		res.CapturedConsumers = capturedConsumers(subjects)
		if slices.Equal(subjects, have) {
			add("stream", n.Capture, setupresult.ActionExists, captureDetail(&cc))
		} else {
			before := capturedConsumers(have)
			for _, c := range res.CapturedConsumers {
				if !slices.Contains(before, c) {
					res.NewlyCaptured = append(res.NewlyCaptured, c)
				}
			}
			if ReadsRecorder(&cc) {
				if err := widenRecorderCapture(ctx, js, rec, capture.CachedInfo(), &cc, have, subjects, res); err != nil {
					return nil, err
				}
			} else {
				cc.Subjects = subjects
			}
			detail := captureDetail(&cc)
			if !ReadsRecorder(&cc) {
				detail = "subjects " + detail
			}
			if cfg.DryRun {
				add("stream", n.Capture, setupresult.ActionWouldUpdate, detail)
			} else {
				if _, err := js.UpdateStream(ctx, cc); err != nil {
					return nil, fmt.Errorf("stream %q: %w", n.Capture, err)
				}
				add("stream", n.Capture, setupresult.ActionUpdated, detail)
			}
		}
	}

	// The sweep's durable consumer on it.
	if err := setupDurable(ctx, js, n, durable, cfg.DryRun, replicas, add); err != nil {
		return nil, err
	}

	// The DLQ stream.
	switch {
	case dlqExists:
		add("stream", n.DLQ, setupresult.ActionExists, strings.Join(dlq.CachedInfo().Config.Subjects, ", "))
	case cfg.DryRun:
		add("stream", n.DLQ, setupresult.ActionWouldCreate, n.SubjectPrefix+".>")
	default:
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        n.DLQ,
			Description: "Dead letters of stream " + cfg.Stream + " (jetctl dlq)",
			Subjects:    []string{n.SubjectPrefix + ".>"},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			Replicas:    replicas,
			MaxAge:      cfg.MaxAge,
			Metadata:    map[string]string{MetaSource: cfg.Stream, MetaRole: roleDLQ},
		})
		if err != nil {
			return nil, fmt.Errorf("stream %q: %w", n.DLQ, err)
		}
		add("stream", n.DLQ, setupresult.ActionCreated, n.SubjectPrefix+".>")
	}
	return res, nil
}

// widenRecorderCapture gives cc, a capture that reads the recorder, the
// subjects it had (have) and more. Consumers named for the first time get
// a source of their own that starts at the recorder's history; the
// sources there are go on where they are, so nothing they copied comes
// again (TestFactSourceCopiesTheOriginsHistory). A wildcard that replaces
// named consumers' subjects (--all-consumers) cannot start at the history:
// it would take the named consumers' advisories a second time, and a
// dead letter redriven or purged since would be swept again. Once the
// capture holds every advisory of the named consumers the recorder holds
// (caughtUp), its source starts at the recorder's next sequence: nothing
// of theirs is missed, the other consumers' recorded dead letters stay in
// the recorder (res.RecorderHistory says how many), and MetaRecorderFrom
// keeps what the replaced sources held.
func widenRecorderCapture(ctx context.Context, js jetstream.JetStream, rec, info *jetstream.StreamInfo, cc *jetstream.StreamConfig, have, subjects []string, res *SetupResult) error {
	from := RecorderFrom(cc)
	var added []string
	kept := true
	for _, s := range subjects {
		if !slices.Contains(have, s) {
			added = append(added, s)
		}
	}
	for _, s := range have {
		kept = kept && slices.Contains(subjects, s)
	}
	if kept && rec != nil {
		start := HistoryStart(rec)
		cc.Sources = append(cc.Sources, RecorderSource(added, start))
		for s, seq := range fromSeq(added, start) {
			from[s] = seq
		}
		setRecorderFrom(cc, from)
		var err error
		res.RecorderHistory, err = recorderHistory(ctx, js, rec, res.Stream, added, nil, true)
		return err
	}
	var start uint64
	var err error
	if rec == nil {
		start, err = nextSourceSeq(ctx, js, info)
	} else {
		start, err = caughtUp(ctx, js, info, have)
	}
	if err != nil {
		return err
	}
	ReadRecorder(cc, subjects, start)
	for _, s := range added {
		from[s] = start
	}
	setRecorderFrom(cc, from)
	res.RecorderHistory, err = recorderHistory(ctx, js, rec, res.Stream, added, have, false)
	return err
}

// fromSeq maps each subject to seq.
func fromSeq(subjects []string, seq uint64) map[string]uint64 {
	out := make(map[string]uint64, len(subjects))
	for _, s := range subjects {
		out[s] = seq
	}
	return out
}

// recorderHistory says what the recorder holds of the dead letters on
// subjects (none of except) of stream; nil without a recorder.
func recorderHistory(ctx context.Context, js jetstream.JetStream, rec *jetstream.StreamInfo, stream string, subjects, except []string, captured bool) (*RecorderHistory, error) {
	if rec == nil {
		return nil, nil
	}
	counts, err := RecordedDeadLetters(ctx, js, rec, stream)
	if err != nil {
		return nil, err
	}
	n := countRecorded(counts, subjects, except)
	return &RecorderHistory{Stream: rec.Config.Name, Start: rec.State.FirstTime, Advisories: n, Captured: captured}, nil
}

// ValidateSetup refuses names the server would refuse, or that would make
// the DLQ one of the streams it is made from.
func ValidateSetup(cfg SetupConfig) error {
	if err := jsapi.ValidateStreamName(cfg.Stream); err != nil {
		return fmt.Errorf("%w: --stream: %v", ErrInvalid, err)
	}
	n := DefaultNames(cfg.Stream, cfg.DLQStream)
	if cfg.DLQStream != "" {
		if err := jsapi.ValidateStreamName(cfg.DLQStream); err != nil {
			return fmt.Errorf("%w: --dlq-stream: %v", ErrInvalid, err)
		}
	}
	switch n.DLQ {
	case cfg.Stream:
		return fmt.Errorf("%w: --dlq-stream %q is the source stream itself: the DLQ must be another stream", ErrInvalid, n.DLQ)
	case n.Capture:
		return fmt.Errorf("%w: --dlq-stream %q is the advisory capture stream: the DLQ must be another stream", ErrInvalid, n.DLQ)
	}
	if err := jsapi.ValidateStreamName(n.Capture); err != nil {
		return fmt.Errorf("%w: capture stream: %v", ErrInvalid, err)
	}
	if cfg.AllConsumers && len(cfg.Consumers) > 0 {
		return fmt.Errorf("%w: --all-consumers and --consumer exclude each other", ErrInvalid)
	}
	for _, c := range cfg.Consumers {
		if c == "" || strings.ContainsAny(c, ".*> \t\r\n") {
			return fmt.Errorf("%w: invalid --consumer %q", ErrInvalid, c)
		}
	}
	return nil
}

// capturedConsumers names the consumers whose advisories the capture
// subjects cover; "*" stands for every consumer.
func capturedConsumers(subjects []string) []string {
	out := []string{}
	for _, s := range subjects {
		c := filterConsumer(s)
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// setupDurable creates the sweep's durable on the capture stream unless
// it exists (found, and checked, before any change).
func setupDurable(ctx context.Context, js jetstream.JetStream, n Names, existing jetstream.Consumer, dryRun bool, replicas int, add func(kind, name, action, detail string)) error {
	const detail = "explicit ack; its ack floor is the sweep's checkpoint"
	name := n.Capture + " > " + n.Durable
	switch {
	case existing != nil && dryRun:
		add("consumer", name, setupresult.ActionExists, detail)
		return nil
	case existing != nil:
		add("consumer", name, setupresult.ActionExists, fmt.Sprintf("ack floor %d", existing.CachedInfo().AckFloor.Stream))
		return nil
	case dryRun:
		add("consumer", name, setupresult.ActionWouldCreate, detail)
		return nil
	}
	if _, err := js.CreateConsumer(ctx, n.Capture, durableConfig(n.Durable, replicas)); err != nil {
		return fmt.Errorf("stream %q: consumer %q: %w", n.Capture, n.Durable, err)
	}
	add("consumer", name, setupresult.ActionCreated, detail)
	return nil
}

func durableConfig(name string, replicas int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       name,
		Description:   "jetctl dlq sweep: its ack floor is the sweep's checkpoint",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       5 * time.Minute,
		MaxAckPending: 20000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		Replicas:      replicas,
	}
}

// mergeSubjects adds want to have; a wildcard for all consumers replaces
// the per-consumer subjects it covers.
func mergeSubjects(have, want []string) []string {
	out := slices.Clone(have)
	for _, w := range want {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	var kept []string
	for _, s := range out {
		covered := false
		for _, o := range out {
			if o != s && strings.HasSuffix(o, ".*") && streamread.SubjectMatches(o, s) {
				covered = true
			}
		}
		if !covered {
			kept = append(kept, s)
		}
	}
	return kept
}

// Resolve finds the names of an existing DLQ for stream (made by Setup).
func Resolve(ctx context.Context, js jetstream.JetStream, stream string) (Names, error) {
	n := DefaultNames(stream, "")
	if _, err := js.Stream(ctx, stream); err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			if to := movedTo(ctx, js, stream); to != "" {
				return n, fmt.Errorf("stream %q: %w (it was moved, with its DLQ, to %q: use --stream %s)", stream, err, to, to)
			}
		}
		return n, fmt.Errorf("stream %q: %w", stream, err)
	}
	capture, err := js.Stream(ctx, n.Capture)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return n, fmt.Errorf("stream %q: %w: no advisory capture stream %q (run: jetctl dlq setup --stream %s)", stream, ErrNotSetUp, n.Capture, stream)
	}
	if err != nil {
		return n, fmt.Errorf("stream %q: %w", n.Capture, err)
	}
	if d := capture.CachedInfo().Config.Metadata[MetaDLQ]; d != "" {
		n.DLQ = d
	}
	if _, err := js.Stream(ctx, n.DLQ); errors.Is(err, jetstream.ErrStreamNotFound) {
		return n, fmt.Errorf("stream %q: %w: DLQ stream %q is missing (run: jetctl dlq setup --stream %s)", stream, ErrNotSetUp, n.DLQ, stream)
	} else if err != nil {
		return n, fmt.Errorf("stream %q: %w", n.DLQ, err)
	}
	return n, nil
}

// movedTo is the stream a move gave stream's DLQ to (the DLQ stream names
// stream among its former sources), "" when there is none.
func movedTo(ctx context.Context, js jetstream.JetStream, stream string) string {
	l := js.ListStreams(ctx)
	to := ""
	for si := range l.Info() {
		md := si.Config.Metadata
		if md[MetaRole] == roleDLQ && slices.Contains(movedFrom(md), stream) {
			to = md[MetaSource]
		}
	}
	if l.Err() != nil {
		return ""
	}
	return to
}

// sourceStream looks the source stream up and checks that the named
// consumers exist on it.
func sourceStream(ctx context.Context, js jetstream.JetStream, stream string, consumers []string) (jetstream.Stream, error) {
	src, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", stream, err)
	}
	for _, c := range consumers {
		if _, err := src.Consumer(ctx, c); err != nil {
			return nil, fmt.Errorf("stream %q: consumer %q: %w", stream, c, err)
		}
	}
	return src, nil
}
