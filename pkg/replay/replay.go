package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/retry"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// Summary is what a replay did.
type Summary struct {
	Stream   string `json:"stream"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	Read     uint64 `json:"read"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	// Duplicates (republishing) were already in the target: nothing new
	// was stored for them.
	Duplicates uint64 `json:"duplicates"`
	// Unconfirmed (republishing) were sent but not acknowledged before the
	// replay stopped; a re-run with the checkpoint settles them.
	Unconfirmed uint64 `json:"unconfirmed"`
	// SkippedExpired (republishing, and its dry run) were not copied:
	// their TTL had passed (--ttl remaining).
	SkippedExpired uint64 `json:"skipped_expired"`
	// SkippedMarkers (republishing, and its dry run) were subject delete
	// markers, not copied (--markers skip).
	SkippedMarkers uint64            `json:"skipped_markers"`
	Failed         []uint64          `json:"failed"`
	Checkpoint     uint64            `json:"checkpoint,omitempty"`
	Subjects       map[string]uint64 `json:"subjects,omitempty"`
	Seconds        float64           `json:"seconds"`
	PerSecond      float64           `json:"messages_per_second"`
	// Resumed is the sequence a checkpoint made this run start after.
	Resumed uint64 `json:"resumed_after,omitempty"`
	// LastError (republishing) is why the last of Failed failed.
	LastError error `json:"-"`
}

const checkpointEvery = 200 * time.Millisecond

// interruptGrace is how long an interrupted replay waits for the
// acknowledgements in flight before it reports them as unconfirmed.
const interruptGrace = 2 * time.Second

// republisher is a sink that knows what its target confirmed and records
// in a checkpoint where to look for copies beyond it.
type republisher interface {
	Prepare(ctx context.Context, cp *Checkpoint) error
	Counts() Counts
	checkpointState(cp *Checkpoint)
	watchFloor(lag uint64, fn func(floor uint64))
	interrupted()
}

// Source yields messages to a replay: a stream range or a dump file.
type Source func(ctx context.Context, emit streamread.Emit) error

// StreamSource reads r from js.
func StreamSource(js jetstream.JetStream, r streamread.Range) Source {
	return func(ctx context.Context, emit streamread.Emit) error { return streamread.Read(ctx, js, r, emit) }
}

// FileSource reads JSON lines written by a replay dump, skipping messages
// at or below after (a checkpoint). Check the whole dump with ValidateDump
// first: a bad line here stops the replay after the lines before it.
func FileSource(rd io.Reader, after uint64) Source {
	return func(ctx context.Context, emit streamread.Emit) error {
		return scanDump(ctx, rd, func(line int, m *envelope.Message, err error) error {
			if err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			if m.Seq != 0 && m.Seq <= after {
				return nil
			}
			return emit(m)
		})
	}
}

// DumpError is a dump's line that is not a message.
type DumpError struct {
	Name string
	Line int
	Err  error
	// Last is set when the bad line is the dump's last, as a dump cut off
	// by a crash leaves it.
	Last bool
	// Cut is set when the bad line is the last and has no newline: a dump
	// killed while writing it (a SIGKILL can cut a write to a file short).
	Cut bool
}

func (e *DumpError) Error() string {
	last := ""
	switch {
	case e.Cut:
		last = " (the last line, cut off: the dump was interrupted while writing it)"
	case e.Last:
		last = " (the last line: was the dump cut off?)"
	}
	return fmt.Sprintf("%s:%d: %v%s", e.Name, e.Line, e.Err, last)
}

// lineEnds counts what is read through it and where the last newline
// ended: a dump's whole lines end there.
type lineEnds struct {
	r         io.Reader
	n, wholeN int64
}

func (l *lineEnds) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if i := bytes.LastIndexByte(p[:n], '\n'); i >= 0 {
		l.wholeN = l.n + int64(i) + 1
	}
	l.n += int64(n)
	return n, err
}

func (e *DumpError) Unwrap() error { return e.Err }

