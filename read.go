package seglog

import (
	"errors"
	"fmt"
	"io"
	"math"
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
// It matches ErrTruncated.
var ErrSliceTruncated = fmt.Errorf("%w: slice truncated while in flight", ErrTruncated)

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
	file   vfs.File // pinned open (segment.PinFile) until Close
	unpin  func()
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
// into it, waiting for one under way to finish.
func (s *Slice) checkIntact() error {
	if s.log.truncations.overtook(s.gen, s.last) {
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
// callers that want the bytes in memory. If a truncation has cut into the
// slice since it was made, ReadAt returns ErrSliceTruncated (the bytes read
// may then belong to newer batches and must be discarded).
func (s *Slice) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > s.n {
		return 0, fmt.Errorf("seglog: slice offset %d out of [0, %d]", off, s.n)
	}
	if s.n == 0 { // an empty read has no file
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	var short bool
	if rem := s.n - off; int64(len(p)) > rem {
		p, short = p[:rem], true
	}
	n, err := s.file.ReadAt(p, s.pos+off)
	// Checked after the read: a truncation that returned before it is in
	// the log by now, and one under way is waited for.
	if s.log.truncations.overtook(s.gen, s.last) {
		return n, fmt.Errorf("%w: offsets [%d, %d] of %s", ErrSliceTruncated, s.first, s.last, s.File())
	}
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

// Close releases the slice's reference on its segment. It is safe to call
// more than once.
func (s *Slice) Close() error {
	if s.closed.Swap(true) || s.seg == nil {
		return nil
	}
	if s.unpin != nil {
		s.unpin()
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
//
// A Read that a TruncateTo overtakes starts over against the truncated log
// (so it may then find the offset out of range), and gives up with
// ErrSliceTruncated only if truncations keep cutting under it; it never
// reports bytes a truncation was cutting as damage, and never returns a
// slice that a truncation which returned before Read did cut into. A Slice
// is a snapshot, though: a truncation after Read returned makes its WriteTo
// and ReadAt fail with ErrSliceTruncated instead of sending other bytes.
// Retention (DeleteBefore) does not disturb a Slice: its segment stays
// readable through it.
//
// Read never jumps over missing data: an offset that lies in a gap between
// segments of a log never compacted, or that its segment's offset index
// names past the end of the .log, is a *MissingDataError (ErrMissingData)
// naming the gap; a slice before it ends at the last batch the .log holds,
// so a reader reading on meets the error there. The gaps compaction leaves
// are read past, to the next batch, as Kafka does (MissingDataError says
// how the two are told apart).
func (l *Log) Read(offset int64, maxBytes int, opts ReadOptions) (*Slice, error) {
	if maxBytes < 0 {
		return nil, fmt.Errorf("seglog: negative maxBytes %d", maxBytes)
	}
	l.refreshIfBehind(offset)
	for attempt := 0; ; attempt++ {
		gen := l.truncations.settled()
		sl, err := l.read(offset, maxBytes, opts, gen)
		if !l.truncations.begunSince(gen) || errors.Is(err, ErrOffsetOutOfRange) {
			// Untouched, or refused by the range check before any file
			// was read: the answer stands.
			return sl, err
		}
		// A truncation began while the slice was being built. Its
		// positions and offsets may straddle the cut (the segment's size
		// read before it, the next offset after), so the slice's last
		// offset cannot be trusted to say what its bytes hold: start over
		// against the truncated log.
		if sl != nil {
			sl.Close()
		}
		if attempt == maxReadAttempts-1 {
			if err != nil {
				return nil, fmt.Errorf("%w: reading offset %d (last attempt: %v)", ErrSliceTruncated, offset, err)
			}
			return nil, fmt.Errorf("%w: reading offset %d", ErrSliceTruncated, offset)
		}
	}
}

// maxReadAttempts bounds how often a read starts over because truncations
// cut under it.
const maxReadAttempts = 4

// read is one attempt of Read, at truncation generation gen.
func (l *Log) read(offset int64, maxBytes int, opts ReadOptions, gen uint64) (*Slice, error) {
	start, end := l.StartOffset(), l.EndOffset()
	if offset < start || offset > end {
		return nil, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, start, end)
	}
	bound := end
	if opts.Bounded && opts.UpperBound < bound {
		bound = opts.UpperBound
	}
	empty := &Slice{log: l, first: offset, last: offset - 1, gen: gen}
	if offset >= bound {
		return empty, nil
	}
	seg := l.acquireFloor(offset)
	for seg != nil {
		sl, ok, err := l.readSegment(seg, offset, bound, maxBytes, gen)
		if err != nil || ok {
			if err != nil || sl.n == 0 {
				if sl != nil && sl.unpin != nil {
					sl.unpin()
				}
				seg.Release()
			}
			if err != nil {
				return nil, err
			}
			if sl.n == 0 {
				return empty, nil
			}
			return sl, nil
		}
		// No batch at or after offset in this segment: the next one
		// starts above it. The offsets in between are either a
		// compaction's gap, read past as Kafka does, or missing data.
		next := l.acquireAfter(seg)
		if next != nil {
			if err := l.checkGap(seg, offset, next.BaseOffset()); err != nil {
				next.Release()
				seg.Release()
				return nil, err
			}
		}
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
	if err != nil {
		return nil, false, l.lookupMissing(seg, offset, err)
	}
	if !ok {
		return nil, false, nil
	}
	if first.BaseOffset >= bound {
		return &Slice{}, true, nil
	}
	// maxPos: where batches at or above the bound begin in this segment. A
	// sealed segment wholly below the bound is read to its end with no
	// lookup (its size and next offset no longer change).
	maxPos, lastBelow := seg.Size(), int64(-1)
	// A sealed segment's next offset is trusted only when it was computed
	// from the .log: with an index naming offsets its .log lost it is the
	// index's word, and a slice ending there would tell the reader to go
	// on past the missing offsets.
	if next, nerr := seg.NextOffsetErr(); seg.IsSealed() && nerr == nil && bound >= next {
		lastBelow = next - 1
	} else if bp, ok, err := seg.FindPosition(bound); err != nil {
		// An index naming offsets its .log lost fails a lookup of the
		// bound among them; whatever the .log holds lies below it.
		end, serr := segmentEnd(seg)
		if !seg.IsSealed() || serr != nil || end > bound {
			return nil, false, err
		}
		lastBelow = end - 1
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
	// Pinned: sendfile uses the descriptor's number, which must not be
	// closed by the FileCache (and reused) while the slice can send.
	file, unpin, err := seg.PinFile()
	if err != nil {
		return nil, false, err
	}
	return &Slice{
		log:   l,
		seg:   seg,
		file:  file,
		unpin: unpin,
		pos:   first.Position,
		n:     endPos - first.Position,
		first: first.BaseOffset,
		last:  last,
		gen:   gen,
	}, true, nil
}

// truncationLog remembers recent truncations, so a reader that began
// before one can tell whether it removed what the reader covers, and
// whether an error the reader met may come from a file cut under it
// rather than from damage.
type truncationLog struct {
	// cutting is held by a truncation while it changes files; a reader
	// that met an error during one waits on it before judging.
	cutting sync.RWMutex
	started atomic.Uint64 // truncations begun; gen once they are done
	gen     atomic.Uint64 // truncations done
	mu      sync.Mutex
	events  []truncation // the most recent, oldest first
}

type truncation struct {
	gen    uint64
	offset int64 // the lowest offset it removed
}

const keptTruncations = 64

// current returns the generation a reader starts from: the number of
// truncations done.
func (t *truncationLog) current() uint64 { return t.gen.Load() }

// begin marks a truncation under way. Called with the Log's mu.
func (t *truncationLog) begin() {
	t.cutting.Lock()
	t.started.Add(1)
}

// finish records that the truncation begun last removed every offset at
// or after offset.
func (t *truncationLog) finish(offset int64) {
	t.mu.Lock()
	g := t.gen.Add(1)
	t.events = append(t.events, truncation{gen: g, offset: offset})
	if len(t.events) > keptTruncations {
		t.events = append(t.events[:0], t.events[len(t.events)-keptTruncations:]...)
	}
	t.mu.Unlock()
	t.cutting.Unlock()
}

// affects reports whether a truncation done after generation gen removed
// any offset at or below last. When the history no longer reaches back to
// gen it answers yes, to be safe.
func (t *truncationLog) affects(gen uint64, last int64) bool {
	return t.lowestSince(gen) <= last
}

// lowestSince returns the lowest offset removed by a truncation done after
// generation gen (math.MaxInt64 if none; math.MinInt64 if the history no
// longer reaches back to gen).
func (t *truncationLog) lowestSince(gen uint64) int64 {
	if t.gen.Load() == gen {
		return math.MaxInt64
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.events) == 0 || t.events[0].gen > gen+1 {
		return math.MinInt64
	}
	low := int64(math.MaxInt64)
	for _, e := range t.events {
		if e.gen > gen {
			low = min(low, e.offset)
		}
	}
	return low
}

// settled returns the generation a reader starts from, waiting for a
// truncation under way to finish first: a reader that began during one
// would otherwise find it begun since and start over until it ends.
func (t *truncationLog) settled() uint64 {
	if g := t.gen.Load(); t.started.Load() == g {
		return g
	}
	t.cutting.RLock()
	defer t.cutting.RUnlock()
	return t.gen.Load()
}

// begunSince reports whether a truncation began after generation gen was
// read (or was under way then).
func (t *truncationLog) begunSince(gen uint64) bool { return t.started.Load() != gen }

// settle waits for a truncation under way to finish, and returns the lowest
// offset removed since generation gen (as lowestSince) and the generation
// now.
func (t *truncationLog) settle(gen uint64) (int64, uint64) {
	t.cutting.RLock()
	now := t.gen.Load()
	t.cutting.RUnlock()
	return t.lowestSince(gen), now
}

// overtook reports whether a truncation that began after generation gen
// removed an offset at or below last, waiting for one under way to finish.
func (t *truncationLog) overtook(gen uint64, last int64) bool {
	if !t.begunSince(gen) {
		return false
	}
	low, _ := t.settle(gen)
	return low <= last
}

// SendStats reports how many bytes this log's Slices moved with sendfile
// and how many by copying.
func (l *Log) SendStats() sendfile.Stats { return l.sender.Stats() }
