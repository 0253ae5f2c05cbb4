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
		// Each entry is a batch of at least one offset, so offsets grow at
		// least as fast as indexes; terms never go down.
		if k := len(out); k > 0 && (a.index <= out[k-1].index || uint64(a.offset-out[k-1].offset) < a.index-out[k-1].index || a.offset <= out[k-1].offset || a.term < out[k-1].term) {
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
// from an anchor: entry anchor.index+i is at offs[i], of terms[i].
type table struct {
	offs  []int64
	terms []uint64
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
// from the one at from. It stops early at the log end.
func (s *Store) walk(from int64, n uint64) (*table, error) {
	t := &table{}
	if n == 0 {
		return t, nil
	}
	var inside error
	err := s.scan(from, func(e *segment.Entry) bool {
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

// locate returns the offset and term of the batch of entry index, building
// the table of its anchor if it has none, and the generation it holds for:
// a read through it is trusted only while gen has not moved. errNoEntry
// when the raft log does not hold index.
func (s *Store) locate(index uint64) (off int64, term uint64, gen uint64, err error) {
	s.idx.RLock()
	if len(s.anchors) == 0 || index < s.first || index > s.last {
		s.idx.RUnlock()
		return 0, 0, 0, errNoEntry
	}
	k := s.anchorFor(index)
	a := s.anchors[k]
	gen = s.gen
	end := s.spanEnd(k)
	if t := s.tables[a.index]; t != nil && index-a.index < uint64(len(t.offs)) {
		off, term = t.offs[index-a.index], t.terms[index-a.index]
		s.idx.RUnlock()
		return off, term, gen, nil
	}
	s.idx.RUnlock()
	// Walked without the lock: appends and reads go on meanwhile, and the
	// table is kept only if no truncation moved gen.
	t, err := s.walk(a.offset, end-a.index+1)
	if err != nil {
		return 0, 0, gen, err
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
		return 0, 0, gen, fmt.Errorf("%w: entry %d: the log ends %d batches after the anchor at offset %d", errNoEntry, index, len(t.offs), a.offset)
	}
	return t.offs[index-a.index], t.terms[index-a.index], gen, nil
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

// dropTables forgets every table and moves gen. Called with idx held.
func (s *Store) dropTables() {
	s.gen++
	clear(s.tables)
	s.tableSize = 0
}
