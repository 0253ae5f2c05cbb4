package seglog

import (
	"errors"
	"fmt"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Errors returned by the Log. Each is a sentinel for errors.Is; the errors
// actually returned wrap them with detail.
var (
	// ErrInvalidOptions: Options.Validate refused a setting.
	ErrInvalidOptions = errors.New("seglog: invalid options")
	// ErrCorruptBatch: a batch handed to AppendBatch was refused for its
	// contents: it is malformed (CRC, magic, lengths, framing, a record) or
	// breaks a producer-batch rule (base offset, counts, a control batch).
	// The error is a *BatchError. It is the caller's data that is bad, not
	// the log's: it does not match ErrCorrupt, which is damage on disk.
	ErrCorruptBatch = errors.New("seglog: corrupt batch")
	// ErrBatchTooLarge: the batch exceeds MaxBatchBytes.
	ErrBatchTooLarge = record.ErrTooLarge
	// ErrInvalidRecord: a record given to Append cannot be encoded.
	ErrInvalidRecord = errors.New("seglog: invalid record")
	// ErrClosed: the Log was closed. It is vfs.ErrClosed, the one value
	// every layer returns (store.ErrClosed, raftlog.ErrClosed,
	// segment.ErrClosed and index.ErrClosed are it too), so a segment or
	// index closed under a call matches it as well.
	ErrClosed = vfs.ErrClosed
	// ErrLocked: another Log, in this process or another, has the
	// directory. It is vfs.ErrLocked, the one value for a held lock
	// (store.ErrLocked and fsck.ErrLocked are it too); Open's error
	// names the holder when the lock file records one.
	ErrLocked = vfs.ErrLocked
	// ErrSyncFailed: an fdatasync failed; the Log refuses appends until it is
	// reopened, because the kernel may have dropped the unsynced pages and a
	// retried fsync could report success for data that is gone.
	ErrSyncFailed = errors.New("seglog: sync failed; reopen the log to recover")
	// ErrOffsetOutOfRange: an offset is below the log start or past its end.
	ErrOffsetOutOfRange = errors.New("seglog: offset out of range")
	// ErrCorrupt: stored data is damaged: a batch, an index or what an
	// iteration read; errors.Is(err, ErrCorrupt) holds for all three. It
	// never means the caller's input (that is ErrCorruptBatch).
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

// BatchError is AppendBatch's refusal of a batch for its contents; nothing
// was stored. errors.Is(err, ErrCorruptBatch) holds for it, and
// errors.Is(err, ErrCorrupt) does not: the batch is the caller's, and
// nothing on disk is damaged. errors.Is still sees record's sentinels
// through it (record.ErrInvalidProducerBatch for a producer rule,
// record.ErrUnknownCodec, record.ErrUnsupportedMagic,
// record.ErrDecompressLimit). The message is record's, unchanged.
type BatchError struct {
	// Pos is the byte in the batch where the problem was found, -1 when
	// the batch breaks a rule as a whole (a producer rule).
	Pos int64
	err error // what the record package said
}

func badBatch(err error) error {
	e := &BatchError{Pos: -1, err: err}
	var ce *record.CorruptionError
	if errors.As(err, &ce) {
		e.Pos = ce.Pos
	}
	return e
}

// Error is the record package's message for the batch.
func (e *BatchError) Error() string { return e.err.Error() }

// Is makes the error match ErrCorruptBatch.
func (e *BatchError) Is(target error) bool { return target == ErrCorruptBatch }

// Unwrap returns the reason behind record's error: a *CorruptionError
// itself is left out, since it would match ErrCorrupt.
func (e *BatchError) Unwrap() error {
	var ce *record.CorruptionError
	if errors.As(e.err, &ce) {
		return ce.Reason
	}
	return e.err
}
