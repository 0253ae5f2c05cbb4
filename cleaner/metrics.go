package cleaner

import "time"

// LogMetrics is one log's retention record.
type LogMetrics struct {
	Dir string
	// SegmentsDeleted, BytesDeleted and RecordsDeleted count what passes
	// removed from this log (records as offsets: the start's advance).
	SegmentsDeleted, BytesDeleted, RecordsDeleted int64
	// StartOffset is the log's start offset after its last pass.
	StartOffset int64
	// LastRun is when its last pass ended (zero before the first).
	LastRun time.Time
	// Failures counts failed passes; Failed and Err describe the last
	// one, cleared by the next pass that succeeds.
	Failures int64
	Failed   bool
	Err      error
	// PinnedBy is the base offset of a segment whose future timestamp
	// keeps it and every later segment from time retention; -1 if none.
	PinnedBy int64
}

// Metrics is a snapshot of a Cleaner, safe to keep and read.
type Metrics struct {
	// Totals over all logs, including removed ones.
	SegmentsDeleted, BytesDeleted, RecordsDeleted, Failures int64
	// Passes counts finished rounds over all logs; LastRun is when the
	// last one ended.
	Passes  int64
	LastRun time.Time
	// Backlog is how many logs of the current round wait for a worker.
	Backlog int
	// Logs holds one entry per log, sorted by Dir.
	Logs []LogMetrics
}

// SegmentDeleted describes one segment a pass removed.
type SegmentDeleted struct {
	Dir                    string
	BaseOffset, NextOffset int64
	Size                   int64
	Reason                 Reason
}

// LogCleaned describes one log's finished pass, deleting or not.
type LogCleaned struct {
	Dir                            string
	Segments, Bytes, Records       int64
	OldStartOffset, NewStartOffset int64
	// PinnedBy is as in LogMetrics.
	PinnedBy int64
	Duration time.Duration
}

// Failure describes a failed pass (an error or a panic).
type Failure struct {
	Dir string
	Err error
}

// Events are callbacks a Cleaner makes from its workers, possibly
// concurrently; they must return quickly, and must not call Remove for
// the log they report on (Remove waits for that log's pass, which is
// making the call). Nil fields are skipped.
type Events struct {
	SegmentDeleted func(SegmentDeleted)
	LogCleaned     func(LogCleaned)
	Failure        func(Failure)
}
