package index

import (
	"errors"
	"fmt"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Sentinel errors. Every error returned by this package about a specific
// index file is an *Error wrapping one of these (or an I/O error from vfs), so
// callers test with errors.Is and read the file and byte position with
// errors.As.
var (
	// ErrFull means the index has no free slot; the segment must roll.
	ErrFull = errors.New("index: full")
	// ErrInvalidOffset means an append would break the ordering of the
	// index: an offset not larger than the last entry's (offset index), or
	// smaller than it (time index), or not larger than the base offset.
	ErrInvalidOffset = errors.New("index: offset out of order")
	// ErrInvalidTimestamp means a time-index append carried a timestamp
	// smaller than the last entry's.
	ErrInvalidTimestamp = errors.New("index: timestamp out of order")
	// ErrOverflow means a value does not fit its 32-bit field: a relative
	// offset outside [0, 2^31-1] or a position outside [0, 2^31-1].
	ErrOverflow = errors.New("index: value does not fit in 32 bits")
	// ErrCorrupt marks a damaged index file found by SanityCheck. Kafka
	// rebuilds the segment's indexes when it sees one. It also matches
	// record.ErrCorrupt (seglog.ErrCorrupt), so one errors.Is finds damage
	// in batches and indexes alike.
	ErrCorrupt error = corruptIndex{}
	// ErrReadOnly means a mutation was attempted on a sealed index; call
	// MakeWritable first.
	ErrReadOnly = errors.New("index: sealed (read-only)")
	// ErrOutOfRange means an entry number outside [0, Entries()).
	ErrOutOfRange = errors.New("index: entry number out of range")
	// ErrClosed means the index was closed or deleted. It is
	// vfs.ErrClosed, the one "closed" error of every layer.
	ErrClosed = vfs.ErrClosed
)

// corruptIndex is ErrCorrupt's type: a sentinel that also answers to
// record.ErrCorrupt.
type corruptIndex struct{}

func (corruptIndex) Error() string        { return "index: corrupt" }
func (corruptIndex) Is(target error) bool { return target == record.ErrCorrupt }

// Error describes a failure concerning one index file.
type Error struct {
	// Op is the operation that failed ("append", "open", "sanity check", ...).
	Op string
	// Path is the index file.
	Path string
	// Pos is the byte position in the file the error is about, or -1.
	Pos int64
	// Detail explains the failure in words; may be empty.
	Detail string
	// Err is the sentinel (ErrCorrupt, ErrFull, ...) or underlying I/O error.
	Err error
}

// Error formats the failure as "index: OP PATH at byte POS: CAUSE: DETAIL".
func (e *Error) Error() string {
	s := "index: " + e.Op + " " + e.Path
	if e.Pos >= 0 {
		s += fmt.Sprintf(" at byte %d", e.Pos)
	}
	s += ": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel or underlying error.
func (e *Error) Unwrap() error { return e.Err }
