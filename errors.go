package seglog

import (
	"errors"
	"fmt"

	"github.com/seglog/seglog/record"
)

// Errors returned by the Log. Each is a sentinel for errors.Is; the errors
// actually returned wrap them with detail.
var (
	// ErrInvalidOptions: Options.Validate refused a setting.
	ErrInvalidOptions = errors.New("seglog: invalid options")
	// ErrCorruptBatch: a batch handed to AppendBatch is damaged or breaks a
	// producer-batch rule (wrong CRC, magic, lengths, counts, base offset).
	// It is the record package's corruption sentinel, so errors from either
	// layer match it.
	ErrCorruptBatch = record.ErrCorrupt
	// ErrBatchTooLarge: the batch exceeds MaxBatchBytes or SegmentBytes.
	ErrBatchTooLarge = record.ErrTooLarge
	// ErrInvalidRecord: a record given to Append cannot be encoded.
	ErrInvalidRecord = errors.New("seglog: invalid record")
	// ErrClosed: the Log was closed.
	ErrClosed = errors.New("seglog: log closed")
	// ErrLocked: another Log, in this process or another, has the directory.
	ErrLocked = errors.New("seglog: directory is locked by another log")
	// ErrSyncFailed: an fdatasync failed; the Log refuses appends until it is
	// reopened, because the kernel may have dropped the unsynced pages and a
	// retried fsync could report success for data that is gone.
	ErrSyncFailed = errors.New("seglog: sync failed; reopen the log to recover")
	// ErrOffsetOutOfRange: an offset is below the log start or past its end.
	ErrOffsetOutOfRange = errors.New("seglog: offset out of range")
	// ErrCorruptLog: stored data is damaged where the log cannot drop it
	// silently (below the recovery point). The error is a *CorruptionError
	// naming the file and byte position.
	ErrCorruptLog = errors.New("seglog: corrupt log")
)

// CorruptionError reports damaged stored data: the file, the byte position
// in it, and the reason. errors.Is(err, ErrCorruptLog) holds for it.
type CorruptionError struct {
	Path   string
	Pos    int64
	Reason error
}

// Error implements error.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("seglog: corrupt log: %s at byte %d: %v", e.Path, e.Pos, e.Reason)
}

// Unwrap returns the reason, so errors.Is sees both ErrCorruptLog and the
// underlying record error.
func (e *CorruptionError) Unwrap() []error { return []error{ErrCorruptLog, e.Reason} }
