package events

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/recorder"
)

// A single server that restarts sends a "create" advisory for every stream
// and consumer it recovers from its store, as if each were new; each keeps
// the created time it had (TestFactRestartAdvisesCreateWithOldCreatedTime).
// The timeline says such an advisory as what it is: a recovery.

// Event types of a recovery at a server restart.
const (
	TypeStreamRecovered   = "stream_recovered"
	TypeConsumerRecovered = "consumer_recovered"
)

// recoveryMargin: a stream or consumer created longer than this before its
// create advisory was stored is not new; the server recovered it.
const recoveryMargin = 2 * time.Second

// recoveries tells the create advisories of a restart from creations, in
// the order the recorder stored them: a create of a stream or consumer the
// record already holds as created and not deleted since is a recovery,
// and so is one whose stream or consumer (still on the server) was
// created well before the advisory. It asks the server for created times
// only when the record cannot tell, once per stream listed.
type recoveries struct {
	js jetstream.JetStream
	// alive: created in the record, not deleted since; consumers by
	// stream.
	alive map[string]map[string]bool
	// streams and consumers are the server's created times, listed once
	// (consumers per stream, when first needed).
	streams   map[string]time.Time
	consumers map[string]map[string]time.Time
}

func newRecoveries(js jetstream.JetStream) *recoveries {
	return &recoveries{js: js, alive: map[string]map[string]bool{}, consumers: map[string]map[string]time.Time{}}
}

// streamKey is the alive map's entry of the stream itself.
const streamKey = ""

// see takes the recorder's next event and makes a create advisory of a
// recovery say so.
func (r *recoveries) see(ctx context.Context, e *Event) {
	switch e.Type {
	case TypeStreamDeleted:
		delete(r.alive, e.Stream)
	case TypeConsumerDeleted:
		delete(r.alive[e.Stream], e.Consumer)
	case TypeStreamCreated:
		if r.alive[e.Stream][streamKey] || r.createdBefore(e.Time, r.streamCreated(ctx, e.Stream)) {
			r.recovered(e, TypeStreamRecovered, "stream")
		}
		r.mark(e.Stream, streamKey)
	case TypeConsumerCreated:
		if e.Stream == recorder.Stream {
			return // the record's own readers (ownReader)
		}
		if r.alive[e.Stream][e.Consumer] || r.createdBefore(e.Time, r.consumerCreated(ctx, e.Stream, e.Consumer)) {
			r.recovered(e, TypeConsumerRecovered, "consumer")
		}
		r.mark(e.Stream, e.Consumer)
	}
}

func (r *recoveries) mark(stream, key string) {
	if r.alive[stream] == nil {
		r.alive[stream] = map[string]bool{}
	}
	r.alive[stream][key] = true
}

func (r *recoveries) createdBefore(stored, created time.Time) bool {
	return !created.IsZero() && created.Add(recoveryMargin).Before(stored)
}

func (r *recoveries) recovered(e *Event, typ, what string) {
	e.Type = typ
	e.Text = what + " recovered: the server restarted"
}

// lookupTimeout bounds a listing of created times: the timeline goes on
// without them (a create is then a creation) rather than wait.
const lookupTimeout = 5 * time.Second

// streamCreated is the server's created time of stream, zero when it has
// none (deleted since) or cannot say.
func (r *recoveries) streamCreated(ctx context.Context, stream string) time.Time {
	if r.streams == nil {
		r.streams = map[string]time.Time{}
		ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		defer cancel()
		l := r.js.ListStreams(ctx)
		for si := range l.Info() {
			r.streams[si.Config.Name] = si.Created
		}
	}
	return r.streams[stream]
}

// consumerCreated is streamCreated for a consumer.
func (r *recoveries) consumerCreated(ctx context.Context, stream, consumer string) time.Time {
	created, listed := r.consumers[stream]
	if !listed {
		created = map[string]time.Time{}
		r.consumers[stream] = created
		if !r.streamCreated(ctx, stream).IsZero() {
			ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
			defer cancel()
			if s, err := r.js.Stream(ctx, stream); err == nil {
				l := s.ListConsumers(ctx)
				for ci := range l.Info() {
					created[ci.Name] = ci.Created
				}
			}
		}
	}
	return created[consumer]
}

// recoveryText says a burst of recoveries folded into one row.
func recoveryText(streams, consumers int) string {
	switch {
	case streams == 0:
		return fmt.Sprintf("server restarted: %s recovered", plural(consumers, "consumer"))
	case consumers == 0:
		return fmt.Sprintf("server restarted: %s recovered", plural(streams, "stream"))
	}
	return fmt.Sprintf("server restarted: %s and %s recovered", plural(streams, "stream"), plural(consumers, "consumer"))
}
