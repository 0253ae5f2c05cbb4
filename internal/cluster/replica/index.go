package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// anchor says that the batch at offset is the entry at index, and that
// the entry before it has term.
type anchor struct {
	index  uint64
	offset int64
	term   uint64
}

// maxIndexFile bounds how much of a damaged checkpoint is read: a line
// per segment is far less.
const maxIndexFile = 4 << 20

// tableBudget bounds the entries the tables hold (16 bytes each); past it
// they are all dropped and rebuilt as asked for.
const tableBudget = 1 << 20

func (s *Store) indexPath() string { return filepath.Join(s.dir, layout.RaftIndexFile) }

// loadAnchors reads the checkpoint. A missing one is no anchor: the raft
// log is fresh, whatever the partition holds. A damaged one is an error:
// it is the one record of which batch is which entry, and no batch says
// its index.
func loadAnchors(fsys vfs.FS, path string) ([]anchor, error) {
	data, err := vfs.ReadFileLimit(fsys, path, maxIndexFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replica: reading %s: %w", path, err)
	}
	lines, err := layout.ParseRaftIndex(path, data)
	if err != nil {
		return nil, err
	}
	out := make([]anchor, 0, len(lines))
	for _, l := range lines {
		a := anchor{l.Index, l.Offset, l.Term}
		if a.index == 0 || a.index > math.MaxInt64 || a.offset < 0 || a.term > math.MaxInt32 {
			return nil, &layout.CheckpointError{Path: path, Pos: l.Pos, Reason: fmt.Sprintf("index %d at offset %d after term %d is out of range", a.index, a.offset, a.term)}
		}
		// Each entry is a batch of at least one offset but an empty normal
		// entry, which has none and is always the last of its anchor's
		// span (the next anchor names the entry after it): offsets grow at
		// least as fast as indexes, less one; terms never go down.
		if k := len(out); k > 0 && (a.index <= out[k-1].index || a.offset < out[k-1].offset || uint64(a.offset-out[k-1].offset)+1 < a.index-out[k-1].index || a.term < out[k-1].term) {
			return nil, &layout.CheckpointError{Path: path, Pos: l.Pos, Reason: fmt.Sprintf("index %d at offset %d after term %d does not follow index %d at offset %d after term %d", a.index, a.offset, a.term, out[k-1].index, out[k-1].offset, out[k-1].term)}
		}
		out = append(out, a)
	}
	return out, nil
}

// saveAnchors persists the anchors with the atomic replace every
// checkpoint uses. Called with mu.
func (s *Store) saveAnchors() error { return s.writeAnchors(s.anchors) }

// writeAnchors persists anchors, whatever the in-memory view holds (a
// snapshot install saves the anchor it ends with first). Called with mu.
func (s *Store) writeAnchors(anchors []anchor) error {
	lines := make([]layout.IndexLine, len(anchors))
	for i, a := range anchors {
		lines[i] = layout.IndexLine{Index: a.index, Offset: a.offset, Term: a.term}
	}
	return vfs.WriteFileAtomic(s.fs, s.indexPath(), layout.FormatRaftIndex(lines))
}

// table holds the offsets and terms of the batches of consecutive entries
// from an anchor: entry anchor.index+i is at offs[i], of terms[i]. When
// empty, the last entry is an empty normal entry, which has no batch: its
// offset is the next anchor's (where the next batch goes) and its term the
// next anchor's previous-entry term.
type table struct {
	offs  []int64
	terms []uint64
	empty bool
}

// where is an entry's place: its batch's base offset (for an empty entry,
// the offset after the batches before it) and its term.
type where struct {
	off   int64
	term  uint64
	empty bool
}

func (t *table) at(i uint64) where {
	return where{t.offs[i], t.terms[i], t.empty && i == uint64(len(t.offs))-1}
}

// readLimit is the largest batch a read takes whole: the partition's
// limit, or a frame of the driver if larger, as no entry larger than a
// frame was ever replicated (a batch stored under a larger
// max.message.bytes, lowered since, is still read).
func readLimit(maxBatch int) int { return max(maxBatch, multiraft.DefaultMaxFrame) }

// scan calls fn with each batch from the one holding from to the log
// end, reading them with segment.Scanner, one segment at a time, until fn
// returns false. A damaged batch is an error matching seglog.ErrCorrupt;
// one over the read limit comes with its header alone.
func (s *Store) scan(from int64, fn func(e *segment.Entry) bool) error {
	off := from
	for {
		sl, err := s.log.Read(off, math.MaxInt32, seglog.ReadOptions{})
		if err != nil {
			return err
		}
		if sl.Len() == 0 {
			sl.Close()
			return nil
		}
		sc := segment.NewScanner(sl, sl.Len(), readLimit(s.maxBatch))
		for {
			e, ok, err := sc.Next()
			if err != nil {
				sl.Close()
				return err
			}
			if !ok {
				break
			}
			if e.Damaged() && !e.OverLimit() || e.Magic != record.CurrentMagic {
				sl.Close()
				return fmt.Errorf("%w: %s at byte %d: %v", seglog.ErrCorrupt, sl.File(), sl.Position()+e.Pos, e.Err)
			}
			off = e.LastOffset() + 1
			if !fn(&e) {
				sl.Close()
				return nil
			}
		}
		sl.Close()
	}
}

