package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetctl/jetctl/pkg/envelope"
	"github.com/jetctl/jetctl/pkg/errkind"
	"github.com/jetctl/jetctl/pkg/streamread"
)

// Config is what Run is asked to do: what to read, where it goes, and how
// fast.
type Config struct {
	// Range selects the stream's messages; unused when Dump is set.
	Range streamread.Config
	// Dump, when set, is replayed instead of a stream: a dump already
	// checked whole with ValidateDump, named DumpName; DumpInfo is what
	// ValidateDump said of it.
	Dump     io.Reader
	DumpName string
	DumpInfo *DumpInfo

	// Where the messages go: DryRun counts them per subject and writes
	// nothing; else Publish republishes them to Target (js when nil);
	// else ToFile writes them to a file; else Sink gets them. With
	// Publish, the streams the copies go to are checked before anything
	// is read, in a dry run too (see checkTargets).
	DryRun  bool
	Publish *PublishConfig
	Target  jetstream.JetStream
	// NewMsgID gives the copies message ids of their own (MsgIDPrefixFor).
	NewMsgID bool
	ToFile   string
	Sink     Sink

	// CheckpointPath, when set, is read to resume from, and records the
	// sink's floor while the replay runs and when it ends.
	CheckpointPath string

	// Filter keeps a message when it returns true.
	Filter func(*envelope.Message) (bool, error)
	// Rate limits messages per second (0: as fast as possible).
	Rate float64
	// PaceOriginal reproduces the gaps between the messages' times,
	// divided by Speed (default 1) and capped at MaxGap (if set).
	PaceOriginal bool
	Speed        float64
	MaxGap       time.Duration
	// Started, when set, is called once the range is fixed, before the
	// first message is read.
	Started func(Summary)
	// Progress, when set, is called about every 200ms and at the end.
	Progress func(Summary)

	checked    bool
	checkpoint *Checkpoint
	msgID      string
}

// target names the sink in the checkpoint file.
func (c *Config) target() string {
	if c.Publish == nil {
		return ""
	}
	return c.Publish.To
}

// ErrInvalid marks what Run refuses before reading anything: a checkpoint
// that cannot be read or does not fit the run.
var ErrInvalid = errkind.New(errkind.Invalid, "invalid replay")

// invalid marks err as ErrInvalid without changing its message.
type invalid struct{ err error }

func (e invalid) Error() string   { return e.err.Error() }
func (e invalid) Unwrap() []error { return []error{e.err, ErrInvalid} }

// Check does what needs no server: it reads the checkpoint and picks the
// copies' message ids, so that a bad checkpoint is refused before
// connecting. Run calls it when the caller has not.
func (c *Config) Check() error {
	if c.checked {
		return nil
	}
	if c.CheckpointPath != "" {
		cp, err := LoadCheckpoint(c.CheckpointPath)
		if err != nil {
			return invalid{err}
		}
		c.checkpoint = cp
	}
	prefix, err := MsgIDPrefixFor(c.checkpoint, c.NewMsgID)
	if err != nil {
		return invalid{err}
	}
	c.msgID = prefix
	c.checked = true
	return nil
}

// Run replays what cfg selects from js to cfg's sink. It owns the
// checkpoint: it resumes after the one at cfg.CheckpointPath, and saves
// it as it goes and when it ends. Interrupted (ctx cancelled), it stops
// reading, waits briefly for what is in flight, saves the checkpoint and
// returns ctx's error with the summary. Errors that mean the run was
// refused before reading wrap ErrInvalid (or streamread.ErrUnsupported):
// a checkpoint that does not fit, or, republishing, a target stream the
// copies cannot go to (checkTargets).
func Run(ctx context.Context, js jetstream.JetStream, cfg Config) (Summary, error) {
	if err := cfg.Check(); err != nil {
		return Summary{}, err
	}
	cp := cfg.checkpoint
	sum := Summary{Stream: cfg.Range.Stream}
	var src Source
	var origins []origin
	from := ""
	if cfg.Dump != nil {
		after := uint64(0)
		if cp != nil {
			after, sum.Resumed = cp.LastSeq, cp.LastSeq
		}
		src = FileSource(cfg.Dump, after)
		sum.Stream = "file:" + cfg.DumpName
		if cfg.Publish != nil {
			origins, from = cfg.DumpInfo.origins(cfg.Publish.TTL, time.Now()), "copies of messages in "+cfg.DumpName
		}
	} else {
		r, err := streamread.Resolve(ctx, js, cfg.Range)
		if err != nil {
			return sum, err
		}
		if cp != nil {
			if r, err = Resume(r, cp); err != nil {
				return sum, invalid{err}
			}
			sum.Resumed = cp.LastSeq
		}
		sum.FirstSeq, sum.LastSeq = r.First, r.Last
		if r.Follow {
			sum.LastSeq = 0
		}
		src = StreamSource(js, r)
		if cfg.Publish != nil {
			origins, from = streamOrigins(r, cfg.Publish.TTL), fmt.Sprintf("copies of stream %q", r.Stream)
		}
	}
	if cfg.Publish != nil {
		target := cfg.Target
		if target == nil {
			target = js
		}
		pc := *cfg.Publish
		markers, err := checkTargets(ctx, target, &pc, origins, from)
		if err != nil {
			return sum, err
		}
		pc.Markers = markers
		cfg.Publish = &pc
	}

	sink, closeSink, err := cfg.sink(js, cp)
	if err != nil {
		return sum, err
	}
	defer closeSink()
	if cfg.Started != nil {
		cfg.Started(sum)
	}
	sum, err = pump(ctx, src, sink, sum, cfg, cp)
	if pub, ok := sink.(*Publisher); ok && len(sum.Failed) > 0 {
		sum.LastError = pub.LastError()
	}
	return sum, err
}

// sink builds where the messages go; closeSink releases a file.
func (c *Config) sink(js jetstream.JetStream, cp *Checkpoint) (Sink, func(), error) {
	nothing := func() {}
	switch {
	case c.DryRun && c.Publish != nil:
		pc := c.Publish
		return &StatsSink{Skip: func(m *envelope.Message) Skip { return pc.skipOf(m, time.Now()) }}, nothing, nil
	case c.DryRun:
		return &StatsSink{}, nothing, nil
	case c.Publish != nil:
		target := c.Target
		if target == nil {
			target = js
		}
		pc := *c.Publish
		pc.MsgIDPrefix = c.msgID
		return NewPublisher(target, pc), nothing, nil
	case c.ToFile != "":
		// Resuming cuts the file back to the checkpoint's length.
		file, err := OpenFileSink(c.ToFile, cp, c.CheckpointPath != "")
		if errors.Is(err, ErrCheckpointMismatch) {
			return nil, nil, invalid{err}
		}
		if err != nil {
			return nil, nil, err
		}
		return file, func() { file.CloseFile() }, nil
	case c.Sink != nil:
		return c.Sink, nothing, nil
	}
	return nil, nil, errors.New("replay: no sink")
}