// DumpInfo is what ValidateDump read in a dump: how many messages it
// holds, and which of its subjects have messages with a TTL, so that
// replay --from-file --to looks up the streams those copies go to before
// it sends one.
type DumpInfo struct {
	Messages uint64
	// subjects holds each subject's TTL span; nil when the dump has more
	// than maxDumpSubjects subjects (all then stands for every one).
	subjects map[string]ttlSpan
	all      ttlSpan
}

// maxDumpSubjects bounds what DumpInfo keeps per subject.
const maxDumpSubjects = 1024

// ttlSpan says whether messages have a TTL, and the latest deadline of
// those (the far future for a TTL of never).
type ttlSpan struct {
	has   bool
	until time.Time
}

var never = time.Unix(1<<62, 0)

func (s ttlSpan) with(o ttlSpan) ttlSpan {
	if o.has && (!s.has || o.until.After(s.until)) {
		return o
	}
	return s
}

// carries reports whether a copy made at now of a message in the span
// carries a TTL under mode: remaining copies only what has not expired.
func (s ttlSpan) carries(mode envelope.TTLMode, now time.Time) bool {
	switch {
	case !s.has || mode == envelope.TTLDrop:
		return false
	case mode == envelope.TTLKeep:
		return true
	}
	return s.until.Sub(now) >= time.Second
}

// add counts m; a Nats-TTL the server would not have taken is an error.
func (d *DumpInfo) add(m *envelope.Message) error {
	d.Messages++
	var span ttlSpan
	if len(m.Header[envelope.TTLHeader]) > 0 {
		st, err := envelope.TTLAt(m.Header, m.Time, m.Time)
		if err != nil {
			return err
		}
		span = ttlSpan{has: st.Has, until: st.Deadline}
		if st.Never {
			span.until = never
		}
	}
	d.all = d.all.with(span)
	if d.Messages == 1 {
		d.subjects = make(map[string]ttlSpan)
	}
	if d.subjects != nil {
		d.subjects[m.Subject] = d.subjects[m.Subject].with(span)
		if len(d.subjects) > maxDumpSubjects {
			d.subjects = nil
		}
	}
	return nil
}

// origins are where a dump's copies come from: its subjects (or any,
// when it has too many to keep), each with whether a copy made at now
// carries a TTL under mode.
func (d *DumpInfo) origins(mode envelope.TTLMode, now time.Time) []origin {
	if d == nil {
		// A dump that was not read through: any subject, any TTL.
		return []origin{{subject: ">", ttl: mode != envelope.TTLDrop}}
	}
	if d.subjects == nil {
		return []origin{{subject: ">", ttl: d.all.carries(mode, now)}}
	}
	out := make([]origin, 0, len(d.subjects))
	for subject, span := range d.subjects {
		out = append(out, origin{subject: subject, ttl: span.carries(mode, now)})
	}
	return out
}

// ValidateDump reads a whole dump, so that a bad line is found before
// anything is published. It returns what the dump holds, or the first
// bad line as a *DumpError: a line that is not a message, or a message
// with a Nats-TTL the server would not have stored.
func ValidateDump(ctx context.Context, rd io.Reader, name string) (DumpInfo, error) {
	var info DumpInfo
	var bad error
	badLine, badTTL := 0, false
	ends := &lineEnds{r: rd}
	err := scanDump(ctx, ends, func(line int, m *envelope.Message, err error) error {
		switch {
		case bad != nil:
			// A line after the bad one: it was not the last.
			return errStopScan
		case err != nil:
			bad, badLine = err, line
			return nil
		}
		if err := info.add(m); err != nil {
			bad, badLine, badTTL = err, line, true
		}
		return nil
	})
	if bad != nil {
		// A whole message with a bad TTL is no sign of a dump cut off.
		last := !errors.Is(err, errStopScan) && !badTTL
		cut := last && err == nil && ends.wholeN < ends.n
		return info, &DumpError{Name: name, Line: badLine, Err: bad, Last: last, Cut: cut}
	}
	if err != nil {
		return info, fmt.Errorf("%s: %w", name, err)
	}
	return info, nil
}

var errStopScan = errors.New("stop")

