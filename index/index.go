// Package index implements Kafka's segment indexes: the offset index
// (`.index`, 8-byte entries: int32 relative offset, int32 position in the
// `.log`) and the time index (`.timeindex`, 12-byte entries: int64 timestamp,
// int32 relative offset), both big-endian, without header or checksum,
// byte-compatible with Kafka's files.
//
// Life cycle. The active segment's indexes are writable: the file is
// preallocated (fallocate) to the maximum size, so a full disk is an error
// when the index is created instead of a SIGBUS at a later store through the
// mapping, and mapped read-write. Entries are appended, looked up and
// truncated. Sealing (segment roll, close) trims the file to exactly its
// entries and drops the mapping. A sealed index found on disk is opened
// without reading or mapping it (its entry count is its file size divided by
// the entry size) and is mapped read-only on first lookup; a Cache bounds how
// many sealed indexes are mapped at once. MakeWritable grows a sealed index
// back to its maximum size when its segment becomes active again.
//
// Lookups use Kafka's warm-section binary search: a target at or after the
// entry 8 KiB before the end is searched in the last 8 KiB of entries only,
// so tail lookups (followers, tailing consumers) keep touching the same few
// pages and stay in the page cache as the index grows.
//
// Concurrency: one goroutine appends and makes structural changes (the Log
// serializes them); any number of goroutines may look up concurrently.
//
// An embedder of seglog does not use this package directly: package
// segment opens and maintains a segment's indexes (OpenOffset, OpenTime),
// and seglog.Options.MaxMappedIndexes sizes the Cache a Log gives them. It
// is public for tools that read index files and for its errors (an *Error
// wrapping ErrCorrupt, which a Log's lookups return for a damaged index).
package index

import (
	"encoding/binary"
	"math"

	"github.com/seglog/seglog/defaults"
)

// Entry sizes in bytes. These are part of Kafka's file format.
const (
	OffsetEntrySize = 8
	TimeEntrySize   = 12
)

// DefaultMaxBytes is Kafka's segment.index.bytes default: 10 MiB, which holds
// 1,310,720 offset entries or 873,813 time entries.
const DefaultMaxBytes = defaults.MaxIndexBytes

// warmBytes is the size of the index tail that tail lookups search alone
// (Kafka's AbstractIndex warm section).
const warmBytes = 8192

// NoTimestamp is Kafka's RecordBatch.NO_TIMESTAMP: the timestamp of the time
// index's "no entry" answer.
const NoTimestamp = -1

// Options configure an index when it is opened.
type Options struct {
	// MaxBytes is the maximum file size, rounded down to a multiple of the
	// entry size; 0 means DefaultMaxBytes.
	MaxBytes int
	// Writable opens the index of the active segment: the file is grown and
	// preallocated to MaxBytes and mapped read-write at once. Otherwise the
	// index is sealed: its file holds exactly its entries and is mapped
	// read-only on first lookup, through Cache.
	Writable bool
	// Cache bounds the mapped sealed indexes of a log; nil means unbounded.
	Cache *Cache
}

// OffsetPosition is an offset index entry: the batch holding Offset starts at
// byte Position of the segment's `.log` (or earlier, for a lookup result).
type OffsetPosition struct {
	Offset   int64 // absolute offset
	Position int64 // byte position in the .log file
}

// TimestampOffset is a time index entry: the largest timestamp in the segment
// up to and including Offset is Timestamp.
type TimestampOffset struct {
	Timestamp int64
	Offset    int64 // absolute offset
}

// relKey converts an absolute target to the relative key space of an index
// with base offset b, clamped to int32 (ok=false: below every entry).
func relKey(target, b int64) (int32, bool) {
	if target < b {
		return 0, false
	}
	rel := target - b
	if rel > math.MaxInt32 {
		rel = math.MaxInt32
	}
	return int32(rel), true
}

func be32(b []byte, i int64) int32 { return int32(binary.BigEndian.Uint32(b[i:])) }
func be64(b []byte, i int64) int64 { return int64(binary.BigEndian.Uint64(b[i:])) }
