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
	// ErrMissingData: offsets inside the log's range are not in its files
	// and nothing explains their absence: a segment deleted or emptied, a
	// .log cut short under its offset index. Reads stop there with a
	// *MissingDataError (which matches it) after the records before the
	// gap, rather than jump over it. Compaction's gaps are not missing
	// data (see MissingDataError).
	ErrMissingData = errors.New("seglog: data missing")
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

// MissingDataError reports offsets that belong inside the log but are in
// none of its files: the offsets [From, To) (To exclusive; the message
// names the inclusive range "From–To-1"), in the log directory Dir. File is
// the file where the data stops (the .log whose batches end at From, or the
// .index naming offsets its .log no longer holds), "" if not known; Reason
// says how the gap was found. errors.Is(err, ErrMissingData) holds for it.
//
// A gap between batches is missing data unless the log was compacted:
// compaction removes records and leaves their offsets unused. A log counts
// as compacted once it has a cleaner-offset checkpoint (its own
// cleaner-offset-checkpoint file, the line a store's checkpoints keep
// for it, or for a partition of a Kafka log.dir the log.dir's line), which
// seglog fsck decides the same way. An offset index naming offsets past
// the end of its .log is missing data in any log.
type MissingDataError struct {
	Dir      string
	From, To int64
	File     string
	Reason   string
}

// Error reads "seglog: data missing: offsets From–To-1 in Dir: Reason",
// the words seglog fsck uses.
func (e *MissingDataError) Error() string {
	s := fmt.Sprintf("seglog: data missing: offsets %d–%d in %s", e.From, e.To-1, e.Dir)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is makes errors.Is(err, ErrMissingData) hold.
func (e *MissingDataError) Is(target error) bool { return target == ErrMissingData }
