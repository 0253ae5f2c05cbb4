package seglog

import (
	"time"

	"github.com/seglog/seglog/segment"
)

// SegmentInfo describes one segment of a Log, as Segments reports it.
type SegmentInfo struct {
	// BaseOffset is the segment's first offset (its file names' number).
	BaseOffset int64
	// NextOffset is the offset after its last batch (BaseOffset if empty).
	NextOffset int64
	// Size is the .log's size in bytes.
	Size int64
	// LargestTimestamp is the largest batch max timestamp in the segment,
	// -1 if it holds none: what Kafka's retention by time compares.
	LargestTimestamp int64
	// Modified is the .log's modification time: its last append, so for a
	// sealed segment about when it was rolled. Kafka's retention by time
	// falls back to it when no batch carries a timestamp. Zero if the
	// filesystem could not say.
	Modified time.Time
	// Created is when the segment was created (by a roll, or as the
	// log's first), or when this Log opened it: a creation time is not
	// stored on disk, as Kafka's LogSegment.created is not. segment.ms
	// measures a segment's age from it when its first batch carries no
	// timestamp (it uses that timestamp otherwise).
	Created time.Time
	// Active is true for the segment appends go to (the last one).
	Active bool
}

// Segments returns a read-only view of the log's segments in offset order,
// for a cleaner to decide what to delete or compact. It is a snapshot:
// appends, rolls and retention may change the set as soon as it returns.
func (l *Log) Segments() []SegmentInfo {
	type ref struct {
		seg    *segment.Segment
		active bool
	}
	l.segs.RLock()
	refs := make([]ref, 0, l.segs.tree.Len())
	l.segs.tree.Ascend(func(it segItem) bool {
		if it.seg.Acquire() {
			refs = append(refs, ref{it.seg, it.seg == l.segs.active})
		}
		return true
	})
	l.segs.RUnlock()
	out := make([]SegmentInfo, 0, len(refs))
	for _, r := range refs {
		info := SegmentInfo{
			BaseOffset:       r.seg.BaseOffset(),
			NextOffset:       r.seg.NextOffset(),
			Size:             r.seg.Size(),
			LargestTimestamp: r.seg.MaxTimestamp(),
			Created:          r.seg.Created(),
			Active:           r.active,
		}
		if fi, err := l.fs.Stat(r.seg.LogPath()); err == nil {
			info.Modified = fi.ModTime()
		}
		r.seg.Release()
		out = append(out, info)
	}
	return out
}
