package seglog

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/sendfile"
	"github.com/seglog/seglog/vfs"
)

// ErrSliceTruncated: the log was truncated below bytes a Slice covers
// after the Slice was made, so sending them could send bytes that are no
// longer (or no longer the same) in the log.
var ErrSliceTruncated = errors.New("seglog: slice truncated while in flight")

// ReadOptions bounds a Read.
type ReadOptions struct {
	// UpperBound, when Bounded is set, is the exclusive offset a read must
	// not reach, such as a replication high watermark or a last stable
	// offset. Without it the bound is the log end.
	UpperBound int64
	Bounded    bool
}

// Slice is a byte range of one segment's .log file holding whole batches,
// as a Kafka fetch returns it: nothing has been read or copied. WriteTo
// sends it with sendfile(2) where the destination allows it. A Slice holds
// a reference on its segment, so retention, compaction or truncation may
// remove the segment meanwhile without pulling the file from under it; the
// descriptor closes when the last Slice using it is closed. Close every
// Slice.
type Slice struct {
	log    *Log
	seg    *segment.Segment
	file   vfs.File
	pos, n int64
	first  int64
	last   int64
	gen    uint64 // the log's truncation generation when the slice was made
	closed atomic.Bool
}

// Len is the slice's size in bytes (0 for an empty read).
func (s *Slice) Len() int64 { return s.n }

// FirstOffset is the base offset of the slice's first batch. It may be
// below the offset asked for: a read starts at the batch holding that
// offset, and consumers skip the records before it, as with Kafka.
func (s *Slice) FirstOffset() int64 { return s.first }

// LastOffset is the last offset of the slice's last batch; it is
// FirstOffset-1 for an empty slice.
func (s *Slice) LastOffset() int64 { return s.last }

// Position is the slice's byte position in its segment's .log file.
func (s *Slice) Position() int64 { return s.pos }

// File is the path of the .log file the slice lies in (it ends in
// .deleted once the segment has been removed).
func (s *Slice) File() string {
	if s.seg == nil {
		return ""
	}
	return s.seg.LogPath()
}

// WriteTo sends the slice's bytes to w: with sendfile(2) for TCP and Unix
// stream sockets, pipes and files, and by copying through a pooled buffer
// otherwise (TLS connections, any other io.Writer). If the log was
// truncated below the slice's end since it was made, WriteTo returns
// ErrSliceTruncated, before sending anything when it can tell then (the
// file is shorter than the slice, as Kafka checks), or after the send when
// the truncation raced with it — the bytes sent then must be discarded.
func (s *Slice) WriteTo(w io.Writer) (int64, error) {
	if s.closed.Load() {
		return 0, fmt.Errorf("seglog: WriteTo on a closed slice")
	}
	if s.n == 0 {
		return 0, nil
	}
	if err := s.checkIntact(); err != nil {
		return 0, err
	}
	n, err := s.log.sender.Copy(w, s.file, s.pos, s.n)
	if cerr := s.checkIntact(); cerr != nil {
		// A truncation raced with the send: whatever went out is suspect,
		// and a short read it caused is reported as what it is.
		return n, cerr
	}
	return n, err
}

// checkIntact reports whether a truncation since the slice was made cut
// into it.
func (s *Slice) checkIntact() error {
	if s.log.truncations.affects(s.gen, s.last) {
		return fmt.Errorf("%w: offsets [%d, %d] of %s", ErrSliceTruncated, s.first, s.last, s.File())
	}
	size, err := s.file.Size()
	if err != nil {
		return err
	}
	if size < s.pos+s.n {
		return fmt.Errorf("%w: %s is %d bytes, the slice ends at %d", ErrSliceTruncated, s.File(), size, s.pos+s.n)
	}
	return nil
}

// ReadAt reads the slice's bytes at off (relative to the slice) into p, for
// callers that want the bytes in memory.
func (s *Slice) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > s.n {
		return 0, fmt.Errorf("seglog: slice offset %d out of [0, %d]", off, s.n)
	}
	if rem := s.n - off; int64(len(p)) > rem {
		p = p[:rem]
		n, err := s.file.ReadAt(p, s.pos+off)
		if err == nil {
			err = io.EOF
		}
		return n, err
	}
	return s.file.ReadAt(p, s.pos+off)
}

// Close releases the slice's reference on its segment. It is safe to call
// more than once.
func (s *Slice) Close() error {
	if s.closed.Swap(true) || s.seg == nil {
		return nil
	}
	s.seg.Release()
	return nil
}

