package seglog

import (
	"errors"

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
	// ErrCorrupt: stored data is damaged: a batch, an index or what an
	// iteration read; errors.Is(err, ErrCorrupt) holds for all three.
	// Damage in a .log (found by recovery, a read-only open, a read or an
	// iteration) is a *CorruptionError naming the file and the damaged
	// entry's byte position, the one fsck reports; recovery returns one
	// for damage below the recovery point (data that had been synced) and
	// changes nothing. Damage in an index file met by a lookup is an
	// *index.Error (Path, and Pos when the position is known) wrapping
	// index.ErrCorrupt, which matches ErrCorrupt too (seglog fsck says
	// whether the index or its .log is at fault).
	ErrCorrupt = record.ErrCorrupt
	// ErrCorruptLog is the former name of ErrCorrupt.
	//
	// Deprecated: use ErrCorrupt; both are the same sentinel.
	ErrCorruptLog = ErrCorrupt
)

// CorruptionError reports damaged stored data: File, the byte position Pos
// in it, and the Reason. errors.Is(err, ErrCorrupt) holds for it. It is the
// record package's type, so damage found by any layer (record, segment,
// the Log) is the same type with the same fields.
type CorruptionError = record.CorruptionError
