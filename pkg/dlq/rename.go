package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/lease"
	"github.com/jetctl/jetctl/pkg/recorder"
	"github.com/jetctl/jetctl/pkg/retry"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// A stream moved to another name (jetctl migrate stream --as) takes its
// DLQ along. The advisories name the stream, so the capture of the old
// name hears nothing from the new one, and a stream cannot be renamed:
//
//  1. PrepareMove, before the cutover: the capture stream of the new name
//     (DLQ_ADVISORIES_<to>, the same consumers' advisories, metadata
//     jetctl_dlq_moved_from=<from>) with its sweep durable, and the DLQ
//     stream takes dlq.<to>.> beside dlq.<from>.>. Nothing is lost if the
//     move stops here: the old capture still serves the old name.
//  2. FinishMove, once the source is gone and before the consumers resume
//     on the target (so no advisory of either name is sent meanwhile):
//     under the old name's sweep lease, every advisory the sweep has not
//     acknowledged is published again to the new capture, naming the new
//     stream (the move keeps the sequences, so stream_seq still points
//     at the message), except those whose message the DLQ holds already;
//     then the DLQ stream's jetctl_dlq_source becomes <to> and the old
//     capture is deleted.
//
// The DLQ stream keeps its name and its entries (their provenance headers
// name the old stream; a redrive sends them to their original subject,
// which the moved stream now holds). Killed anywhere and run again, both
// steps finish: an advisory carried twice is one more duplicate, which the
// sweep already tells apart (its DLQ subject can be written once).

// MetaMovedFrom, on a capture and a DLQ stream, names the streams whose
// DLQ they were before a move, comma-separated, oldest first.
const MetaMovedFrom = "jetctl_dlq_moved_from"

// HeaderMovedFrom marks an advisory carried to the capture of a stream's
// new name: the name it was captured under.
const HeaderMovedFrom = "Jetctl-Dlq-Moved-From"

// MovePlan is the DLQ of a stream that moves to another name.
type MovePlan struct {
	From string `json:"from"`
	To   string `json:"to"`
	// FormerCapture is the capture of From, deleted at the end (gone when
	// a run that was killed got that far).
	FormerCapture string `json:"former_capture"`
	// Capture is the capture of To, created before the cutover.
	Capture string `json:"capture"`
	// CaptureSubjects are Capture's: the same consumers' advisories as
	// FormerCapture's, of To.
	CaptureSubjects []string `json:"capture_subjects"`
	// DLQ is the DLQ stream: it keeps its name and entries and takes
	// DLQSubjects for the sweeps of To.
	DLQ        string `json:"dlq_stream"`
	DLQSubject string `json:"dlq_subject"`
	// Unswept is how many advisories FormerCapture holds that the sweep
	// has not acknowledged when the plan was made: they are carried.
	Unswept uint64 `json:"unswept"`
	// Carried and AlreadySwept are what FinishMove did with them: carried
	// to Capture, or left out because the DLQ holds their message.
	Carried      int `json:"carried"`
	AlreadySwept int `json:"already_swept"`
	// Unchanged: the stream keeps its name (a replacement in place, a
	// move to another server, refused), so its DLQ stays as it is.
	Unchanged bool `json:"unchanged,omitempty"`
}

