package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sort"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// anchor says that the batch at offset is the entry at index.
type anchor struct {
	index  uint64
	offset int64
}

// maxIndexFile bounds how much of a damaged checkpoint is read: a line
// per segment is far less.
const maxIndexFile = 4 << 20

// tableBudget bounds the offsets the tables hold (8 bytes each); past it
// they are all dropped and rebuilt as asked for.
const tableBudget = 1 << 20

func (s *Store) indexPath() string { return filepath.Join(s.dir, layout.RaftIndexFile) }

// loadAnchors reads the checkpoint. A missing one is no anchor: the raft
// log is empty, whatever the partition holds (batches written before it
// was a raft log). A damaged one is an error: it is the one record of
// which batch is which entry, and no batch says its index.
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
		a := anchor{l.Index, l.Offset}
		if a.index == 0 || a.index > math.MaxInt64 || a.offset < 0 {
			return nil, &layout.CheckpointError{Path: path, Pos: l.Pos, Reason: fmt.Sprintf("index %d at offset %d is out of range", a.index, a.offset)}
		}
		// Each entry is a batch of at least one offset, so offsets grow at
		// least as fast as indexes.
		if k := len(out); k > 0 && (a.index <= out[k-1].index || uint64(a.offset-out[k-1].offset) < a.index-out[k-1].index || a.offset <= out[k-1].offset) {
			return nil, &layout.CheckpointError{Path: path, Pos: l.Pos, Reason: fmt.Sprintf("index %d at offset %d does not follow index %d at offset %d", a.index, a.offset, out[k-1].index, out[k-1].offset)}
		}
		out = append(out, a)
	}
	return out, nil
}

// saveAnchors persists the anchors with the atomic replace every
// checkpoint uses. Called with mu.
func (s *Store) saveAnchors() error {
	lines := make([]layout.IndexLine, len(s.anchors))
	for i, a := range s.anchors {
		lines[i] = layout.IndexLine{Index: a.index, Offset: a.offset}
	}
	return vfs.WriteFileAtomic(s.fs, s.indexPath(), layout.FormatRaftIndex(lines))
}

// table holds the offsets of the batches of consecutive entries from an
// anchor: entry anchor.index+i is at offs[i].
type table struct {
	offs []int64
}

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
		sc := segment.NewScanner(sl, sl.Len(), s.maxBatch)
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

// walk returns the base offsets of up to n consecutive batches from the
// one at from, and the leader epoch of the last. It stops early at the
// log end.
func (s *Store) walk(from int64, n uint64) (offs []int64, lastEpoch int32, err error) {
	if n == 0 {
		return nil, 0, nil
	}
	var inside error
	err = s.scan(from, func(e *segment.Entry) bool {
		if len(offs) == 0 && e.BaseOffset() != from {
			inside = fmt.Errorf("%w: the anchor at offset %d is inside a batch at %d", ErrNotAnEntry, from, e.BaseOffset())
			return false
		}
		offs = append(offs, e.BaseOffset())
		lastEpoch = e.Batch.PartitionLeaderEpoch()
		return uint64(len(offs)) < n
	})
	if err == nil {
		err = inside
	}
	if err != nil {
		return nil, 0, err
	}
	return offs, lastEpoch, nil
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

// locate returns the offset of the batch of entry index, building the
// table of its anchor if it has none, and the generation it holds for:
// a read through it is trusted only while gen has not moved.
// raft.ErrLogNotFound when the raft log does not hold index.
func (s *Store) locate(index uint64) (off int64, gen uint64, err error) {
	s.idx.RLock()
	if s.empty() || index < s.first || index > s.last {
		s.idx.RUnlock()
		return 0, 0, raft.ErrLogNotFound
	}
	k := s.anchorFor(index)
	a := s.anchors[k]
	gen = s.gen
	end := s.spanEnd(k)
	if t := s.tables[a.index]; t != nil && index-a.index < uint64(len(t.offs)) {
		off = t.offs[index-a.index]
		s.idx.RUnlock()
		return off, gen, nil
	}
	s.idx.RUnlock()
	// Walked without the lock: appends and reads go on meanwhile, and the
	// table is kept only if no delete moved gen.
	offs, _, err := s.walk(a.offset, end-a.index+1)
	if err != nil {
		return 0, gen, err
	}
	s.idx.Lock()
	defer s.idx.Unlock()
	if s.gen == gen {
		if old := s.tables[a.index]; old == nil || len(old.offs) < len(offs) {
			if s.tableSize+len(offs) > tableBudget {
				clear(s.tables)
				s.tableSize = 0
			}
			if old != nil {
				s.tableSize -= len(old.offs)
			}
			s.tables[a.index] = &table{offs: offs}
			s.tableSize += len(offs)
		}
	}
	if index-a.index >= uint64(len(offs)) {
		return 0, gen, fmt.Errorf("%w: entry %d: the log ends %d batches after the anchor at offset %d", raft.ErrLogNotFound, index, len(offs), a.offset)
	}
	return offs[index-a.index], gen, nil
}

// noteAppended records that entry index is the batch at off, extending
// the last anchor's table if it reaches index, and anchoring a new
// segment's first batch. Called with mu and idx held.
func (s *Store) noteAppended(index uint64, off int64, newSegment bool) (anchored bool) {
	if s.empty() {
		s.first = index
	}
	s.last = index
	if newSegment && s.anchors[len(s.anchors)-1].index != index {
		s.anchors = append(s.anchors, anchor{index, off})
		s.tables[index] = &table{offs: []int64{off}}
		s.tableSize++
		return true
	}
	a := s.anchors[len(s.anchors)-1]
	if t := s.tables[a.index]; t != nil && a.index+uint64(len(t.offs)) == index {
		t.offs = append(t.offs, off)
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
