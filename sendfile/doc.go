// Package sendfile moves a byte range of a file to a writer without passing
// the bytes through the program, using sendfile(2), and copies them the
// ordinary way when the kernel or the writer cannot take that path.
//
// A range is always named by an explicit source offset. The kernel reads from
// that offset and never from, or into, the file's shared position, so any
// number of goroutines may send different ranges of one open descriptor at
// the same time.
//
// # The handled contract
//
// SendFile follows the standard library's internal/poll.SendFile contract:
// when it returns handled == false it has not written anything to the
// destination nor changed any state, and the caller must copy the range
// itself. Copy does exactly that: it tries SendFile and falls back to
// io.ReaderAt plus a pooled buffer. Most callers want Copy.
//
// sendfile is used only when all of these hold:
//
//   - the platform is Linux (elsewhere SendFile always declines);
//   - Source.Fd returns a descriptor (an in-memory file declines);
//   - the destination is a *net.TCPConn, a stream *net.UnixConn, or an
//     *os.File that is a regular file, a pipe or a stream socket. Any other
//     io.Writer declines, including a *tls.Conn and any wrapper around a
//     connection: sendfile would bypass the wrapper's Write and the bytes it
//     would have encrypted, framed or counted;
//   - the kernel accepts the first call: ENOSYS, EINVAL, EOPNOTSUPP or
//     ENOTSUP before any byte was sent declines (for example a destination
//     file opened with O_APPEND, or a source descriptor that is not a file).
//
// Writes to sockets and pipes cooperate with Go's network poller through
// syscall.RawConn: when the socket buffer is full the goroutine parks until
// the descriptor is writable again, so deadlines set on the connection apply
// and no thread spins. The destination's write lock is held for the whole
// range, so concurrent writers to one connection never interleave inside it.
//
// # Lifetime of the source
//
// The caller must keep the Source open until SendFile or Copy returns: the
// package does not own the descriptor and does not dup it. Closing the file
// concurrently may make the descriptor number refer to another file.
//
// The package imports nothing of seglog; Source matches the Fd and ReadAt
// methods of seglog's vfs.File (package vfs, the public filesystem seam).
package sendfile