// PlanMove looks at the DLQ of stream from, which is to move to the name
// to: nil when from has none (and no move of it to to is under way). It
// refuses (ErrInvalid) what would stop the move, before anything changes:
// a capture of to that is not this move's, a DLQ stream that is missing.
// With from == to (the same name: a replacement in place, another
// server) it only says whether there is a DLQ (Unchanged).
func PlanMove(ctx context.Context, js jetstream.JetStream, from, to string) (*MovePlan, error) {
	fromN, toN := DefaultNames(from, ""), DefaultNames(to, "")
	p := &MovePlan{From: from, To: to, FormerCapture: fromN.Capture, Capture: toN.Capture, DLQ: fromN.DLQ, DLQSubject: toN.SubjectPrefix + ".>"}
	former, err := captureOf(ctx, js, fromN.Capture, from)
	if err != nil {
		return nil, err
	}
	if former != nil {
		p.CaptureSubjects = AdvisorySubjects(to, capturedConsumers(CaptureFilters(&former.Config)))
		if d := former.Config.Metadata[MetaDLQ]; d != "" {
			p.DLQ = d
		}
		if ci, err := js.Consumer(ctx, fromN.Capture, fromN.Durable); err == nil {
			p.Unswept = ci.CachedInfo().NumPending + uint64(ci.CachedInfo().NumAckPending)
		} else {
			p.Unswept = former.State.Msgs // never swept: every advisory is
		}
	}
	if from == to {
		if former == nil {
			return nil, nil
		}
		p.Unchanged = true
		return p, nil
	}
	next, err := js.Stream(ctx, toN.Capture)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		if former == nil {
			return nil, nil
		}
	case err != nil:
		return nil, fmt.Errorf("stream %q: %w", toN.Capture, err)
	default:
		c := next.CachedInfo().Config
		if c.Metadata[MetaSource] != to || !slices.Contains(movedFrom(c.Metadata), from) {
			if former == nil {
				return nil, nil // to's own DLQ; from has none
			}
			return nil, fmt.Errorf("%w: stream %q has a DLQ, and its capture for the new name, %q, exists already and is not its move's; nothing was changed", ErrInvalid, from, toN.Capture)
		}
		if former == nil {
			// A run killed after the old capture was deleted.
			p.CaptureSubjects = CaptureFilters(&c)
			if d := c.Metadata[MetaDLQ]; d != "" {
				p.DLQ = d
			}
		}
	}
	d, err := js.Stream(ctx, p.DLQ)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: stream %q: its DLQ stream %q is missing, so its DLQ cannot move with it: run jetctl dlq setup --stream %s first; nothing was changed", ErrInvalid, from, p.DLQ, from)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", p.DLQ, err)
	}
	if src := d.CachedInfo().Config.Metadata[MetaSource]; src != from && src != to {
		return nil, fmt.Errorf("%w: stream %q is the DLQ of %q, not of %q; nothing was changed", ErrInvalid, p.DLQ, src, from)
	}
	return p, nil
}

// captureOf is the capture stream name of source, nil when there is
// none (or it is not one jetctl dlq setup made for source).
func captureOf(ctx context.Context, js jetstream.JetStream, name, source string) (*jetstream.StreamInfo, error) {
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", name, err)
	}
	si := s.CachedInfo()
	if si.Config.Metadata[MetaSource] != source || si.Config.Metadata[MetaRole] != roleCapture {
		return nil, nil
	}
	return si, nil
}

func movedFrom(md map[string]string) []string {
	if md[MetaMovedFrom] == "" {
		return nil
	}
	return strings.Split(md[MetaMovedFrom], ",")
}

func withMovedFrom(md map[string]string, from string) map[string]string {
	out := map[string]string{}
	for k, v := range md {
		out[k] = v
	}
	if names := movedFrom(md); !slices.Contains(names, from) {
		out[MetaMovedFrom] = strings.Join(append(names, from), ",")
	}
	return out
}

