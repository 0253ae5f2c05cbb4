package cleaner

import "time"

// CompactionInput is everything DecideCompaction looks at (Kafka's
// LogCleanerManager.cleanableOffsets and the dirty-ratio test; see
// docs/compaction.md, "Scheduling").
type CompactionInput struct {
	// Segments is the log's view, oldest first, the active one last.
	Segments []Segment
	Policy   Policy
	Now      time.Time
	// StartOffset and EndOffset bound the log.
	StartOffset, EndOffset int64
	// Checkpoint is the cleaner-offset checkpoint, -1 if there is none.
	Checkpoint int64
	// UpperBound is the first offset that must not be cleaned (the last
	// stable offset); negative means none.
	UpperBound int64
	// Force cleans whatever is sealed and old enough, whatever the dirty
	// ratio.
	Force bool
}

// CompactionPlan is DecideCompaction's answer.
type CompactionPlan struct {
	// FirstDirty is where the uncleaned part starts: the checkpoint, reset
	// to the log start when it is missing or out of [start, end].
	FirstDirty int64
	// FirstUncleanable is the first offset this round may not clean: the
	// smallest of the upper bound, the active segment's base and the base
	// of the first dirty segment younger than min.compaction.lag.ms,
	// rounded down to a segment boundary.
	FirstUncleanable int64
	// CleanBytes and CleanableBytes are the sizes of the segments below
	// FirstDirty and in [FirstDirty, FirstUncleanable); Ratio is
	// CleanableBytes over their sum.
	CleanBytes, CleanableBytes int64
	Ratio                      float64
	// MaxLagExceeded: a dirty sealed segment's first record is older
	// than max.compaction.lag.ms.
	MaxLagExceeded bool
	// Clean says a round should run now: Ratio above
	// min.cleanable.dirty.ratio, or the max lag exceeded with something
	// cleanable, or forced.
	Clean bool
}

// DecideCompaction decides whether a log needs compacting and how far a
// round may go.
func DecideCompaction(in CompactionInput) CompactionPlan {
	p := CompactionPlan{FirstDirty: in.Checkpoint}
	if p.FirstDirty < in.StartOffset || p.FirstDirty > in.EndOffset {
		p.FirstDirty = in.StartOffset
	}
	p.FirstUncleanable = in.EndOffset
	if in.UpperBound >= 0 {
		p.FirstUncleanable = min(p.FirstUncleanable, in.UpperBound)
	}
	lagCut := in.Now.Add(-in.Policy.MinCompactionLag).UnixMilli()
	maxLagCut := int64(-1 << 63)
	if in.Policy.MaxCompactionLag < time.Duration(1<<63-1) {
		maxLagCut = in.Now.Add(-in.Policy.MaxCompactionLag).UnixMilli()
	}
	for _, s := range in.Segments {
		if s.Active {
			p.FirstUncleanable = min(p.FirstUncleanable, s.BaseOffset)
			break
		}
		if s.NextOffset <= p.FirstDirty {
			continue
		}
		if in.Policy.MinCompactionLag > 0 && s.LargestTimestamp > lagCut {
			p.FirstUncleanable = min(p.FirstUncleanable, s.BaseOffset)
		}
		// Kafka compares the segment's first batch timestamp; the largest
		// one is what the view has, and is never earlier.
		if s.LargestTimestamp >= 0 && s.LargestTimestamp < maxLagCut {
			p.MaxLagExceeded = true
		}
	}
	// Round down to a segment boundary: only whole sealed segments below
	// the bound are cleaned.
	bound := in.StartOffset
	for _, s := range in.Segments {
		if s.Active || s.NextOffset > p.FirstUncleanable {
			break
		}
		bound = s.NextOffset
	}
	p.FirstUncleanable = max(min(p.FirstUncleanable, bound), in.StartOffset)
	for _, s := range in.Segments {
		switch {
		case s.NextOffset <= p.FirstDirty:
			p.CleanBytes += s.Size
		case s.NextOffset <= p.FirstUncleanable:
			p.CleanableBytes += s.Size
		}
	}
	if total := p.CleanBytes + p.CleanableBytes; total > 0 {
		p.Ratio = float64(p.CleanableBytes) / float64(total)
	}
	p.Clean = in.Force ||
		(p.CleanableBytes > 0 && (p.Ratio > in.Policy.MinCleanableDirtyRatio || p.MaxLagExceeded))
	return p
}
