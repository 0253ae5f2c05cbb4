package store

import (
	"cmp"
	"slices"
	"time"

	"github.com/seglog/seglog/cleaner"
)

// CleanerMetrics is what the store's cleaner (Start's rounds and
// CleanOnce) has done since Open: counters that never go down, the
// partitions of deleted topics included, and each partition's figures as
// of its last pass. Clean's one-off rounds are not in it: Clean reports
// its own outcome. Plain values, for a dashboard; the server exports them
// (docs/metrics.md).
type CleanerMetrics struct {
	// Passes counts finished rounds over every partition; LastRun is when
	// the last one ended (zero before the first).
	Passes  int64
	LastRun time.Time
	// SegmentsDeleted, BytesDeleted and RecordsDeleted count what
	// retention (time, size, and the log start moved by a cleaning
	// round) removed: whole segments, their bytes, and the offsets the
	// log start advanced over.
	SegmentsDeleted, BytesDeleted, RecordsDeleted int64
	// CompactionRounds counts compaction rounds that ran; BytesRead and
	// BytesWritten the segment bytes they read (every pass over the
	// dirty and clean parts) and wrote (the new segments).
	CompactionRounds        int64
	BytesRead, BytesWritten int64
	// Failures counts failed retention passes and compaction rounds.
	Failures int64
	// Partitions has one entry per partition of the store, the offsets
	// topic's included, by topic and partition.
	Partitions []PartitionCleanerMetrics
}

// PartitionCleanerMetrics is one partition's record under the store's
// cleaner.
type PartitionCleanerMetrics struct {
	Topic     string
	Partition int32
	// SegmentsDeleted and BytesDeleted count what retention removed
	// from this partition.
	SegmentsDeleted, BytesDeleted int64
	// CompactionRounds, BytesRead and BytesWritten are this partition's
	// part of the totals.
	CompactionRounds        int64
	BytesRead, BytesWritten int64
	// DirtyRatio is the dirty part's share of the cleanable bytes at the
	// partition's last pass (what min.cleanable.dirty.ratio is compared
	// with); -1 when its topic does not compact or no pass measured it
	// yet.
	DirtyRatio float64
	// Failed says the partition's last retention pass or compaction
	// round failed.
	Failed bool
}

// CleanerMetrics returns a snapshot of the store's cleaner: figures it
// keeps as it runs, read without opening any partition. A read-only store
// runs no cleaner and returns zero figures and no partitions.
func (s *Store) CleanerMetrics() CleanerMetrics {
	if s.readOnly {
		return CleanerMetrics{}
	}
	// The cleaner's snapshots first, the store's lock after: the store
	// calls into the cleaner under its lock (Add), never the reverse
	// while holding the cleaner's.
	ret := s.clean.Metrics()
	comp, removed := s.clean.CompactionTotals()
	out := CleanerMetrics{Passes: ret.Passes, LastRun: ret.LastRun, SegmentsDeleted: ret.SegmentsDeleted,
		BytesDeleted: ret.BytesDeleted, RecordsDeleted: ret.RecordsDeleted, Failures: ret.Failures}
	// A deleted partition's compaction record goes to the cleaner's
	// removed sums, so the totals count deleted topics too, as the
	// retention totals do, and a topic created again under the same name
	// starts from zero.
	out.CompactionRounds, out.BytesRead, out.BytesWritten = removed.Rounds, removed.BytesRead, removed.BytesWritten
	out.Failures += removed.Failures
	compByDir := make(map[string]*cleaner.CompactionMetrics, len(comp))
	for i := range comp {
		c := &comp[i]
		compByDir[c.Dir] = c
		out.CompactionRounds += c.Rounds
		out.BytesRead += c.BytesRead
		out.BytesWritten += c.BytesWritten
		out.Failures += c.Failures
	}
	retByDir := make(map[string]*cleaner.LogMetrics, len(ret.Logs))
	for i := range ret.Logs {
		retByDir[ret.Logs[i].Dir] = &ret.Logs[i]
	}

	s.mu.RLock()
	for _, t := range s.topics {
		compacts := t.cfg.policy().CleanupPolicy != cleaner.Delete
		for _, p := range t.parts {
			pm := PartitionCleanerMetrics{Topic: p.topic, Partition: p.id, DirtyRatio: -1}
			dir := p.dir()
			if r := retByDir[dir]; r != nil {
				pm.SegmentsDeleted, pm.BytesDeleted, pm.Failed = r.SegmentsDeleted, r.BytesDeleted, r.Failed
			}
			if c := compByDir[dir]; c != nil {
				pm.CompactionRounds, pm.BytesRead, pm.BytesWritten = c.Rounds, c.BytesRead, c.BytesWritten
				pm.Failed = pm.Failed || c.Err != nil
				if compacts {
					pm.DirtyRatio = c.Ratio
				}
			}
			out.Partitions = append(out.Partitions, pm)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out.Partitions, func(a, b PartitionCleanerMetrics) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
