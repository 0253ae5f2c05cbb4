package fsck

import (
	"io"

	"github.com/seglog/seglog/segment"
)

// DefaultMaxEntryBytes is the read limit: the largest entry fsck reads
// into memory when Options.MaxEntryBytes is zero (segment's, see
// segment.DefaultMaxEntryBytes). An entry the file holds but that is
// larger than it is reported as KindReadLimit, never as damage, and nothing
// is cut there.
const DefaultMaxEntryBytes = segment.DefaultMaxEntryBytes

// DefaultMaxBatchBytes is the old name of DefaultMaxEntryBytes, kept so
// that callers written against it still build. It is not the Log's
// MaxBatchBytes (1,048,588), which bounds appends.
//
// Deprecated: use DefaultMaxEntryBytes.
const DefaultMaxBatchBytes = DefaultMaxEntryBytes

// Scanner is the scanner fsck checks a .log with, segment.Scanner: it
// reports damage as regions and resynchronizes after it.
type Scanner = segment.Scanner

// Entry is one entry of a .log file as Scanner saw it (segment.Entry).
type Entry = segment.Entry

// NewScanner returns a scanner over the first size bytes of r
// (segment.NewScanner).
func NewScanner(r io.ReaderAt, size int64, maxEntry int) *Scanner {
	return segment.NewScanner(r, size, maxEntry)
}
