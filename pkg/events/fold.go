package events

import (
	"fmt"
	"time"
)

// FoldWindow is how close in time the events of a burst are: those of one
// kind within a minute of the burst's first fold into one row.
const FoldWindow = time.Minute

// Row is one line of a folded timeline: an event, or a burst of events of
// one kind (Count > 1), shown at its first event.
type Row struct {
	// First is the burst's first event (the event, for a single one).
	First *Event
	// Count is how many events the row stands for.
	Count int
	// MinSeq and MaxSeq are the lowest and highest message sequences of
	// a burst of dead letters or NAKs.
	MinSeq, MaxSeq uint64
	// Last is when the burst's last event was stored.
	Last time.Time
	// Streams and Consumers count the recoveries of a server restart's
	// burst.
	Streams, Consumers int
}

// Text says the row in one line.
func (r *Row) Text() string {
	if r.Count == 1 {
		return r.First.Text
	}
	span := ""
	if r.MinSeq > 0 {
		span = fmt.Sprintf(" (seq %d … %d)", r.MinSeq, r.MaxSeq)
	}
	until := " until " + r.Last.UTC().Format("15:04:05")
	switch r.First.Type {
	case TypeMaxDeliveries:
		return fmt.Sprintf("%d messages reached max deliveries%s%s", r.Count, span, until)
	case TypeTerminated:
		return fmt.Sprintf("%d messages terminated%s%s", r.Count, span, until)
	case TypeNak:
		return fmt.Sprintf("%d NAKs%s%s", r.Count, span, until)
	case TypeConsumerCreated:
		return fmt.Sprintf("%d consumers created (the first %s)%s", r.Count, r.First.Consumer, until)
	case TypeConsumerDeleted:
		return fmt.Sprintf("%d consumers deleted (the first %s)%s", r.Count, r.First.Consumer, until)
	case TypeStreamRecovered, TypeConsumerRecovered:
		return recoveryText(r.Streams, r.Consumers) + until
	}
	return fmt.Sprintf("%d × %s%s", r.Count, r.First.Text, until)
}

// Consumer is the row's consumer: none for a burst of several consumers.
func (r *Row) Consumer() string {
	if r.Count > 1 && (r.First.Type == TypeConsumerCreated || r.First.Type == TypeConsumerDeleted || recovery(r.First)) {
		return ""
	}
	return r.First.Consumer
}

// Stream is the row's stream: none for a restart's recoveries, which are
// of every stream.
func (r *Row) Stream() string {
	if r.Count > 1 && recovery(r.First) {
		return ""
	}
	return r.First.Stream
}

func recovery(e *Event) bool {
	return e.Type == TypeStreamRecovered || e.Type == TypeConsumerRecovered
}

type foldKey struct{ kind, stream, consumer string }

// foldKeyOf is the burst an event may fold into: dead letters and NAKs
// per consumer; consumers created or deleted per stream (ephemeral
// consumers, such as every ordered reader's, come and go in bursts); the
// streams and consumers a server restart recovered, all of them.
func foldKeyOf(e *Event) (foldKey, bool) {
	switch e.Type {
	case TypeStreamRecovered, TypeConsumerRecovered:
		return foldKey{kind: "recovered"}, true
	case TypeMaxDeliveries, TypeTerminated, TypeNak:
		return foldKey{e.Type, e.Stream, e.Consumer}, true
	case TypeConsumerCreated, TypeConsumerDeleted:
		return foldKey{e.Type, e.Stream, ""}, true
	}
	return foldKey{}, false
}

// maxHeld bounds the rows a Folder holds back: past it, the oldest burst
// is shown as it stands (and its kind starts a new row), so that a
// timeline of a million events a minute stays small.
const maxHeld = 4096

// Folder folds bursts of a time-ordered timeline into rows, streaming: it
// holds back only the rows of the last FoldWindow (at most maxHeld), so
// that rows stay in the order of their first event.
type Folder struct {
	emit  func(*Row) error
	queue []*Row
	open  map[foldKey]*Row
}

// NewFolder folds into emit.
func NewFolder(emit func(*Row) error) *Folder {
	return &Folder{emit: emit, open: map[foldKey]*Row{}}
}

// Add takes the next event of the timeline.
func (f *Folder) Add(e *Event) error {
	if err := f.release(e.Time); err != nil {
		return err
	}
	k, foldable := foldKeyOf(e)
	if foldable {
		if r := f.open[k]; r != nil && e.Time.Before(r.First.Time.Add(FoldWindow)) {
			r.Count++
			r.Last = e.Time
			r.countRecovery(e)
			if e.Seq > 0 {
				r.MinSeq, r.MaxSeq = min(r.MinSeq, e.Seq), max(r.MaxSeq, e.Seq)
			}
			return nil
		}
	}
	r := &Row{First: e, Count: 1, MinSeq: e.Seq, MaxSeq: e.Seq, Last: e.Time}
	r.countRecovery(e)
	if foldable {
		f.open[k] = r
	}
	f.queue = append(f.queue, r)
	for len(f.queue) > maxHeld {
		if err := f.pop(); err != nil {
			return err
		}
	}
	return f.release(e.Time)
}

func (r *Row) countRecovery(e *Event) {
	switch e.Type {
	case TypeStreamRecovered:
		r.Streams++
	case TypeConsumerRecovered:
		r.Consumers++
	}
}

// pop emits the row at the head of the queue, closing its burst.
func (f *Folder) pop() error {
	r := f.queue[0]
	if k, foldable := foldKeyOf(r.First); foldable && f.open[k] == r {
		delete(f.open, k)
	}
	f.queue[0] = nil
	f.queue = f.queue[1:]
	return f.emit(r)
}

// release emits the rows at the head of the queue that can no longer
// grow at time now.
func (f *Folder) release(now time.Time) error {
	for len(f.queue) > 0 {
		r := f.queue[0]
		k, foldable := foldKeyOf(r.First)
		if foldable && f.open[k] == r && now.Before(r.First.Time.Add(FoldWindow)) {
			return nil
		}
		if err := f.pop(); err != nil {
			return err
		}
	}
	return nil
}

// Flush emits every row held back: call it at the end of the timeline.
func (f *Folder) Flush() error {
	for _, r := range f.queue {
		if err := f.emit(r); err != nil {
			return err
		}
	}
	f.queue, f.open = nil, map[foldKey]*Row{}
	return nil
}
