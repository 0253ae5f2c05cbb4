package segment

import (
	"errors"
	"fmt"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Sentinel errors. Match them with errors.Is.
var (
	// ErrTornTail means the .log ends inside an entry: the normal trace of
	// a write cut short by a crash. Recover reports it (as a
	// *PositionError) and truncates the partial entry. It is not
	// record.ErrCorrupt, so callers can tell a torn tail from damage.
	ErrTornTail = errors.New("segment: partial entry at end of file")
	// ErrOffsetOrder means a batch's offsets do not follow the previous
	// batch's (or fall outside the segment's 32-bit relative range). Scans
	// report it wrapped in a *record.CorruptionError.
	ErrOffsetOrder = errors.New("segment: batch offsets out of order")
	// ErrBadAppend means Append was given a batch that cannot go at the end
	// of this segment: too short, a length field that disagrees with its
	// size, an offset not above the segment's next offset, or an offset or
	// position outside the 32-bit relative range. Nothing was written.
	ErrBadAppend = errors.New("segment: batch cannot be appended")
	// ErrSealed means a mutation was attempted on a sealed segment.
	ErrSealed = errors.New("segment: sealed")
	// ErrClosed means the segment was closed or removed. It is
	// vfs.ErrClosed, the one "closed" error of every layer.
	ErrClosed = vfs.ErrClosed
	// ErrExists means Create found files of the segment already present.
	ErrExists = errors.New("segment: files already exist")
	// ErrPreallocate means extending the .log to Options.Preallocate failed
	// (a full disk, usually) before an append or when a segment was
	// created. Nothing was written: the segment is as it was, and the
	// append can be retried once there is space.
	ErrPreallocate = errors.New("segment: preallocation failed")
)

// PositionError reports a problem at a byte position of a segment file that
// is not a corrupt batch (see ErrTornTail). Damaged batches are reported as
// *record.CorruptionError with File and Pos set to the file and the file
// position.
type PositionError struct {
	File string
	Pos  int64
	Err  error
}

// Error describes the problem with its file and position.
func (e *PositionError) Error() string {
	return fmt.Sprintf("segment: %s at byte %d: %v", e.File, e.Pos, e.Err)
}

// Unwrap returns the sentinel.
func (e *PositionError) Unwrap() error { return e.Err }

// corruptAt reports damage in the entry that starts at file position pos.
// The error's position is the entry's start, the same position fsck and
// dump report for it, so a user can match what consume and fsck say; when
// reason is a record error pointing inside the entry (the CRC field, a
// length), the message adds that field's file position.
func corruptAt(file string, pos int64, reason error) error {
	var ce *record.CorruptionError
	if errors.As(reason, &ce) {
		if ce.Pos == 0 {
			return &record.CorruptionError{File: file, Pos: pos, Reason: ce.Reason}
		}
		return &record.CorruptionError{File: file, Pos: pos, Reason: fmt.Errorf("%w (at byte %d)", ce.Reason, pos+ce.Pos)}
	}
	return &record.CorruptionError{File: file, Pos: pos, Reason: reason}
}

// asReadDamage turns a torn tail met inside a segment's published size
// into damage: recovery cuts partial entries at the end of a file, but a
// reader that meets one below the size a segment was trusted or recovered
// with has found a file that shrank or was damaged, which is corruption
// (errors.Is(err, record.ErrCorrupt)). Other errors pass unchanged.
func asReadDamage(err error) error {
	var pe *PositionError
	if errors.As(err, &pe) && errors.Is(pe.Err, ErrTornTail) {
		return &record.CorruptionError{File: pe.File, Pos: pe.Pos, Reason: fmt.Errorf("%v, within the segment's size", pe.Err)}
	}
	return err
}