// scanDump calls each for every non-empty line of a dump, with the message
// or why the line is not one.
func scanDump(ctx context.Context, rd io.Reader, each func(line int, m *envelope.Message, err error) error) error {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 1<<20), maxDumpLine)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := envelope.ParseLine(sc.Bytes())
		if err := each(line, m, err); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			if err := each(line+1, nil, fmt.Errorf("line longer than %d MiB", maxDumpLine>>20)); err != nil {
				return err
			}
			return errStopScan
		}
		return err
	}
	return nil
}

// maxDumpLine bounds a dump's line: a 64 MiB payload in base64, with room.
const maxDumpLine = 96 << 20

// pump passes every message from src through the filter and pacing to
// sink, checkpointing as it goes; resume is the checkpoint this run
// continues, if any. Interrupted (ctx cancelled), it stops reading, waits
// for what is in flight, writes the checkpoint and returns ctx's error with
// the summary.
func pump(ctx context.Context, src Source, sink Sink, sum Summary, opts Config, resume *Checkpoint) (Summary, error) {
	start := time.Now()
	var limiter *rate.Limiter
	if opts.Rate > 0 {
		burst := max(1, int(opts.Rate/50))
		limiter = rate.NewLimiter(rate.Limit(opts.Rate), burst)
	}
	speed := opts.Speed
	if speed <= 0 {
		speed = 1
	}
	var prevTime time.Time
	var lastRead uint64
	lastCheck := time.Now()
	pub, _ := sink.(republisher)
	if pub != nil {
		// Nothing before the start (or the checkpoint resumed) is to do.
		lastRead = sum.Resumed
		if lastRead == 0 && sum.FirstSeq > 0 {
			lastRead = sum.FirstSeq - 1
		}
	}

	checkpoint := func() error {
		cp := sink.Floor(lastRead)
		if cp < sum.Checkpoint {
			cp = sum.Checkpoint
		}
		sum.Checkpoint = cp
		if opts.CheckpointPath == "" || (cp == 0 && pub == nil) {
			return nil
		}
		c := Checkpoint{Stream: sum.Stream, LastSeq: cp, ToSeq: sum.LastSeq, Target: opts.target()}
		if fs, ok := sink.(*FileSink); ok {
			off := fs.Offset()
			c.FileOffset = &off
		}
		if pub != nil {
			pub.checkpointState(&c)
		}
		return SaveCheckpoint(opts.CheckpointPath, c)
	}
	progress := func() {
		if opts.Progress != nil {
			s := sum
			if pub != nil {
				c := pub.Counts()
				s.Messages, s.Bytes, s.Duplicates = c.Stored, c.Bytes, c.Duplicates
				s.SkippedExpired, s.SkippedMarkers = c.Expired, c.Markers
			}
			s.Seconds = time.Since(start).Seconds()
			opts.Progress(s)
		}
	}
	var floorErr error
	if pub != nil && opts.CheckpointPath != "" {
		if err := pub.Prepare(ctx, resume); err != nil {
			return sum, err
		}
		// Written before the first copy, so that a run killed before its
		// first acknowledgement still tells the next where to look; then
		// again whenever the acknowledged floor moved by the in-flight
		// window, so that it never lags the target by more.
		if err := checkpoint(); err != nil {
			return sum, err
		}
		pub.watchFloor(0, func(uint64) {
			if err := checkpoint(); err != nil && floorErr == nil {
				floorErr = err
			}
		})
	}

	err := src(ctx, func(m *envelope.Message) error {
		sum.Read++
		if opts.Filter != nil {
			keep, err := opts.Filter(m)
			if err != nil {
				return err
			}
			if !keep {
				lastRead = m.Seq
				return nil
			}
		}
		if limiter != nil {
			if err := limiter.Wait(ctx); err != nil {
				return err
			}
		}
		if opts.PaceOriginal {
			if !prevTime.IsZero() && m.Time.After(prevTime) {
				gap := time.Duration(float64(m.Time.Sub(prevTime)) / speed)
				if opts.MaxGap > 0 && gap > opts.MaxGap {
					gap = opts.MaxGap
				}
				if err := retry.Sleep(ctx, gap); err != nil {
					return err
				}
			}
			prevTime = m.Time
		}
		if err := sink.Write(ctx, m); err != nil {
			return err
		}
		if floorErr != nil {
			return floorErr
		}
		lastRead = m.Seq
		sum.Messages++
		sum.Bytes += uint64(len(m.Data))
		if time.Since(lastCheck) >= checkpointEvery {
			lastCheck = time.Now()
			if err := checkpoint(); err != nil {
				return err
			}
			progress()
		}
		return nil
	})

	// Finish what is in flight even when interrupted: nothing half-done.
	// Interrupted, wait for acknowledgements only briefly: the server may
	// be gone, and the checkpoint tells a re-run what is left.
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(interruptGrace, cancel) })
	defer stopGrace()
	if pub != nil && ctx.Err() != nil {
		pub.interrupted()
	}
	if cerr := sink.Close(closeCtx); cerr != nil && err == nil {
		err = cerr
	}
	if cerr := checkpoint(); cerr != nil && err == nil {
		err = cerr
	}
	sum.Failed = sink.Failed()
	if pub != nil {
		// Only what the target acknowledged counts.
		c := pub.Counts()
		sum.Messages, sum.Bytes, sum.Duplicates, sum.Unconfirmed = c.Stored, c.Bytes, c.Duplicates, c.Unconfirmed
		sum.SkippedExpired, sum.SkippedMarkers = c.Expired, c.Markers
	} else {
		sum.Messages -= uint64(len(sum.Failed))
	}
	if st, ok := sink.(*StatsSink); ok {
		sum.Subjects = st.Subjects
		sum.Messages, sum.Bytes = st.Messages, st.Bytes
		sum.SkippedExpired, sum.SkippedMarkers = st.Expired, st.Markers
	}
	sum.Seconds = time.Since(start).Seconds()
	if sum.Seconds > 0 {
		sum.PerSecond = float64(sum.Messages) / sum.Seconds
	}
	progress()
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return sum, err
}

