// Package defaults declares, once, the Kafka topic-configuration defaults
// that seglog applies wherever a setting is left at zero: the Log's
// Options, the segment and index layers and the record package all refer
// to these constants instead of repeating the numbers. It imports nothing,
// so every layer can use it.
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
