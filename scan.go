package seglog

import (
	"errors"
	"fmt"
	"io"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// batchScanner walks the entries of a .log file from the start, reading
// headers and, when asked, whole batches into a reused buffer. It never
// allocates more than maxBatch bytes, whatever a length field says.
type batchScanner struct {
	f        vfs.File
	path     string
	size     int64
	maxBatch int
	pos      int64
	buf      []byte
}

func newBatchScanner(f vfs.File, path string, maxBatch int) (*batchScanner, error) {
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	return &batchScanner{f: f, path: path, size: size, maxBatch: maxBatch}, nil
}

// errPartial marks a trailing entry cut short by the end of the file: the
// normal torn tail of an interrupted append.
var errPartial = errors.New("partial batch at the end of the file")

// next reads the entry at the current position. With full set it reads and
// validates the whole batch (CRC); otherwise only its header. It returns
// io.EOF at the exact end of the file, and a *CorruptionError naming the
// file and position for anything else that is not a whole valid entry.
func (s *batchScanner) next(full bool) (record.Batch, error) {
	if s.pos == s.size {
		return nil, io.EOF
	}
	corrupt := func(reason error) error {
		return &CorruptionError{Path: s.path, Pos: s.pos, Reason: reason}
	}
	hdrLen := record.HeaderSize
	if rem := s.size - s.pos; rem < int64(hdrLen) {
		hdrLen = int(rem)
	}
	if cap(s.buf) < record.HeaderSize {
		s.buf = make([]byte, record.HeaderSize, 64<<10)
	}
	hdr := s.buf[:hdrLen]
	if _, err := s.f.ReadAt(hdr, s.pos); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	size, magic, err := record.PeekEntry(hdr)
	switch {
	case errors.Is(err, record.ErrShortHeader):
		return nil, corrupt(errPartial)
	case err != nil:
		return nil, corrupt(err)
	case int64(size) > s.size-s.pos:
		return nil, corrupt(errPartial)
	case size > s.maxBatch:
		return nil, corrupt(fmt.Errorf("%w: entry of %d bytes, limit %d", record.ErrTooLarge, size, s.maxBatch))
	case magic != record.CurrentMagic:
		// A legacy entry: skipped by size, its offset field being its last
		// offset. Recovery keeps it as Kafka does.
		s.pos += int64(size)
		return record.Batch(hdr[:record.PeekSize]), nil
	case size < record.HeaderSize:
		return nil, corrupt(fmt.Errorf("%w: batch of %d bytes is shorter than its header", record.ErrCorrupt, size))
	}
	if !full {
		s.pos += int64(size)
		return record.Batch(hdr), nil
	}
	if cap(s.buf) < size {
		s.buf = make([]byte, size)
	}
	b := s.buf[:size]
	if _, err := s.f.ReadAt(b, s.pos); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if err := record.Batch(b).Validate(); err != nil {
		return nil, &CorruptionError{Path: s.path, Pos: s.pos, Reason: err}
	}
	s.pos += int64(size)
	return record.Batch(b), nil
}

// entryLastOffset is the last offset of a scanned entry: the header field
// for v2, the offset field (the last inner offset) for legacy entries.
func entryLastOffset(b record.Batch) int64 {
	if b.Magic() != record.CurrentMagic {
		return b.BaseOffset()
	}
	return b.LastOffset()
}

// scanNextOffset returns the offset after the last whole entry of a .log
// file (by headers only), and the position where the whole entries end.
func scanNextOffset(fs vfs.FS, path string, base int64, maxBatch int) (next, end int64, err error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	s, err := newBatchScanner(f, path, maxBatch)
	if err != nil {
		return 0, 0, err
	}
	next = base
	for {
		b, err := s.next(false)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, ErrCorruptLog) {
				return next, s.pos, nil
			}
			return 0, 0, err
		}
		next = entryLastOffset(b) + 1
	}
}
