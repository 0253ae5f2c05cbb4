package seglog

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// CleanedSegment writes one new segment for ReplaceSegments: its .log,
// .index and .timeindex are created with the .cleaned suffix, which a
// crash before the swap commits leaves for loading to delete. The index
// entries follow the rule appends use (index.interval.bytes), so the
// segment is indistinguishable from one written by appends.
type CleanedSegment struct {
	l        *Log
	base     int64
	log      vfs.File
	offIdx   *index.OffsetIndex
	timeIdx  *index.TimeIndex
	size     int64
	next     int64
	since    int64
	maxTS    int64
	maxTSOff int64
	names    []string
	done     bool // closed: finished or aborted
	finished bool // Finish succeeded: ready for ReplaceSegments
}

// NewCleaned creates the .cleaned files of a segment at base in the log's
// directory, replacing leftovers of an abandoned attempt.
func (l *Log) NewCleaned(base int64) (*CleanedSegment, error) {
	if l.ro != nil {
		return nil, ErrReadOnly
	}
	w := &CleanedSegment{l: l, base: base, next: base, maxTS: -1, maxTSOff: base}
	for _, suf := range []string{layout.LogSuffix, layout.IndexSuffix, layout.TimeIndexSuffix} {
		w.names = append(w.names, layout.FileName(base, suf)+layout.CleanedSuffix)
	}
	for _, n := range w.names {
		if err := l.fs.Remove(l.path(n)); err != nil && !isNotExist(err) {
			return nil, err
		}
	}
	var err error
	if w.log, err = l.fs.Create(l.path(w.names[0])); err != nil {
		return nil, err
	}
	io := index.Options{MaxBytes: l.opts.MaxIndexBytes, Writable: true}
	if w.offIdx, err = index.OpenOffset(l.fs, l.path(w.names[1]), base, io); err == nil {
		w.timeIdx, err = index.OpenTime(l.fs, l.path(w.names[2]), base, io)
	}
	if err != nil {
		w.Abort()
		return nil, err
	}
	return w, nil
}

// BaseOffset is the new segment's base offset.
func (w *CleanedSegment) BaseOffset() int64 { return w.base }

// Size is the bytes written to the .log so far.
func (w *CleanedSegment) Size() int64 { return w.size }

// NextOffset is the offset after the last batch written (the base if none).
func (w *CleanedSegment) NextOffset() int64 { return w.next }

// Append writes b after the batches written so far. Its offsets must
// follow them and fit the segment's relative range.
func (w *CleanedSegment) Append(b record.Batch) error {
	if w.done {
		return fmt.Errorf("seglog: cleaned segment %d: %w", w.base, ErrClosed)
	}
	if b.BaseOffset() < w.next || b.LastOffset()-w.base > int64(^uint32(0)>>1) {
		return fmt.Errorf("seglog: cleaned segment %d: batch at %d..%d does not follow %d", w.base, b.BaseOffset(), b.LastOffset(), w.next)
	}
	return w.write(b, b.LastOffset(), b.MaxTimestamp())
}

// write puts an entry whose checks passed after what was written so far:
// the entry's bytes, ending at offset last with timestamp maxTimestamp,
// and an index entry each IndexIntervalBytes, as the log's own appends
// make them.
func (w *CleanedSegment) write(entry []byte, last, maxTimestamp int64) error {
	if maxTimestamp > w.maxTS {
		w.maxTS, w.maxTSOff = maxTimestamp, last
	}
	if w.since > int64(w.l.opts.IndexIntervalBytes) {
		if err := w.offIdx.Append(last, w.size); err != nil {
			return err
		}
		if err := w.timeIdx.MaybeAppend(w.maxTS, w.maxTSOff, false); err != nil {
			return err
		}
		w.since = 0
	}
	if _, err := w.log.Write(entry); err != nil {
		return err
	}
	w.size += int64(len(entry))
	w.since += int64(len(entry))
	w.next = last + 1
	return nil
}

// IndexFull reports whether one more index entry would not fit, so the
// caller starts another segment.
func (w *CleanedSegment) IndexFull() bool { return w.offIdx.IsFull() || w.timeIdx.IsFull() }

// Finish makes the segment durable: the last time-index entry, indexes
// trimmed and synced, the .log synced and closed. It is then ready for
// ReplaceSegments.
func (w *CleanedSegment) Finish() error {
	if w.done {
		return nil
	}
	w.done = true
	var errs []error
	if w.maxTS >= 0 {
		errs = append(errs, w.timeIdx.MaybeAppend(w.maxTS, w.maxTSOff, true))
	}
	errs = append(errs, w.offIdx.Seal(), w.timeIdx.Seal(), w.log.Sync())
	errs = append(errs, w.offIdx.Close(), w.timeIdx.Close(), w.log.Close())
	if err := errors.Join(errs...); err != nil {
		w.remove()
		return fmt.Errorf("seglog: finishing cleaned segment %d: %w", w.base, err)
	}
	w.finished = true
	return nil
}

// Abort deletes the segment's files; nothing of it reaches the log.
func (w *CleanedSegment) Abort() {
	w.finished = false
	if !w.done {
		w.done = true
		if w.offIdx != nil {
			w.offIdx.Close()
		}
		if w.timeIdx != nil {
			w.timeIdx.Close()
		}
		w.log.Close()
	}
	w.remove()
}

func (w *CleanedSegment) remove() {
	for _, n := range w.names {
		if err := w.l.fs.Remove(filepath.Join(w.l.dir, n)); err != nil && !isNotExist(err) {
			w.l.logger.Warn("seglog: removing cleaned segment", "file", n, "err", err)
		}
	}
}
