package seglog

import (
	"sync/atomic"
	"time"
)

// Stats counts what the Logs opened with it (Options.Stats) spent on
// rolls, flushes and recovery, for an operator's dashboards. Several Logs
// may share one, as a store's partitions do, so that the counts survive a
// Log being closed and reopened. Its zero value is ready; it is safe for
// concurrent use, and counting costs atomic adds outside any lock's
// critical path but the roll's own.
type Stats struct {
	rolls, rollNanos          atomic.Int64
	flushes, flushNanos       atomic.Int64
	recoveries, recoveryNanos atomic.Int64
	segmentsRecovered         atomic.Int64
	opens, openNanos          atomic.Int64
}

// StatsSnapshot is a Stats' counters at one moment: counts and the total
// time they took, all only going up.
type StatsSnapshot struct {
	// Rolls counts the active segments sealed for a new one, RollTime
	// their total time (sealing, and under SyncAlways the old segment's
	// sync, included).
	Rolls    int64
	RollTime time.Duration
	// Flushes counts the fsync rounds that made appended records durable
	// (a group commit's sync of the active segment under SyncAlways, or a
	// flush of the segments from the recovery point on: the flusher's
	// and Sync's), FlushTime their total time. The sync of a segment a
	// roll seals under SyncAlways is the roll's time.
	Flushes   int64
	FlushTime time.Duration
	// Opens counts the Logs opened and OpenTime their total time.
	// Recoveries counts those opens that had to scan segments because
	// the Log was not closed cleanly (RecoveryTime their time, included in
	// OpenTime), and SegmentsRecovered the segments they scanned.
	Opens, Recoveries      int64
	OpenTime, RecoveryTime time.Duration
	SegmentsRecovered      int64
}

// Snapshot returns the counters. A nil Stats has none.
func (s *Stats) Snapshot() StatsSnapshot {
	if s == nil {
		return StatsSnapshot{}
	}
	return StatsSnapshot{
		Rolls: s.rolls.Load(), RollTime: time.Duration(s.rollNanos.Load()),
		Flushes: s.flushes.Load(), FlushTime: time.Duration(s.flushNanos.Load()),
		Opens: s.opens.Load(), OpenTime: time.Duration(s.openNanos.Load()),
		Recoveries: s.recoveries.Load(), RecoveryTime: time.Duration(s.recoveryNanos.Load()),
		SegmentsRecovered: s.segmentsRecovered.Load(),
	}
}

// The Log's hooks; each is a no-op without Options.Stats, so a Log that
// is not counted pays a nil check.

func (l *Log) countRoll(since time.Time) {
	if s := l.opts.Stats; s != nil {
		s.rolls.Add(1)
		s.rollNanos.Add(int64(time.Since(since)))
	}
}

func (l *Log) countFlush(since time.Time) {
	if s := l.opts.Stats; s != nil {
		s.flushes.Add(1)
		s.flushNanos.Add(int64(time.Since(since)))
	}
}

// countOpen counts an Open that took since, and recovered that many
// segments.
func (l *Log) countOpen(since time.Time, recovered int) {
	if s := l.opts.Stats; s != nil {
		d := int64(time.Since(since))
		s.opens.Add(1)
		s.openNanos.Add(d)
		if recovered > 0 {
			s.recoveries.Add(1)
			s.recoveryNanos.Add(d)
			s.segmentsRecovered.Add(int64(recovered))
		}
	}
}
