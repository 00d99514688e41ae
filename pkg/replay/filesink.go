package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jetctl/jetctl/pkg/envelope"
)

// fileFlushAt is how many bytes of whole lines FileSink gathers before it
// writes them.
const fileFlushAt = 256 << 10

// FileSink writes a dump: JSON lines to a file, in writes of whole lines
// only, so that a process killed at any moment (SIGKILL included) leaves a
// file of whole lines that --from-file loads. With a checkpoint, each
// Floor also syncs the file and reports its length (Offset), which the
// checkpoint records; a resumed dump cuts the file back to that length
// before it appends, so that lines written after the checkpoint are not
// written twice.
type FileSink struct {
	f    *os.File
	sync bool
	buf  []byte
	line []byte
	// written is the file's length; offset its length at the last Floor.
	written, offset int64
	floor           uint64
	err             error
}

// OpenFileSink opens path for a dump. Without a checkpoint the file is
// created or emptied; resuming from cp, it is cut back to cp's offset.
// sync makes every Floor sync the file to disk (for --checkpoint).
func OpenFileSink(path string, cp *Checkpoint, sync bool) (*FileSink, error) {
	if cp == nil {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, err
		}
		return &FileSink{f: f, sync: sync}, nil
	}
	if cp.FileOffset == nil {
		return nil, fmt.Errorf("%w: checkpoint for stream %q records no file length: it was not written by a --to-file dump (or by an older jetctl); start the dump again without it", ErrCheckpointMismatch, cp.Stream)
	}
	off := *cp.FileOffset
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() < off {
		err = fmt.Errorf("%w: %s has %d bytes, fewer than the %d its checkpoint records: it is not the file that checkpoint was written with", ErrCheckpointMismatch, path, st.Size(), off)
	}
	if err == nil {
		err = f.Truncate(off)
	}
	if err == nil {
		_, err = f.Seek(off, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &FileSink{f: f, sync: sync, written: off, offset: off}, nil
}

// ErrCheckpointMismatch is returned when a checkpoint does not fit the
// file it is to resume.
var ErrCheckpointMismatch = errors.New("checkpoint does not fit")

// Write adds m's line, writing the gathered lines first when they are many.
func (s *FileSink) Write(_ context.Context, m *envelope.Message) error {
	if s.err != nil {
		return s.err
	}
	s.line = m.AppendJSON(s.line[:0])
	if len(s.buf) > 0 && len(s.buf)+len(s.line) > fileFlushAt {
		if err := s.flush(); err != nil {
			return err
		}
	}
	s.buf = append(s.buf, s.line...)
	return nil
}

// flush writes the gathered lines in one write.
func (s *FileSink) flush() error {
	if s.err != nil || len(s.buf) == 0 {
		return s.err
	}
	n, err := s.f.Write(s.buf)
	s.written += int64(n)
	s.buf = s.buf[:0]
	if err != nil {
		s.err = fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	return s.err
}

// Floor writes (and, for a checkpoint, syncs) every line so far: they are
// all in the file up to lastRead. After a write error it stays where it was.
func (s *FileSink) Floor(lastRead uint64) uint64 {
	if s.flush() != nil {
		return s.floor
	}
	if s.sync && s.written != s.offset {
		if err := s.f.Sync(); err != nil {
			s.err = fmt.Errorf("sync %s: %w", s.f.Name(), err)
			return s.floor
		}
	}
	s.offset, s.floor = s.written, lastRead
	return s.floor
}

// Offset is the file's length at the last Floor: what a checkpoint of that
// floor records.
func (s *FileSink) Offset() int64 { return s.offset }

// Close writes what is gathered; the file stays open until CloseFile.
func (s *FileSink) Close(context.Context) error { return s.flush() }

// CloseFile closes the file.
func (s *FileSink) CloseFile() error { return s.f.Close() }

// Failed is always empty: a write error stops the replay.
func (s *FileSink) Failed() []uint64 { return nil }
