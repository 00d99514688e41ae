package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// origin is a subject (or a filter) that a republish copies messages from,
// and whether a copy of one of them may carry a TTL.
type origin struct {
	subject string
	ttl     bool
}

// streamOrigins are where the copies of range r come from: its --subject
// filters, else the stream's subjects, else (a stream that sources or
// mirrors others, whose messages keep their subjects) any subject. A copy
// may carry a TTL when --ttl is not drop and the stream allows TTLs, or
// sources or mirrors streams (a sourced message keeps its Nats-TTL in a
// stream that does not allow them: TestFactSourcedTTLKeptWithoutAllowMsgTTL).
func streamOrigins(r streamread.Range, mode envelope.TTLMode) []origin {
	sc := r.StreamConfig
	replicated := len(sc.Sources) > 0 || sc.Mirror != nil
	ttl := mode != envelope.TTLDrop && (sc.AllowMsgTTL || replicated)
	subjects := r.Subjects
	if len(subjects) == 0 {
		subjects = sc.Subjects
		if replicated || len(subjects) == 0 {
			subjects = []string{">"}
		}
	}
	out := make([]origin, len(subjects))
	for i, s := range subjects {
		out[i] = origin{subject: s, ttl: ttl}
	}
	return out
}

// checkTargets looks up the streams that can store the copies (those
// whose subjects overlap a copy's target subject), before the first copy
// is sent. It refuses a counter stream among them, and one that does not
// allow per-message TTLs where a copy may carry one (the server would
// refuse those copies, 10166); what refuses wraps ErrInvalid. It returns
// --markers' choice, resolving MarkersAuto: keep when every such stream
// is a KV bucket's, else skip. from names where the copies come from, for
// the refusal.
func checkTargets(ctx context.Context, js jetstream.JetStream, pc *PublishConfig, origins []origin, from string) (MarkersMode, error) {
	streams, err := targetStreams(ctx, js, targetFilter(pc.To))
	if err != nil {
		return 0, fmt.Errorf("looking up the streams of --to %s: %w", pc.To, err)
	}
	type target struct {
		cfg jetstream.StreamConfig
		ttl bool // a copy carrying a TTL may go to it
	}
	var targets []target
	for _, sc := range streams {
		hit, ttl := false, false
		for _, o := range origins {
			if captures(sc.Subjects, targetFilterFor(pc.To, o.subject)) {
				hit, ttl = true, ttl || o.ttl
			}
		}
		if hit {
			targets = append(targets, target{sc, ttl})
		}
	}
	for _, t := range targets {
		if t.cfg.AllowMsgCounter {
			return 0, invalid{fmt.Errorf("target stream %q is a counter stream (allow_msg_counter): it stores only increments (Nats-Incr), and a copy never applies an increment again; replay into a stream that is not a counter", t.cfg.Name)}
		}
	}
	for _, t := range targets {
		if t.ttl && !t.cfg.AllowMsgTTL {
			return 0, invalid{fmt.Errorf("--ttl %s: target stream %q does not allow per-message TTLs (allow_msg_ttl), and %s may carry one, which the server refuses; use --ttl drop to copy without TTLs, or allow TTLs on %q", pc.TTL, t.cfg.Name, from, t.cfg.Name)}
		}
	}
	if pc.Markers != MarkersAuto {
		return pc.Markers, nil
	}
	if len(targets) == 0 {
		return MarkersSkip, nil
	}
	for _, t := range targets {
		if !strings.HasPrefix(t.cfg.Name, "KV_") {
			return MarkersSkip, nil
		}
	}
	return MarkersKeep, nil
}

// targetStreams lists the configurations of the streams whose subjects
// overlap filter, by name (TestFactStreamListSubjectOverlaps).
func targetStreams(ctx context.Context, js jetstream.JetStream, filter string) ([]jetstream.StreamConfig, error) {
	lctx, cancel := context.WithTimeout(ctx, 2*listTimeout(js))
	defer cancel()
	var out []jetstream.StreamConfig
	list := js.ListStreams(lctx, jetstream.WithStreamListSubject(filter))
	for info := range list.Info() {
		out = append(out, info.Config)
	}
	if err := list.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return nil, err
	}
	slices.SortFunc(out, func(a, b jetstream.StreamConfig) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func listTimeout(js jetstream.JetStream) time.Duration {
	if t := js.Options().DefaultTimeout; t > 0 {
		return t
	}
	return 5 * time.Second
}

// targetFilterFor is a filter that the target subjects of the copies of
// messages on subject (a filter itself) match: subject mapped through to,
// or targetFilter(to) where that is no valid filter ('{subject}.x' of
// orders.>).
func targetFilterFor(to, subject string) string {
	if f := TargetSubject(to, subject); streamread.ValidateSubject(f) == nil {
		return f
	}
	return targetFilter(to)
}

// captures reports whether a stream with subjects stores a publish to some
// subject that filter matches.
func captures(subjects []string, filter string) bool {
	return slices.ContainsFunc(subjects, func(s string) bool { return streamread.SubjectsOverlap(s, filter) })
}