// Read returns the stored batches starting with the one that holds offset,
// as Kafka's fetch does: at most maxBytes, except that the first batch is
// always included whole even when larger (so a consumer always makes
// progress); never past the upper bound (the log end by default); never
// across a segment boundary. The slice always ends at a batch boundary
// (Kafka may end a fetch inside a batch and lets clients drop the partial
// tail; here every slice parses whole). An offset equal to the bound gives
// an empty slice; one below the log start or past its end is
// ErrOffsetOutOfRange. Close the Slice when done.
func (l *Log) Read(offset int64, maxBytes int, opts ReadOptions) (*Slice, error) {
	l.refreshIfBehind(offset)
	start, end := l.StartOffset(), l.EndOffset()
	if offset < start || offset > end {
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	if maxBytes < 0 {
		return nil, fmt.Errorf("seglog: negative maxBytes %d", maxBytes)
	}
	bound := end
	if opts.Bounded && opts.UpperBound < bound {
		bound = opts.UpperBound
	}
	gen := l.truncations.current()
	empty := &Slice{log: l, first: offset, last: offset - 1, gen: gen}
	if offset >= bound {
		return empty, nil
	}
	seg := l.acquireFloor(offset)
	for seg != nil {
		sl, ok, err := l.readSegment(seg, offset, bound, maxBytes, gen)
		if err != nil || ok {
			if err != nil || sl.n == 0 {
				seg.Release()
			}
			if err != nil {
				return nil, asLogCorruption(err)
			}
			if sl.n == 0 {
				return empty, nil
			}
			return sl, nil
		}
		// No batch at or after offset in this segment: the next one
		// starts above it.
		next := l.acquireNext(seg.BaseOffset())
		seg.Release()
		seg = next
	}
	return empty, nil
}

// readSegment builds the slice for offset within seg, or reports false if
// seg holds no batch at or after offset. The caller's reference on seg
// passes to the slice when it is not empty.
func (l *Log) readSegment(seg *segment.Segment, offset, bound int64, maxBytes int, gen uint64) (*Slice, bool, error) {
	first, ok, err := seg.FindPosition(offset)
	if err != nil || !ok {
		return nil, false, err
	}
	if first.BaseOffset >= bound {
		return &Slice{}, true, nil
	}
	// maxPos: where batches at or above the bound begin in this segment. A
	// sealed segment wholly below the bound is read to its end with no
	// lookup (its size and next offset no longer change).
	maxPos, lastBelow := seg.Size(), int64(-1)
	if next := seg.NextOffset(); seg.IsSealed() && bound >= next {
		lastBelow = next - 1
	} else if bp, ok, err := seg.FindPosition(bound); err != nil {
		return nil, false, err
	} else if ok {
		maxPos = bp.Position
		lastBelow = bp.BaseOffset - 1
	} else {
		lastBelow = min(seg.NextOffset(), bound) - 1
	}
	if first.Position+first.Size > maxPos {
		// The bound lies inside the first batch (or before it): a batch
		// is never split, so nothing is readable yet.
		return &Slice{}, true, nil
	}
	endPos, last := maxPos, lastBelow
	limit := max(int64(maxBytes), first.Size)
	switch {
	case maxPos-first.Position <= limit:
		// Everything up to the bound fits.
	case limit < first.Size+record.HeaderSize:
		// No second batch can fit: the first one alone.
		endPos, last = first.Position+first.Size, first.LastOffset
	default:
		bp, ok, err := seg.LastBatchWithin(first.Position, first.Position+limit)
		if err != nil {
			return nil, false, err
		}
		endPos, last = first.Position+first.Size, first.LastOffset
		if ok && bp.Position+bp.Size <= maxPos {
			endPos, last = bp.Position+bp.Size, bp.LastOffset
		}
	}
	return &Slice{
		log:   l,
		seg:   seg,
		file:  seg.File(),
		pos:   first.Position,
		n:     endPos - first.Position,
		first: first.BaseOffset,
		last:  last,
		gen:   gen,
	}, true, nil
}

// truncationLog remembers recent truncations, so a Slice made before one
// can tell whether it cut into the slice's offsets.
type truncationLog struct {
	mu     sync.Mutex
	gen    atomic.Uint64
	events []truncation // the most recent, oldest first
}

type truncation struct {
	gen    uint64
	offset int64
}

const keptTruncations = 64

func (t *truncationLog) current() uint64 { return t.gen.Load() }

// record notes a truncation at offset. Called before the files shrink.
func (t *truncationLog) record(offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.gen.Add(1)
	t.events = append(t.events, truncation{gen: g, offset: offset})
	if len(t.events) > keptTruncations {
		t.events = append(t.events[:0], t.events[len(t.events)-keptTruncations:]...)
	}
}

// affects reports whether a truncation after generation gen removed any
// offset at or below last. When the history no longer reaches back to gen
// it answers yes, to be safe.
func (t *truncationLog) affects(gen uint64, last int64) bool {
	if t.gen.Load() == gen {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.events) == 0 || t.events[0].gen > gen+1 {
		return true
	}
	for _, e := range t.events {
		if e.gen > gen && e.offset <= last {
			return true
		}
	}
	return false
}

// SendStats reports how many bytes this log's Slices moved with sendfile
// and how many by copying.
func (l *Log) SendStats() sendfile.Stats { return l.sender.Stats() }
