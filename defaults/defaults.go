// Package defaults declares, once, the Kafka topic-configuration defaults
// that seglog applies wherever a setting is left at zero: the Log's
// Options, the segment and index layers, the record package, the cleaner's
// Policy and compaction's Options all refer to these constants instead of
// repeating the numbers. It imports only time, so every layer can use it.
package defaults

import "time"

// Kafka's defaults (topic-level names in parentheses).
const (
	// SegmentBytes is the size at which a segment rolls (segment.bytes).
	SegmentBytes = 1 << 30
	// SegmentAge is the age at which a non-empty segment rolls
	// (segment.ms).
	SegmentAge = 7 * 24 * time.Hour
	// IndexIntervalBytes is how many bytes of batches go between two
	// offset-index entries (index.interval.bytes).
	IndexIntervalBytes = 4096
	// MaxIndexBytes is the preallocated size of an index file, 10 MiB:
	// 1,310,720 offset entries or 873,813 time entries
	// (segment.index.bytes).
	MaxIndexBytes = 10 << 20
	// MaxBatchBytes is the largest batch appended, 1 MiB plus the 12-byte
	// log overhead (max.message.bytes). It bounds appends only, never what
	// recovery or a read keeps.
	MaxBatchBytes = 1048588
)

// Kafka's defaults for the cleanup configs (cleaner.Policy and
// compaction.Options take theirs from here).
const (
	// Retention is how long a segment's records are kept (retention.ms).
	Retention = 7 * 24 * time.Hour
	// RetentionBytes is the size a log is cut down to, -1 for no limit
	// (retention.bytes).
	RetentionBytes = -1
	// FileDeleteDelay is how long a removed segment's files stay as
	// .deleted before they are unlinked (file.delete.delay.ms).
	FileDeleteDelay = 60 * time.Second
	// DeleteRetention is how long tombstones and removable transaction
	// markers stay after the first clean that sees them
	// (delete.retention.ms).
	DeleteRetention = 24 * time.Hour
	// MinCleanableDirtyRatio is the dirty share of a log at which it is
	// compacted (min.cleanable.dirty.ratio).
	MinCleanableDirtyRatio = 0.5
	// MinCompactionLag is how old a record must be before compaction may
	// remove it (min.compaction.lag.ms).
	MinCompactionLag time.Duration = 0
	// MaxCompactionLag is how long a record may stay uncompacted: no
	// limit, Kafka's Long.MAX_VALUE (max.compaction.lag.ms).
	MaxCompactionLag time.Duration = 1<<63 - 1
)

// Limits of the topic configs, which seglog.Options.Validate and the
// store's topic configs both enforce.
const (
	// MaxSegmentBytes is the largest segment.bytes, and the largest
	// segment.index.bytes: index entries hold 32-bit file positions.
	MaxSegmentBytes = 1<<31 - 1
	// MinIndexBytes is the smallest segment.index.bytes: two time-index
	// entries of 12 bytes.
	MinIndexBytes = 24
)
