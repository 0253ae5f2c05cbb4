package segment

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// Preallocated .log files (Options.Preallocate).
//
// An fdatasync after an append that grew the file must also commit the new
// size (a journal transaction on ext4); after an append into blocks that
// fallocate mode 0 already allocated, and that the file's size already
// covers, it only writes the data pages. That is why Kafka
// (log.preallocate), etcd's WAL and raft-wal create their files at full
// size. The price is a file whose size no longer says where the data ends:
//
//   - the logical end is the segment's published size, kept in memory;
//   - sealing and closing trim the file to it, so a sealed segment has
//     exactly Kafka's layout (and Close syncs the trim before the
//     clean-shutdown marker can vouch for the file);
//   - after a crash the file may keep its zero tail, and recovery treats
//     bytes that are zero from a batch boundary to the end of the file as
//     the end of the file (Kafka stops at the first batch whose length
//     field is zero). The rule needs the whole rest of the file to be
//     zero: a zero header followed by non-zero bytes is damage, as before,
//     so zeros cannot hide batches that were written after them.

// ensurePreallocated preallocates the .log before an append if the option
// asks for it and the file is not preallocated yet (a segment opened
// active, unsealed, or cut by a truncation or a failed append). Writer
// only.
func (s *Segment) ensurePreallocated() error {
	if s.opts.Preallocate <= 0 || s.preallocated {
		return nil
	}
	return s.preallocate()
}

// preallocate extends the .log to Options.Preallocate bytes with fallocate
// mode 0. A file longer than the logical end (an untrimmed file that an
// open trusted) is first cut to it, so its appends land at the logical end
// and the range past it reads as zeros. A failure (a full disk) is
// returned: the caller reports it and has written nothing.
func (s *Segment) preallocate() error {
	size := s.size.Load()
	fileSize, err := s.log.Size()
	if err != nil {
		return err
	}
	if fileSize > size {
		if err := s.lmap.Unmap(); err != nil {
			return err
		}
		if err := s.log.Truncate(size); err != nil {
			return fmt.Errorf("segment: cutting %s to its logical end %d: %w", s.LogPath(), size, err)
		}
	}
	if want := s.opts.Preallocate; want > size {
		if err := s.log.Preallocate(size, want-size); err != nil {
			// Whatever part of the range a failed fallocate allocated is
			// past the logical end and reads as zeros; give it back.
			if terr := s.log.Truncate(size); terr != nil {
				s.opts.Logger.Warn("segment: cutting a failed preallocation", "path", s.LogPath(), "err", terr)
			}
			return fmt.Errorf("%w: %s to %d bytes: %w", ErrPreallocate, s.LogPath(), want, err)
		}
	}
	s.reserved = max(s.opts.Preallocate, size) // the preallocated range needs no reservation
	s.preallocated = true
	return nil
}

// zeroChunk is how much of a file allZero reads at a time.
const zeroChunk = 256 << 10

var zeroBufs = sync.Pool{New: func() any { b := make([]byte, zeroChunk); return &b }}

// allZero reports whether every byte of f in [from, end) is zero.
func allZero(f io.ReaderAt, from, end int64) (bool, error) {
	bp := zeroBufs.Get().(*[]byte)
	defer zeroBufs.Put(bp)
	buf := *bp
	for from < end {
		n := min(int64(len(buf)), end-from)
		got, err := f.ReadAt(buf[:n], from)
		if int64(got) < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return false, err
		}
		if !isZero(buf[:n]) {
			return false, nil
		}
		from += n
	}
	return true, nil
}

// zeros is what isZero compares with: bytes.Equal runs vectorized.
var zeros [zeroChunk]byte

// isZero reports whether b holds only zero bytes.
func isZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeros))
		if !bytes.Equal(b[:n], zeros[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}
