package cleaner

import "time"

// Segment is what retention needs to know about one segment of a log.
type Segment struct {
	// BaseOffset is the segment's first offset; NextOffset the offset
	// after its last record (BaseOffset when empty).
	BaseOffset, NextOffset int64
	// Size is the .log file's size in bytes.
	Size int64
	// LargestTimestamp is the largest record timestamp in the segment, in
	// milliseconds since the epoch, or -1 if no record has one.
	LargestTimestamp int64
	// Modified stands in for LargestTimestamp when it is -1, as Kafka
	// uses the file's mtime (the segment's creation or roll time here).
	// The zero time means unknown (the Log's Stat failed): never old.
	Modified time.Time
	// Active marks the segment appends go to (the last one).
	Active bool
}

// Log is what the cleaner needs from a log. *seglog.Log satisfies it
// through Wrap; tests use fakes.
type Log interface {
	// Dir names the log in metrics and events.
	Dir() string
	// StartOffset and EndOffset bound the log: [start, end).
	StartOffset() int64
	EndOffset() int64
	// Segments lists the segments oldest first, the active one last.
	Segments() []Segment
	// Roll seals a non-empty active segment and starts an empty one.
	Roll() error
	// DeleteBefore makes offset the start offset, checkpoints it and
	// removes the whole segments below it; it returns how many went.
	DeleteBefore(offset int64) (int, error)
	// SetFileDeleteDelay sets file.delete.delay.ms for later removals.
	SetFileDeleteDelay(d time.Duration)
	// ExpireDeleted unlinks removed segments whose delay has passed.
	ExpireDeleted() int
}
