package migrate

// The source's side of a move: what a workqueue or interest source held
// when the copy began and what left it since, direct gets turned on to
// read it without a consumer, and its durable consumers.

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/jsapi"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// maxSnapshotDeleted bounds the deleted sequences a snapshot keeps (in the
// target's metadata); past it the loss check is skipped.
const maxSnapshotDeleted = 2000

// snapshot records, for a workqueue or interest source, what it holds as
// the copy begins (see sourceSnapshot), unless the state has one. The
// durables of the streams downstream count as consumers (downstream.go).
func (m *mover) snapshot(ctx context.Context, tinfo *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, error) {
	if st.Snapshot != nil {
		return tinfo, nil
	}
	sinfo, deleted, err := m.sourceDeleted(ctx)
	if err != nil {
		return nil, err
	}
	if r := sinfo.Config.Retention; r != jetstream.WorkQueuePolicy && r != jetstream.InterestPolicy {
		return tinfo, nil
	}
	cs, err := durables(ctx, m.src.JS, m.srcName)
	if err != nil {
		return nil, err
	}
	snap := &sourceSnapshot{First: sinfo.State.FirstSeq, Last: sinfo.State.LastSeq, Msgs: sinfo.State.Msgs}
	if snap.Delivered, err = m.replicationDelivered(ctx); err != nil {
		return nil, err
	}
	for _, c := range cs {
		snap.Delivered = max(snap.Delivered, c.Delivered.Stream)
	}
	for d := range deleted {
		if d > snap.Delivered {
			snap.Deleted = append(snap.Deleted, d)
		}
	}
	if len(snap.Deleted) > maxSnapshotDeleted {
		snap.Deleted, snap.Partial = nil, true
	}
	slices.Sort(snap.Deleted)
	st.Snapshot = snap
	return saveState(ctx, m.dst.JS, tinfo, st)
}

// vanished refuses a move (a VerifyError) in which messages left a
// workqueue or interest source that no consumer had been delivered: the
// snapshot's messages above every durable's delivered sequence (as the
// consumers stand now, paused) that are gone now. Nothing but an
// acknowledgement should remove them; a copy that consumed, or a delete
// by hand, did.
func (m *mover) vanished(ctx context.Context, st *state) error {
	snap := st.Snapshot
	if snap == nil || snap.Partial || snap.Msgs == 0 {
		return nil
	}
	// What the streams downstream read may have left it too.
	delivered, err := m.replicationDelivered(ctx)
	if err != nil {
		return err
	}
	delivered = max(delivered, snap.Delivered)
	for _, c := range st.Consumers {
		delivered = max(delivered, c.Delivered)
	}
	from := max(delivered+1, snap.First)
	if from > snap.Last {
		return nil
	}
	sinfo, deleted, err := m.sourceDeleted(ctx)
	if err != nil {
		return err
	}
	wasGone := func(seq uint64) bool { _, ok := slices.BinarySearch(snap.Deleted, seq); return ok }
	// Gone now: everything below the source's first sequence (all of it
	// when it is empty), and its deleted sequences; in the snapshot's
	// range above the consumers, less what was gone already. Counted
	// without walking the range, which may be long: this runs while
	// writers wait.
	var gone []uint64
	n := uint64(0)
	low := snap.Last
	if sinfo.State.Msgs > 0 {
		low = min(low, sinfo.State.FirstSeq-1)
	}
	if low >= from {
		n = low - from + 1
		for _, d := range snap.Deleted {
			if d >= from && d <= low {
				n--
			}
		}
		for seq := from; seq <= low && len(gone) < 5; seq++ {
			if !wasGone(seq) {
				gone = append(gone, seq)
			}
		}
	}
	var above []uint64
	for d := range deleted {
		if d >= max(from, low+1) && d <= snap.Last && !wasGone(d) {
			above = append(above, d)
		}
	}
	n += uint64(len(above))
	slices.Sort(above)
	gone = append(gone, above[:min(len(above), 5-len(gone))]...)
	if n == 0 {
		return nil
	}
	list := seqList(gone)
	if n > uint64(len(gone)) {
		list += ", …"
	}
	return m.verifyError(fmt.Sprintf("%d messages left the source during the move that no consumer had been delivered (seq %s; consumers delivered up to seq %d): something consumed or deleted them",
		n, list, delivered))
}

// directOn turns allow_direct on at a workqueue or interest source, so
// that it can be read without a consumer (a consumer would disturb it),
// and notes it in the state.
func (m *mover) directOn(ctx context.Context, si *jetstream.StreamInfo, st *state) (*jetstream.StreamInfo, error) {
	if si.Config.AllowDirect || si.Config.Retention == jetstream.LimitsPolicy {
		return si, nil
	}
	ti, err := streamInfo(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return nil, err
	}
	st.SourceDirectOff = true
	if _, err := saveState(ctx, m.dst.JS, ti, st); err != nil {
		return nil, err
	}
	c := si.Config
	c.AllowDirect = true
	return updateStream(ctx, m.src.JS, c)
}

// directOff undoes directOn.
func (m *mover) directOff(ctx context.Context, st *state) error {
	if !st.SourceDirectOff {
		return nil
	}
	si, err := streamInfo(ctx, m.src.JS, m.srcName)
	if err != nil {
		return err
	}
	c := si.Config
	c.AllowDirect = false
	if _, err := updateStream(ctx, m.src.JS, c); err != nil {
		return err
	}
	st.SourceDirectOff = false
	ti, err := streamInfo(ctx, m.dst.JS, m.dstName)
	if err != nil {
		return err
	}
	_, err = saveState(ctx, m.dst.JS, ti, st)
	return err
}

// durables lists the source's durable consumers.
func durables(ctx context.Context, js jetstream.JetStream, stream string) ([]*jetstream.ConsumerInfo, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, err
	}
	var out []*jetstream.ConsumerInfo
	l := s.ListConsumers(ctx)
	for ci := range l.Info() {
		if ci.Config.Durable == "" || jsapi.ReplicationConsumer(ci.Config.Metadata) {
			continue // ephemeral: it belongs to a live client and ends with it
		}
		out = append(out, ci)
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("stream %q: listing consumers: %w", stream, err)
	}
	return out, nil
}

// workqueueConsumers checks that consumers can live on a workqueue
// stream, which takes one consumer per subject: several need filters, and
// no two filters may overlap.
func workqueueConsumers(cs []*jetstream.ConsumerInfo) error {
	if len(cs) < 2 {
		return nil
	}
	type f struct{ consumer, subject string }
	var all []f
	for _, c := range cs {
		subs := c.Config.FilterSubjects
		if c.Config.FilterSubject != "" {
			subs = append(subs, c.Config.FilterSubject)
		}
		if len(subs) == 0 {
			return fmt.Errorf("a workqueue stream takes one consumer per subject, and consumer %q has no filter beside %d others", c.Name, len(cs)-1)
		}
		for _, s := range subs {
			for _, o := range all {
				if o.consumer != c.Name && streamread.SubjectsOverlap(o.subject, s) {
					return fmt.Errorf("a workqueue stream takes one consumer per subject, and the filters of %q (%s) and %q (%s) overlap", o.consumer, o.subject, c.Name, s)
				}
			}
			all = append(all, f{c.Name, s})
		}
	}
	return nil
}