// PrepareMove makes what the new name's DLQ needs before the cutover: its
// capture stream and sweep durable, and its subject on the DLQ stream.
// Run again, it changes nothing.
func PrepareMove(ctx context.Context, js jetstream.JetStream, p *MovePlan) error {
	fromN, toN := DefaultNames(p.From, p.DLQ), DefaultNames(p.To, p.DLQ)
	capture, err := js.Stream(ctx, toN.Capture)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		former, err := js.Stream(ctx, fromN.Capture)
		if err != nil {
			return fmt.Errorf("stream %q: %w", fromN.Capture, err)
		}
		c := former.CachedInfo().Config
		c.Name = toN.Capture
		c.Subjects = p.CaptureSubjects
		delete(c.Metadata, MetaOwnUntil)
		if ReadsRecorder(&former.CachedInfo().Config) {
			// The old capture reads the recorder: so does the new one,
			// from the recorder's next advisory on.
			rec, err := usableRecorder(ctx, js)
			if err != nil {
				return err
			}
			if rec == nil {
				return fmt.Errorf("stream %q reads the advisories from %q, which is missing or not ready: run jetctl events record", fromN.Capture, recorder.Stream)
			}
			ReadRecorder(&c, p.CaptureSubjects, rec.State.LastSeq+1)
		}
		c.Description = "Consumer advisories of stream " + p.To + " captured by jetctl dlq"
		c.Metadata = withMovedFrom(map[string]string{MetaSource: p.To, MetaRole: roleCapture, MetaDLQ: p.DLQ, MetaMovedFrom: former.CachedInfo().Config.Metadata[MetaMovedFrom]}, p.From)
		if capture, err = js.CreateStream(ctx, c); err != nil {
			return fmt.Errorf("creating %q: %w", toN.Capture, err)
		}
	case err != nil:
		return fmt.Errorf("stream %q: %w", toN.Capture, err)
	}
	if _, err := js.Consumer(ctx, toN.Capture, SweepDurable); errors.Is(err, jetstream.ErrConsumerNotFound) {
		if _, err := js.CreateConsumer(ctx, toN.Capture, durableConfig(SweepDurable, capture.CachedInfo().Config.Replicas)); err != nil {
			return fmt.Errorf("stream %q: consumer %q: %w", toN.Capture, SweepDurable, err)
		}
	} else if err != nil {
		return fmt.Errorf("stream %q: consumer %q: %w", toN.Capture, SweepDurable, err)
	}
	d, err := js.Stream(ctx, p.DLQ)
	if err != nil {
		return fmt.Errorf("stream %q: %w", p.DLQ, err)
	}
	if c := d.CachedInfo().Config; !slices.Contains(c.Subjects, p.DLQSubject) {
		c.Subjects = append(c.Subjects, p.DLQSubject)
		if _, err := js.UpdateStream(ctx, c); err != nil {
			return fmt.Errorf("stream %q: adding subject %s: %w", p.DLQ, p.DLQSubject, err)
		}
	}
	return nil
}

// moveLockTTL is how long the old name's sweep lease outlives a move
// that died holding it on another host.
const moveLockTTL = 30 * time.Second

// FinishMove carries the advisories the sweep of the old name has not
// acknowledged to the new capture, makes the DLQ stream the new name's and
// deletes the old capture. Call it once the stream is gone from the old
// name and before its consumers deliver under the new one. at, if set, is
// called at "dlq-carried" (the advisories carried, the old capture not
// yet deleted): a test kills the run there.
func FinishMove(ctx context.Context, js jetstream.JetStream, p *MovePlan, at func(string)) error {
	fromN, toN := DefaultNames(p.From, p.DLQ), DefaultNames(p.To, p.DLQ)
	former, err := captureOf(ctx, js, fromN.Capture, p.From)
	if err != nil {
		return err
	}
	if former != nil {
		// No sweep of the old name may copy while its advisories move. One
		// that runs now ends soon: its stream is gone.
		var lock *lease.Lock
		err := retry.Do(ctx, retry.Policy{Within: moveLockTTL, Pause: 200 * time.Millisecond, MaxPause: 2 * time.Second,
			Retryable: func(err error) bool { return errors.Is(err, lease.ErrLocked) }}, func(ctx context.Context) (err error) {
			lock, err = lease.Acquire(ctx, js, SweepLockKey(p.From), moveLockTTL, "jetctl dlq unlock --stream "+p.From)
			return err
		})
		if err != nil {
			return fmt.Errorf("stream %q: carrying its DLQ to %q: a sweep is running: %w", p.From, p.To, err)
		}
		defer lock.Release(context.WithoutCancel(ctx))
		lctx, cancel := lock.WithLease(ctx)
		err = carry(lctx, js, p, former, fromN, toN)
		cancel()
		if err != nil {
			return err
		}
	}
	if at != nil {
		at("dlq-carried")
	}
	d, err := js.Stream(ctx, p.DLQ)
	if err != nil {
		return fmt.Errorf("stream %q: %w", p.DLQ, err)
	}
	if c := d.CachedInfo().Config; c.Metadata[MetaSource] != p.To {
		c.Metadata = withMovedFrom(c.Metadata, p.From)
		c.Metadata[MetaSource] = p.To
		c.Description = "Dead letters of stream " + p.To + " (jetctl dlq)"
		if _, err := js.UpdateStream(ctx, c); err != nil {
			return fmt.Errorf("stream %q: %w", p.DLQ, err)
		}
	}
	if former != nil {
		if err := js.DeleteStream(ctx, fromN.Capture); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("deleting %q: %w", fromN.Capture, err)
		}
	}
	return nil
}

