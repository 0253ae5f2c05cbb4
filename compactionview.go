package seglog

import (
	"github.com/seglog/seglog/internal/sealed"
	"github.com/seglog/seglog/segment"
)

// compactionView is the Log as package compaction rewrites it: the methods
// of compaction's log interface, which it reaches through sealed.LogOf, so
// that none of them is part of the Log's exported API.
type compactionView struct{ l *Log }

func init() {
	sealed.LogOf = func(log any) any { return compactionView{log.(*Log)} }
}

// StartOffset is the log's start offset.
func (v compactionView) StartOffset() int64 { return v.l.StartOffset() }

// AcquireSealed is Log.acquireSealed.
func (v compactionView) AcquireSealed(from, to int64) *sealed.Run {
	return v.l.acquireSealed(from, to)
}

// TruncatedBelow is Log.truncatedBelow.
func (v compactionView) TruncatedBelow(run *sealed.Run, upTo int64) bool {
	return v.l.truncatedBelow(run, upTo)
}

// NewCleaned is Log.newCleaned.
func (v compactionView) NewCleaned(base int64) (*segment.Cleaned, error) {
	return v.l.newCleaned(base)
}

// ReplaceSegments is Log.replaceSegments.
func (v compactionView) ReplaceSegments(run *sealed.Run, news []*segment.Cleaned) error {
	return v.l.replaceSegments(run, news)
}
