package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Cleaned writes one new segment whole, for a compaction that swaps it in
// for older ones later: its .log, .index and .timeindex are created with
// the .cleaned suffix (CleanedSuffix), which a crash before the swap
// commits leaves for loading to delete, and layout.CommitCleaned renames
// them. Its entries go through the Segment's own write path, so its index
// entries (index.interval.bytes) and time index follow the rule appends
// use and it is indistinguishable from a segment written by appends. One
// goroutine writes it; nothing reads it until it is swapped in and opened.
type Cleaned struct {
	s        *Segment
	names    []string // the files' base names, .log first
	done     bool     // closed: finished or aborted
	finished bool     // Finish succeeded
}

// NewCleaned creates the .cleaned files of a segment at base in dir,
// replacing leftovers of an abandoned attempt. Of opts it uses the index
// settings and the Logger; the entries it is given were stored once, so
// they are bounded by MaxStoredEntry, not by MaxBatchBytes.
func NewCleaned(fsys vfs.FS, dir string, base int64, opts Options) (*Cleaned, error) {
	if base < 0 {
		return nil, fmt.Errorf("segment: create cleaned %s: negative base offset %d", dir, base)
	}
	s := newSegment(fsys, dir, base, Options{
		IndexIntervalBytes: opts.IndexIntervalBytes,
		MaxIndexBytes:      opts.MaxIndexBytes,
		MaxBatchBytes:      MaxStoredEntry,
		Logger:             opts.Logger,
		Now:                opts.Now,
	})
	logPath := *s.logPath.Load() + CleanedSuffix
	s.logPath.Store(&logPath)
	s.idxPath += CleanedSuffix
	s.timePath += CleanedSuffix
	w := &Cleaned{s: s}
	for _, p := range []string{logPath, s.idxPath, s.timePath} {
		w.names = append(w.names, filepath.Base(p))
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	f, err := fsys.Create(logPath)
	if err != nil {
		return nil, err
	}
	s.adoptLog(f, true)
	if err := s.openIndexesLocked(true); err != nil {
		w.done = true
		s.closeLog()
		w.remove()
		return nil, err
	}
	s.filesOpen.Store(true)
	s.next.Store(base)
	s.maxTSOffset = base
	s.tailLoaded.Store(true)
	return w, nil
}

// BaseOffset is the new segment's base offset.
func (w *Cleaned) BaseOffset() int64 { return w.s.base }

// Size is the bytes written to the .log so far.
func (w *Cleaned) Size() int64 { return w.s.size.Load() }

// NextOffset is the offset after the last entry written (the base if none).
func (w *Cleaned) NextOffset() int64 { return w.s.next.Load() }

// Names are the base names of the segment's .log, .index and .timeindex,
// with the .cleaned suffix, in that order.
func (w *Cleaned) Names() []string { return w.names }

// Finished reports whether Finish succeeded: the segment is durable and
// ready to be swapped in.
func (w *Cleaned) Finished() bool { return w.finished }

// Append writes b after the entries written so far, with Segment.Append's
// checks: its offsets must follow them and fit the segment's relative
// range.
func (w *Cleaned) Append(b record.Batch) error {
	if w.done {
		return fmt.Errorf("segment: cleaned %s: %w", w.s.LogPath(), ErrClosed)
	}
	return w.s.Append(b)
}

// AppendLegacy writes a legacy (v0/v1) message entry after what was
// written so far. Its header says nothing of the offsets it spans or its
// timestamp in the places a v2 batch does, so the caller gives them:
// first and last offsets (a compressed wrapper's inner messages, or the
// entry's own offset) and its timestamp (-1 for v0). The entry's offset
// field must be last.
func (w *Cleaned) AppendLegacy(entry []byte, first, last, maxTimestamp int64) error {
	s := w.s
	if w.done {
		return fmt.Errorf("segment: cleaned %s: %w", s.LogPath(), ErrClosed)
	}
	if len(entry) < record.PeekSize || int64(binary.BigEndian.Uint64(entry)) != last {
		return fmt.Errorf("segment: append to %s: %w: legacy entry at %d..%d: its offset field does not say %d",
			s.LogPath(), ErrBadAppend, first, last, last)
	}
	pos := s.writerSize()
	if err := s.checkPlace(first, last, pos, len(entry)); err != nil {
		return err
	}
	return s.write(entry, last, maxTimestamp, pos, false)
}

// IndexFull reports whether one more index entry would not fit, so the
// caller starts another segment.
func (w *Cleaned) IndexFull() bool { return w.s.offIdx.IsFull() || w.s.timeIdx.IsFull() }

// Finish makes the segment durable as a roll seals one (Segment.Seal: the
// last time-index entry, indexes trimmed and synced), then syncs and
// closes the .log. It is then ready to be swapped in. A failure deletes
// the files.
func (w *Cleaned) Finish() error {
	if w.done {
		return nil
	}
	w.done = true
	s := w.s
	err := s.Seal()
	if err == nil {
		err = s.log.Sync()
	}
	if err = errors.Join(err, s.closeFiles()); err != nil {
		w.remove()
		return fmt.Errorf("segment: finishing cleaned %s: %w", s.LogPath(), err)
	}
	w.finished = true
	return nil
}

// Abort deletes the segment's files; nothing of it is kept.
func (w *Cleaned) Abort() {
	w.finished = false
	if !w.done {
		w.done = true
		w.s.closeFiles()
	}
	w.remove()
}

func (w *Cleaned) remove() {
	for _, n := range w.names {
		if err := w.s.fs.Remove(filepath.Join(w.s.dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.s.opts.Logger.Warn("segment: removing cleaned segment", "file", n, "err", err)
		}
	}
}