// carry publishes the advisories of the old capture past its sweep's ack
// floor again, naming the new stream, to the new capture; until the old
// capture's last sequence stays where it was (an advisory the server sent
// just before the source was deleted may be stored after the read began).
func carry(ctx context.Context, js jetstream.JetStream, p *MovePlan, former *jetstream.StreamInfo, fromN, toN Names) error {
	from := former.State.FirstSeq
	if ci, err := js.Consumer(ctx, fromN.Capture, fromN.Durable); err == nil {
		from = max(from, ci.CachedInfo().AckFloor.Stream+1)
	} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("stream %q: consumer %q: %w", fromN.Capture, fromN.Durable, err)
	}
	api := jsapi.New(js)
	for range 10 {
		si, err := js.Stream(ctx, fromN.Capture)
		if err != nil {
			return fmt.Errorf("stream %q: %w", fromN.Capture, err)
		}
		st := si.CachedInfo().State
		if st.Msgs == 0 || from > st.LastSeq {
			return nil
		}
		if err := carryRange(ctx, js, api, p, fromN, toN, max(from, st.FirstSeq), st.LastSeq); err != nil {
			return err
		}
		from = st.LastSeq + 1
	}
	return fmt.Errorf("stream %q: advisories keep coming; run again", fromN.Capture)
}

// carryRange carries the advisories of the old capture from..to.
func carryRange(ctx context.Context, js jetstream.JetStream, api *jsapi.Client, p *MovePlan, fromN, toN Names, from, to uint64) error {
	r, err := streamread.Resolve(ctx, js, streamread.Config{Stream: fromN.Capture, FromSeq: from, ToSeq: to})
	if err != nil {
		return fmt.Errorf("stream %q: %w", fromN.Capture, err)
	}
	owner := toN.Capture
	if next, err := js.Stream(ctx, toN.Capture); err == nil && ReadsRecorder(&next.CachedInfo().Config) {
		owner = recorder.Stream
	}
	return streamread.Read(ctx, js, r, func(m *envelope.Message) error {
		a, err := ParseAdvisory(m.Data)
		if err != nil || a.Stream != p.From {
			return nil // not a dead letter of the stream: the sweep ignores it too
		}
		_, err = api.MsgGet(ctx, p.DLQ, jsapi.MsgGetRequest{LastFor: fromN.DLQSubject(a.StreamSeq)})
		switch {
		case err == nil:
			p.AlreadySwept++
			return nil
		case !errors.Is(err, jsapi.ErrNoMessage):
			return fmt.Errorf("stream %q: %w", p.DLQ, err)
		}
		msg, err := carried(m, a, p.From, p.To)
		if err != nil {
			return err
		}
		// A capture that reads the recorder gets the advisory from it.
		if _, err := js.PublishMsg(ctx, msg, jetstream.WithExpectStream(owner)); err != nil {
			return fmt.Errorf("stream %q: carrying the advisory at seq %d: %w", toN.Capture, m.Seq, err)
		}
		p.Carried++
		return nil
	})
}

// carried is advisory a, captured as m for stream from, as the capture of
// stream to would have captured it.
func carried(m *envelope.Message, a Advisory, from, to string) (*nats.Msg, error) {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(m.Data, &body); err != nil {
		return nil, fmt.Errorf("advisory at seq %d: %w", m.Seq, err)
	}
	body["stream"], _ = json.Marshal(to)
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	kind := "MAX_DELIVERIES"
	if a.Type == TypeTerminated {
		kind = "MSG_TERMINATED"
	}
	h := nats.Header{}
	h.Set(HeaderMovedFrom, from)
	// A rerun within the duplicate window stores it once; after it, the
	// sweep tells the duplicate apart.
	h.Set(jetstream.MsgIDHeader, "dlq-move:"+from+":"+strconv.FormatUint(m.Seq, 10))
	return &nats.Msg{Subject: "$JS.EVENT.ADVISORY.CONSUMER." + kind + "." + to + "." + a.Consumer, Header: h, Data: data}, nil
}
