package sendfile

import (
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendfileFn is the system call. It is a variable so tests can inject the
// results a kernel will not produce on demand (EINTR, ENOSYS, EINVAL after
// progress).
var sendfileFn = unix.Sendfile

func (s *Sender) sendFile(dst io.Writer, src Source, off, n int64) (written int64, handled bool, err error) {
	rc, ok := rawConnOf(dst)
	if !ok {
		return 0, false, nil
	}
	sfd, err := src.Fd()
	if err != nil {
		return 0, false, nil
	}
	x := &transfer{s: s, sfd: int(sfd), off: off, n: n, chunk: int64(s.chunkSize())}
	// RawConn.Write holds the destination's write lock across every call
	// of the callback, so the whole range goes out as one unit even if
	// other goroutines write to the same connection. Returning false asks
	// the poller to park us until the descriptor is writable (or its write
	// deadline passes), which is how EAGAIN is handled without spinning.
	werr := rc.Write(x.run)
	if x.declined {
		return 0, false, nil
	}
	stop := x.stop
	if stop == nil {
		// The write lock, the deadline or the wait for writability
		// failed: net.ErrClosed, os.ErrDeadlineExceeded, ...
		stop = werr
	}
	if stop != nil {
		return x.written, true, &Error{Op: "sendfile", Off: off + x.written, Err: stop}
	}
	return x.written, true, nil
}

// transfer is the state of one SendFile across the callbacks RawConn.Write
// makes. One allocation holds it all, including the offset the kernel
// updates, which would otherwise escape to the heap on every call.
type transfer struct {
	s        *Sender
	sfd      int
	off, n   int64
	chunk    int64
	pos      int64 // source offset handed to the kernel
	written  int64 // bytes of [off, off+n) sent so far
	declined bool  // the kernel refused before any byte: caller copies
	stop     error // why run gave up; nil when done or waiting
}

// run is the RawConn.Write callback: it sends until the range is done (true),
// the descriptor would block (false: wait and call again), or an error.
func (x *transfer) run(dfd uintptr) bool {
	for x.written < x.n {
		// The kernel reads at pos and advances pos, never the
		// descriptor's shared position; recomputing pos from written
		// keeps us right whatever a call did to it.
		x.pos = x.off + x.written
		m, err := sendfileFn(int(dfd), x.sfd, &x.pos, int(min(x.chunk, x.n-x.written)))
		x.s.sendfileCalls.Add(1)
		if m > 0 {
			x.written += int64(m)
			x.s.sendfileBytes.Add(int64(m))
		}
		switch err {
		case nil:
			if m == 0 {
				// Zero bytes with no error is end of file: the
				// source is shorter than the range (or was
				// truncated while we sent it).
				x.stop = io.ErrUnexpectedEOF
				return true
			}
		case unix.EAGAIN:
			// Socket or pipe buffer full. Linux returns EAGAIN only
			// with m == 0; bytes are counted above either way.
			return false
		case unix.EINTR:
			// A signal interrupted the call before it moved anything;
			// the same call is safe to repeat.
		case unix.ENOSYS, unix.EINVAL, unix.EOPNOTSUPP:
			// ENOSYS: no sendfile in this kernel (or seccomp filters
			// it). EINVAL: this pair of descriptors cannot be spliced,
			// e.g. an O_APPEND destination or a source that is not a
			// file. EOPNOTSUPP (equal to ENOTSUP on Linux): the
			// filesystem refuses. Before any byte is sent the caller
			// can still copy the range itself; after, the stream holds
			// a prefix of it and only an error is honest.
			if x.written == 0 {
				x.declined = true
			} else {
				x.stop = err
			}
			return true
		default:
			// EPIPE, ECONNRESET, EIO, EBADF...: final.
			x.stop = err
			return true
		}
	}
	return true
}

// rawConnOf returns the descriptor behind dst if sendfile may write to it
// directly. Only concrete types whose Write is a plain write(2) of the bytes
// qualify: a type that merely exposes a descriptor (a TLS connection's
// underlying conn, a wrapper that counts or frames) would be bypassed.
func rawConnOf(dst io.Writer) (syscall.RawConn, bool) {
	var (
		rc  syscall.RawConn
		err error
	)
	switch d := dst.(type) {
	case *net.TCPConn:
		rc, err = d.SyscallConn()
		return rc, err == nil
	case *net.UnixConn:
		// A datagram or seqpacket socket would cut the range into
		// messages at arbitrary chunk boundaries.
		if rc, err = d.SyscallConn(); err != nil {
			return nil, false
		}
		return rc, controlBool(rc, isStreamSocket)
	case *os.File:
		if rc, err = d.SyscallConn(); err != nil {
			return nil, false
		}
		return rc, controlBool(rc, isSendfileFile)
	}
	return nil, false
}

// controlBool runs test on the descriptor behind rc; false if it cannot.
func controlBool(rc syscall.RawConn, test func(fd int) bool) bool {
	var ok bool
	if err := rc.Control(func(fd uintptr) { ok = test(int(fd)) }); err != nil {
		return false
	}
	return ok
}

func isStreamSocket(fd int) bool {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	return err == nil && typ == unix.SOCK_STREAM
}

// isSendfileFile accepts the *os.File destinations whose write semantics
// sendfile reproduces: regular files (written at, and advancing, the file's
// position, as Write would), pipes, and stream sockets. Character devices
// and the rest go through Write.
func isSendfileFile(fd int) bool {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFIFO:
		return true
	case unix.S_IFSOCK:
		return isStreamSocket(fd)
	}
	return false
}
