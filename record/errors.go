package record

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrCorrupt matches every *CorruptionError: the bytes are not a
	// well-formed batch (bad length, CRC mismatch, broken record framing).
	ErrCorrupt = errors.New("record: corrupt batch")
	// ErrUnsupportedMagic means the entry is not RecordBatch v2. Legacy
	// v0/v1 entries (magic 0 or 1) get this error too; they can be skipped
	// by the size PeekEntry reports. It is not a corruption error, so a
	// scanner can tell "old format" from "damaged".
	ErrUnsupportedMagic = errors.New("record: unsupported magic")
	// ErrUnknownCodec means the codec bits of the attributes hold 5, 6 or 7.
	// It is reported wrapped in a *CorruptionError, so it also matches
	// ErrCorrupt.
	ErrUnknownCodec = errors.New("record: unknown compression codec")
	// ErrTooLarge means a batch exceeds a caller's size limit.
	ErrTooLarge = errors.New("record: batch too large")
	// ErrDecompressLimit means a compressed record section expands past the
	// decompression limit (see DefaultMaxDecompressed).
	ErrDecompressLimit = errors.New("record: decompressed size exceeds limit")
	// ErrInvalidProducerBatch means a well-formed batch breaks a rule a
	// broker applies to batches from producers (see ValidateProducerBatch).
	ErrInvalidProducerBatch = errors.New("record: invalid producer batch")
	// ErrOffsetOrder means a Builder was given a record whose offset does
	// not follow the previous record's, or lies below the batch's base
	// offset or more than 2^31-1 past it: offsets rise strictly within a
	// batch, as 32-bit deltas from its base.
	ErrOffsetOrder = errors.New("record: offset out of order for the batch")
	// ErrShortHeader means fewer bytes were given than needed to read an
	// entry's framing (LogOverhead+5 for PeekEntry). At the end of a file it
	// is the normal sign of a partial trailing entry.
	ErrShortHeader = errors.New("record: entry header truncated")
)

// CorruptionError reports damaged stored bytes; it is the one corruption
// type of seglog (the root package aliases it). Pos is the byte position of
// the problem counted from the start of the batch (callers reading from a
// file add the batch's file position, see Offset, and set File); for problems inside a
// compressed record section, Pos is HeaderSize and the reason names the
// position within the decompressed stream. File is empty unless a caller
// fills it in.
type CorruptionError struct {
	File   string
	Pos    int64
	Reason error
}

// Error describes the corruption with its file and position. It says
// "corrupt" once: layers that add context wrap it rather than nest
// another CorruptionError.
func (e *CorruptionError) Error() string {
	// The reasons are mostly this package's sentinels, which start with
	// "record: " too: the message names the package once.
	reason := "<nil>"
	if e.Reason != nil {
		reason = strings.TrimPrefix(e.Reason.Error(), "record: ")
	}
	if e.File != "" {
		return fmt.Sprintf("record: corrupt data in %s at byte %d: %s", e.File, e.Pos, reason)
	}
	return fmt.Sprintf("record: corrupt batch at byte %d: %s", e.Pos, reason)
}

// Unwrap returns the reason, so errors.Is sees sentinels such as
// ErrUnknownCodec through it.
func (e *CorruptionError) Unwrap() error { return e.Reason }

// Is makes every CorruptionError match ErrCorrupt.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorrupt }

// Offset returns a copy of err with its position shifted by base and its
// file set to file, when err is a *CorruptionError; other errors are
// returned unchanged. Scanners use it to turn a batch-relative position
// into a file position.
func Offset(err error, file string, base int64) error {
	var ce *CorruptionError
	if !errors.As(err, &ce) {
		return err
	}
	return &CorruptionError{File: file, Pos: ce.Pos + base, Reason: ce.Reason}
}

func corrupt(pos int, format string, args ...any) error {
	return &CorruptionError{Pos: int64(pos), Reason: fmt.Errorf(format, args...)}
}

func corruptWrap(pos int, reason error) error {
	return &CorruptionError{Pos: int64(pos), Reason: reason}
}
