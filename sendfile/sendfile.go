package sendfile

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
)

// DefaultChunkSize is the largest number of bytes one sendfile(2) call is
// asked to move when Sender.ChunkSize is zero. Bounding each call bounds the
// time a thread spends in one system call when the destination blocks (a
// regular file); on sockets a call returns when the buffer fills anyway.
// Measured on loopback TCP, larger chunks save a little CPU and none was
// clearly faster; see docs/benchmarks.md.
const DefaultChunkSize = 1 << 20

// ErrInvalidRange is returned, wrapped, for a negative offset or length, or
// a range whose end overflows int64. Nothing is written.
var ErrInvalidRange = errors.New("sendfile: invalid range")

// Source is a file a range is sent from. ReadAt serves the fallback copy; Fd
// returns the operating-system descriptor for sendfile(2), or an error if the
// file has none (an in-memory file), in which case the range is copied.
//
// The descriptor must stay open until the call using it returns.
type Source interface {
	io.ReaderAt
	Fd() (uintptr, error)
}

// Error reports a transfer that stopped early: which step failed, at which
// source offset, and why. Err is the cause: a syscall.Errno such as EPIPE or
// ECONNRESET, io.ErrUnexpectedEOF for a source shorter than the range, or the
// writer's error (which wraps os.ErrDeadlineExceeded or net.ErrClosed where
// those apply). Use errors.Is on the *Error itself.
type Error struct {
	Op  string // "sendfile" or "copy"
	Off int64  // source offset of the first byte not written
	Err error
}

// Error describes the failure with the path that failed and where.
func (e *Error) Error() string {
	return fmt.Sprintf("sendfile: %s at source offset %d: %v", e.Op, e.Off, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Sender moves file ranges and counts which path moved the bytes. The zero
// value is ready to use; a Sender is safe for concurrent use and must not be
// copied after first use. A program that reports its own metrics keeps one
// Sender per component; the package-level functions share one.
type Sender struct {
	// ChunkSize bounds the bytes asked of one sendfile(2) call. Zero or
	// less means DefaultChunkSize.
	ChunkSize int

	sendfileBytes atomic.Int64
	sendfileCalls atomic.Int64
	declined      atomic.Int64
	copyBytes     atomic.Int64
}

var defaultSender Sender

// SendFile sends src[off, off+n) to dst with sendfile(2), using the shared
// default Sender. See Sender.SendFile.
func SendFile(dst io.Writer, src Source, off, n int64) (written int64, handled bool, err error) {
	return defaultSender.SendFile(dst, src, off, n)
}

// Copy writes src[off, off+n) to dst, with sendfile(2) where possible and by
// reading and writing otherwise, using the shared default Sender. See
// Sender.Copy.
func Copy(dst io.Writer, src Source, off, n int64) (written int64, err error) {
	return defaultSender.Copy(dst, src, off, n)
}

// DefaultStats returns the counters of the Sender behind the package-level
// SendFile and Copy.
func DefaultStats() Stats { return defaultSender.Stats() }

// SendFile sends src[off, off+n) to dst with sendfile(2).
//
// If handled is false, sendfile could not serve this destination or source;
// nothing was written, written is 0, err is nil, and the caller should copy
// the range another way (Copy does). If handled is true, the result is
// final: written bytes reached dst, and err, if not nil, is an *Error saying
// why the transfer stopped before n bytes. A source shorter than off+n yields
// an error wrapping io.ErrUnexpectedEOF after the bytes it had were sent.
//
// An invalid range returns an error wrapping ErrInvalidRange with handled
// true. n == 0 writes nothing and reports handled.
func (s *Sender) SendFile(dst io.Writer, src Source, off, n int64) (written int64, handled bool, err error) {
	if err := checkRange(off, n); err != nil {
		return 0, true, err
	}
	if n == 0 {
		return 0, true, nil
	}
	written, handled, err = s.sendFile(dst, src, off, n)
	// The descriptor number is only valid while src is reachable; an
	// *os.File-backed source would otherwise be closed by its finalizer
	// in the middle of the call if the caller dropped its last reference.
	runtime.KeepAlive(src)
	if !handled {
		s.declined.Add(1)
	}
	return written, handled, err
}

// Copy writes src[off, off+n) to dst. It tries SendFile first; when that
// declines, it reads the range with src.ReadAt into a pooled buffer and
// writes it to dst. It returns the number of bytes written and an error if
// fewer than n were: an *Error wrapping the cause (io.ErrUnexpectedEOF for a
// short source), or an error wrapping ErrInvalidRange.
func (s *Sender) Copy(dst io.Writer, src Source, off, n int64) (written int64, err error) {
	written, handled, err := s.SendFile(dst, src, off, n)
	if handled {
		return written, err
	}
	return s.copyRange(dst, src, off, n)
}

func (s *Sender) chunkSize() int {
	if s.ChunkSize > 0 {
		return s.ChunkSize
	}
	return DefaultChunkSize
}

func checkRange(off, n int64) error {
	if off < 0 || n < 0 || off > (1<<63-1)-n {
		return fmt.Errorf("%w: offset %d, length %d", ErrInvalidRange, off, n)
	}
	return nil
}