// Checkpoint is what --checkpoint files hold.
type Checkpoint struct {
	Version int `json:"version"`
	// MsgIDPrefix (republishing) starts the copies' Nats-Msg-Id: a resumed
	// run keeps it, so --new-msg-id copies stay one copy.
	MsgIDPrefix string `json:"msg_id_prefix,omitempty"`
	// TargetSeqs (republishing) holds, per target stream, a sequence after
	// which every copy of a message after LastSeq is stored: where a
	// resumed run looks for copies stored but not checkpointed.
	TargetSeqs map[string]uint64 `json:"target_seqs,omitempty"`
	Stream     string            `json:"stream"`
	// LastSeq is the last sequence done: every message up to it is written
	// (acknowledged, when republishing).
	LastSeq uint64 `json:"last_seq"`
	// ToSeq is the end of the range, fixed when the first run started.
	ToSeq  uint64 `json:"to_seq"`
	Target string `json:"target,omitempty"`
	// FileOffset is, for a --to-file dump, the file's length when every
	// message up to LastSeq was written: a resumed dump cuts the file back
	// to it, dropping lines written after the checkpoint.
	FileOffset *int64    `json:"file_offset,omitempty"`
	Updated    time.Time `json:"updated"`
}

// LoadCheckpoint reads a checkpoint file; a missing file is (nil, nil).
func LoadCheckpoint(path string) (*Checkpoint, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cp Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return &cp, nil
}

// SaveCheckpoint writes cp atomically: a crash leaves the old or the new
// file, never half of one.
func SaveCheckpoint(path string, cp Checkpoint) error {
	cp.Version = 1
	cp.Updated = time.Now().UTC()
	data, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".checkpoint-*")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// Resume narrows r to what a checkpoint left to do: after its last
// sequence, up to the end fixed when the first run started.
func Resume(r streamread.Range, cp *Checkpoint) (streamread.Range, error) {
	if cp == nil {
		return r, nil
	}
	if cp.Stream != r.Stream {
		return r, fmt.Errorf("checkpoint is for stream %q, not %q", cp.Stream, r.Stream)
	}
	r.First = max(r.First, cp.LastSeq+1)
	if !r.Follow && cp.ToSeq > 0 {
		r.Last = cp.ToSeq
	}
	return r, nil
}
