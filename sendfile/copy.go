package sendfile

import (
	"errors"
	"io"
	"sync"
)

// copyBufSize is the fallback's buffer: large enough that a socket write
// carries a useful amount, small enough to keep in a pool per concurrent
// copy.
const copyBufSize = 128 << 10

var copyBufPool = sync.Pool{New: func() any {
	b := make([]byte, copyBufSize)
	return &b
}}

// copyRange is the fallback: ReadAt into a pooled buffer, Write to dst. It
// never reads past off+n, so a range ending inside the file never pulls in
// the bytes after it.
func (s *Sender) copyRange(dst io.Writer, src Source, off, n int64) (written int64, err error) {
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	for written < n {
		want := int(min(int64(len(buf)), n-written))
		nr, rerr := src.ReadAt(buf[:want], off+written)
		if nr > 0 {
			nw, werr := dst.Write(buf[:nr])
			if nw < 0 || nw > nr {
				// A writer breaking io.Writer's contract: count
				// nothing rather than trust the number.
				nw, werr = 0, errors.New("invalid write result")
			}
			written += int64(nw)
			s.copyBytes.Add(int64(nw))
			if werr == nil && nw < nr {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return written, &Error{Op: "copy", Off: off + written, Err: werr}
			}
		}
		if rerr != nil && !(rerr == io.EOF && nr == want) {
			// ReadAt may report io.EOF alongside a full buffer that
			// ends exactly at the end of the file; only a short read
			// is a short source.
			if rerr == io.EOF {
				rerr = io.ErrUnexpectedEOF
			}
			return written, &Error{Op: "copy", Off: off + written, Err: rerr}
		}
		if nr == 0 && rerr == nil {
			// ReadAt must return an error with a short read; one that
			// does not would loop here forever.
			return written, &Error{Op: "copy", Off: off + written, Err: io.ErrNoProgress}
		}
	}
	return written, nil
}
