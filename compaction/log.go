package compaction

import (
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/sealed"
	"github.com/seglog/seglog/segment"
)

// log is what a round needs of the log it rewrites. The interface is
// compaction's, its consumer's: a *seglog.Log provides it through an
// unexported view (sealed.LogOf), so none of these methods is part of the
// Log's exported API. This file is the only one that knows *seglog.Log.
type log interface {
	// StartOffset is the log's start offset.
	StartOffset() int64
	// AcquireSealed returns the sealed segments from the one holding
	// from (or the first) whose records all lie below to, in offset
	// order, each held by a reference (the active segment never).
	AcquireSealed(from, to int64) *sealed.Run
	// TruncatedBelow reports whether a truncation done since run was
	// acquired removed (or may have removed) any offset below upTo.
	TruncatedBelow(run *sealed.Run, upTo int64) bool
	// NewCleaned creates the .cleaned files of a new segment at base in
	// the log's directory.
	NewCleaned(base int64) (*segment.Cleaned, error)
	// ReplaceSegments swaps the finished news in for the segments of run
	// (Kafka's replaceSegments, through layout's .cleaned/.swap
	// protocol), or returns seglog.ErrSegmentsChanged or
	// seglog.ErrSegmentsBusy having changed nothing. It consumes news: on
	// any failure their files are deleted.
	ReplaceSegments(run *sealed.Run, news []*segment.Cleaned) error
}

// Clean runs one compaction round on l: it maps the keys of the dirty part
// [firstDirty, upper) into m (as far as m holds them), then rewrites the
// sealed segments from the log's start up to the mapped end, group by
// group, each swapped in as one step. upper is the first offset
// that must not be cleaned (the last stable offset, or the end of the
// log); the active segment is never touched. A group whose segment is
// unchanged is left alone. A group's swap runs while the next group is
// rewritten; Clean returns once every swap it started is done. A round
// that a truncation overtakes (it removed records the round mapped) stops
// with seglog.ErrSegmentsChanged. The returned Result.End is the new
// cleaner-offset checkpoint. Offsets never change.
func Clean(l *seglog.Log, m *OffsetMap, firstDirty, upper int64, o Options) (Result, error) {
	return clean(sealed.LogOf(l).(log), m, firstDirty, upper, o)
}