// walk returns the base offsets and terms of up to n consecutive batches
// from the one at from, none at or past stop. It stops early at the log
// end.
func (s *Store) walk(from int64, n uint64, stop int64) (*table, error) {
	t := &table{}
	if n == 0 || from >= stop {
		return t, nil
	}
	var inside error
	err := s.scan(from, func(e *segment.Entry) bool {
		if e.BaseOffset() >= stop {
			return false
		}
		if len(t.offs) == 0 && e.BaseOffset() != from {
			inside = fmt.Errorf("%w: the anchor at offset %d is inside a batch at %d", ErrNotAnEntry, from, e.BaseOffset())
			return false
		}
		t.offs = append(t.offs, e.BaseOffset())
		t.terms = append(t.terms, uint64(max(e.Batch.PartitionLeaderEpoch(), 0)))
		return uint64(len(t.offs)) < n
	})
	if err == nil {
		err = inside
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// anchorFor returns the position in s.anchors of the anchor at or below
// index, -1 if there is none. Called with idx held.
func (s *Store) anchorFor(index uint64) int {
	return sort.Search(len(s.anchors), func(i int) bool { return s.anchors[i].index > index }) - 1
}

// spanEnd is the last index the table of anchor k covers: up to the next
// anchor, or the last entry. Called with idx held.
func (s *Store) spanEnd(k int) uint64 {
	if k+1 < len(s.anchors) {
		return s.anchors[k+1].index - 1
	}
	return s.last
}

// errNoEntry: the raft log does not hold the index asked for.
var errNoEntry = raft.ErrUnavailable

// locate returns the offset and term of the batch of entry index (see
// locateEntry).
func (s *Store) locate(index uint64) (off int64, term uint64, gen uint64, err error) {
	w, gen, err := s.locateEntry(index)
	return w.off, w.term, gen, err
}

// locateEntry returns where entry index is, building the table of its
// anchor if it has none, and the generation it holds for: a read through
// it is trusted only while gen has not moved. errNoEntry when the raft log
// does not hold index.
func (s *Store) locateEntry(index uint64) (w where, gen uint64, err error) {
	s.idx.RLock()
	if len(s.anchors) == 0 || index < s.first || index > s.last {
		s.idx.RUnlock()
		return where{}, 0, errNoEntry
	}
	k := s.anchorFor(index)
	a := s.anchors[k]
	gen = s.gen
	end := s.spanEnd(k)
	next, hasNext := anchor{}, k+1 < len(s.anchors)
	if hasNext {
		next = s.anchors[k+1]
	}
	if t := s.tables[a.index]; t != nil && index-a.index < uint64(len(t.offs)) {
		w = t.at(index - a.index)
		s.idx.RUnlock()
		return w, gen, nil
	}
	s.idx.RUnlock()
	// Walked without the lock: appends and reads go on meanwhile, and the
	// table is kept only if no truncation moved gen.
	stop := int64(math.MaxInt64)
	if hasNext {
		stop = next.offset
	}
	n := end - a.index + 1
	t, err := s.walk(a.offset, n, stop)
	if err != nil {
		return where{}, gen, err
	}
	if hasNext && uint64(len(t.offs)) != n {
		// A span before another anchor holds every entry up to it, and
		// the last may be an empty entry with no batch, whose term the
		// next anchor keeps.
		if uint64(len(t.offs))+1 != n {
			return where{}, gen, fmt.Errorf("%w: %s: %d entries from index %d at offset %d to the anchor at offset %d, but %d batches", ErrNotAnEntry, s.indexPath(), n, a.index, a.offset, next.offset, len(t.offs))
		}
		t.offs = append(t.offs, next.offset)
		t.terms = append(t.terms, next.term)
		t.empty = true
	}
	s.idx.Lock()
	defer s.idx.Unlock()
	if s.gen == gen {
		if old := s.tables[a.index]; old == nil || len(old.offs) < len(t.offs) {
			if s.tableSize+len(t.offs) > tableBudget {
				clear(s.tables)
				s.tableSize = 0
			}
			if old != nil {
				s.tableSize -= len(old.offs)
			}
			s.tables[a.index] = t
			s.tableSize += len(t.offs)
		}
	}
	if index-a.index >= uint64(len(t.offs)) {
		return where{}, gen, fmt.Errorf("%w: entry %d: the log ends %d batches after the anchor at offset %d", errNoEntry, index, len(t.offs), a.offset)
	}
	return t.at(index - a.index), gen, nil
}

// noteAppended records that entry index, of term, is the batch at off,
// extending the last anchor's table if it reaches index, and anchoring a
// new segment's first batch. Called with mu and idx held.
func (s *Store) noteAppended(index, term uint64, off int64, newSegment bool) (anchored bool) {
	prev := s.lastTerm
	s.last, s.lastTerm = index, term
	if newSegment && s.anchors[len(s.anchors)-1].index != index {
		s.anchors = append(s.anchors, anchor{index, off, prev})
		s.tables[index] = &table{offs: []int64{off}, terms: []uint64{term}}
		s.tableSize++
		return true
	}
	a := s.anchors[len(s.anchors)-1]
	if t := s.tables[a.index]; t != nil && a.index+uint64(len(t.offs)) == index {
		t.offs = append(t.offs, off)
		t.terms = append(t.terms, term)
		s.tableSize++
	} else if t == nil && a.index == index {
		s.tables[index] = &table{offs: []int64{off}, terms: []uint64{term}}
		s.tableSize++
	}
	return false
}

// noteEmpty records that entry index, of term, is an empty normal entry,
// which has no batch: the anchor of the entry after it, at the log end,
// keeps its term (the caller saved it). Called with mu and idx held.
func (s *Store) noteEmpty(index, term uint64) {
	a := s.anchors[len(s.anchors)-1]
	if t := s.tables[a.index]; t != nil && a.index+uint64(len(t.offs)) == index {
		t.offs = append(t.offs, s.end)
		t.terms = append(t.terms, term)
		t.empty = true
		s.tableSize++
	} else if t == nil && a.index == index {
		s.tables[index] = &table{offs: []int64{s.end}, terms: []uint64{term}, empty: true}
		s.tableSize++
	}
	s.anchors = append(s.anchors, anchor{index + 1, s.end, term})
	s.last, s.lastTerm = index, term
}

// dropTables forgets every table and the recent entries, and moves gen.
// Called with idx held.
func (s *Store) dropTables() {
	s.gen++
	clear(s.tables)
	s.tableSize = 0
	s.forgetRecent()
}

// recentBudget bounds the bytes of the recent entries kept: a few rounds
// of a busy partition's appends.
const recentBudget = 16 << 20

// remember adds an entry just stored to the recent ones (see Store.recent);
// one that does not follow them starts them anew. Called with idx held.
func (s *Store) remember(e *pb.Entry) {
	if k := len(s.recent); k > 0 && s.recent[k-1].GetIndex()+1 != e.GetIndex() {
		s.forgetRecent()
	}
	size := uint64(proto.Size(e))
	s.recent = append(s.recent, e)
	s.recentSizes = append(s.recentSizes, size)
	s.recentBytes += int(size)
	drop := 0
	for s.recentBytes > recentBudget && drop < len(s.recent)-1 {
		s.recentBytes -= int(s.recentSizes[drop])
		drop++
	}
	if drop > 0 {
		// Moved down in place, so the arrays do not grow without bound.
		k := len(s.recent)
		s.recent = append(s.recent[:0], s.recent[drop:]...)
		clear(s.recent[len(s.recent):k])
		s.recentSizes = append(s.recentSizes[:0], s.recentSizes[drop:]...)
	}
}

// Applied tells the Store that the entries up to index were applied: the
// recent entries at or below it are let go. Raft reads an entry after its
// application only to send it to a follower that has fallen behind, which
// Entries then answers from the partition; until then the recent entries
// are what raft asks for next (the committed entries to apply, a leader's
// appends to resend). Held to the budget alone, every partition kept its
// last 16 MiB of batches alive, so a node's heap grew with its partitions
// and each replicated byte landed in memory fresh from the kernel (a page
// fault per 4 KiB: docs/benchmarks.md "Cluster", seventh session).
func (s *Store) Applied(index uint64) {
	s.idx.Lock()
	defer s.idx.Unlock()
	k := len(s.recent)
	if k == 0 || s.recent[0].GetIndex() > index {
		return
	}
	drop := k
	if last := s.recent[k-1].GetIndex(); index < last {
		drop = int(index - s.recent[0].GetIndex() + 1)
	}
	for _, n := range s.recentSizes[:drop] {
		s.recentBytes -= int(n)
	}
	s.recent = append(s.recent[:0], s.recent[drop:]...)
	clear(s.recent[len(s.recent):k]) // the batches let go are not pinned by the array
	s.recentSizes = append(s.recentSizes[:0], s.recentSizes[drop:]...)
}

// forgetRecent empties the recent entries. Called with idx held.
func (s *Store) forgetRecent() {
	clear(s.recent)
	s.recent, s.recentSizes, s.recentBytes = s.recent[:0], s.recentSizes[:0], 0
}

// recentEntries answers Entries from the recent entries if they hold
// [lo, hi): ok false if not. Called with idx held (read).
func (s *Store) recentEntries(lo, hi, maxSize uint64) (ents []*pb.Entry, ok bool) {
	if len(s.recent) == 0 {
		return nil, false
	}
	from := s.recent[0].GetIndex()
	if lo < from || hi > from+uint64(len(s.recent)) {
		return nil, false
	}
	var size uint64
	for i := lo; i < hi; i++ {
		size += s.recentSizes[i-from]
		if i > lo && size > maxSize {
			break
		}
		ents = append(ents, s.recent[i-from])
	}
	return ents, true
}
