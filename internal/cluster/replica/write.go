package replica

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// ErrSnapshotNeedsData is ApplySnapshot's answer to a snapshot past what
// the partition holds (a follower too far behind, or one whose entries
// conflict with the snapshot's) when no copy of the leader's data
// prepared it (ReceiveSnapshot, snapshot.go; multiraft runs it before raft
// sees the snapshot). Nothing is changed.
var ErrSnapshotNeedsData = errors.New("replica: the snapshot needs the leader's data")

// Append writes entries, one batch each: consecutive, the first at most
// one past the last index. As raft.MemoryStorage's Append, entries at or
// below the snapshot are skipped, and an overlap truncates the log at the
// first new entry before appending (a Kafka truncation: the batch is the
// entry, so the cut never falls inside one). A producer batch is stamped
// in place with the log end as its base offset and the term as its
// partitionLeaderEpoch, and appended: the entries' Data are Append's from
// the call on, and must not be read by another goroutine meanwhile unless
// Stamp stamped them first. Entries are on disk when it returns.
//
// The appends are one seglog AppendEpochBatches and one Sync. A call
// holding an entry it cannot store is refused, before anything is
// written, with an error matching ErrBadEntry (and, for a batch whose
// records are malformed, seglog.ErrCorruptBatch).
func (s *Store) Append(entries []*pb.Entry) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	own := s.takeOwn(entries)
	for i, e := range entries {
		if err := checkEntry(e, own != nil && own[i]); err != nil {
			return err
		}
		if i > 0 && e.GetIndex() != entries[i-1].GetIndex()+1 {
			return fmt.Errorf("%w: index %d follows %d in one call", ErrBadEntry, e.GetIndex(), entries[i-1].GetIndex())
		}
		if i > 0 && e.GetTerm() < entries[i-1].GetTerm() {
			return fmt.Errorf("%w: entry %d has term %d after term %d", ErrBadEntry, e.GetIndex(), e.GetTerm(), entries[i-1].GetTerm())
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if err := s.abandonInstall(entries); err != nil {
		return err
	}
	if err := s.followLocked(); err != nil {
		return err
	}
	s.idx.RLock()
	first, last := s.bounds()
	s.idx.RUnlock()
	if entries[len(entries)-1].GetIndex() < first {
		return nil
	}
	if lo := entries[0].GetIndex(); lo < first {
		entries = entries[first-lo:]
	}
	lo := entries[0].GetIndex()
	if lo > last+1 {
		return fmt.Errorf("%w: entry %d does not follow the last index %d", ErrBadEntry, lo, last)
	}
	prevTerm, err := s.term(lo - 1)
	if err != nil {
		return err
	}
	if entries[0].GetTerm() < prevTerm {
		return fmt.Errorf("%w: entry %d has term %d after term %d", ErrBadEntry, lo, entries[0].GetTerm(), prevTerm)
	}
	if lo <= last {
		if err := s.truncateFrom(lo); err != nil {
			return err
		}
	}
	s.idx.RLock()
	fresh := len(s.anchors) == 0
	s.idx.RUnlock()
	if fresh {
		if err := s.anchorStart(lo, 0); err != nil {
			return err
		}
	}
	return s.appendLocked(entries)
}

// Stamp writes into a leader's new entries, before raft's messages carry
// them, the base offset and partitionLeaderEpoch Append will give them, so
// that the bytes sent are the bytes stored and Append need not write into
// a batch a sender may be reading (or copy it). The entries must be the
// next ones after the last, as a leader's are; any other call stamps
// nothing. Both fields lie outside the CRC, so a follower receiving a
// stamped batch checks and stores it as any other (and stamps it again
// with the same values).
func (s *Store) Stamp(entries []*pb.Entry) {
	if len(entries) == 0 || s.closed.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.RLock()
	_, last := s.bounds()
	fresh := len(s.anchors) == 0
	s.idx.RUnlock()
	if fresh || entries[0].GetIndex() != last+1 || (s.pending != nil && s.pending.restart) {
		return
	}
	off := s.log.EndOffset()
	for _, e := range entries {
		switch {
		case isEmpty(e):
			continue // no batch, no offset
		case !isProducer(e):
			off++ // raft's own entry: a control batch of one record
			continue
		}
		b := record.Batch(e.GetData())
		if len(b) < record.HeaderSize || b.LastOffsetDelta() < 0 || e.GetTerm() > math.MaxInt32 {
			// Append refuses the call (checkEntry); no offset after
			// this entry is known.
			return
		}
		b.SetBaseOffset(off)
		b.SetPartitionLeaderEpoch(int32(e.GetTerm()))
		off += int64(b.LastOffsetDelta()) + 1
	}
}

// appendLocked encodes entries and appends them after the last. An empty
// normal entry (a new leader's) takes no batch and no offset: the anchor
// of the entry after it, at the same offset, keeps its term, and is
// durable before the batches after it, so no crash numbers them wrong.
// Called with mu.
//
// A producer batch is stored from the entry's own Data, stamped in place
// with its offset and epoch (no copy: a copy of every replicated byte was
// an eighth of a node's CPU, docs/benchmarks.md "Cluster"). That is safe
// because every entry's Data is Append's to stamp: a follower's entries
// were decoded into buffers of their own (multiraft's wire), and a
// leader's were stamped by Stamp before raft's messages took them, so the
// append finds their stamps in place and writes nothing there.
func (s *Store) appendLocked(entries []*pb.Entry) error {
	batches := make([][]byte, 0, len(entries))
	epochs := make([]int32, 0, len(entries))
	var empties []anchor
	end := s.log.EndOffset()
	off := end
	for _, e := range entries {
		var b []byte
		switch {
		case isEmpty(e):
			empties = append(empties, anchor{e.GetIndex() + 1, off, e.GetTerm()})
			continue
		case isProducer(e):
			b = e.GetData()
		default:
			cb, val, err := buildControl(s.bld, e, s.val)
			s.val = val
			if err != nil {
				return fmt.Errorf("%w: entry %d: %w", ErrBadEntry, e.GetIndex(), err)
			}
			// The builder's buffer is reused: the recent entries keep
			// the batch.
			b = bytes.Clone(cb)
		}
		batches = append(batches, b)
		epochs = append(epochs, int32(e.GetTerm()))
		// Each term's first offset is in the epoch checkpoint before its
		// first batch is on disk.
		if err := s.assignEpoch(int32(e.GetTerm()), off); err != nil {
			return err
		}
		off += int64(record.Batch(b).LastOffsetDelta()) + 1
	}
	if len(empties) > 0 {
		if err := s.writeAnchors(append(append([]anchor(nil), s.anchors...), empties...)); err != nil {
			_ = s.truncateEpochs(end)
			return fmt.Errorf("replica: storing entries %d to %d: %w", entries[0].GetIndex(), entries[len(entries)-1].GetIndex(), err)
		}
	}
	var infos []seglog.AppendInfo
	var err error
	segs := s.log.NumSegments()
	if len(batches) > 0 {
		infos, err = s.p.AppendEpochBatches(epochs, batches)
		if err == nil {
			err = s.p.Sync()
		}
	}
	s.noteStored(entries, infos, batches, err == nil, s.log.NumSegments() != segs)
	stored := end
	if len(infos) > 0 {
		stored = infos[len(infos)-1].LastOffset + 1
	}
	if err != nil {
		// The epochs assigned for what was not stored go again.
		_ = s.truncateEpochs(stored)
	}
	if errors.Is(err, seglog.ErrCorruptBatch) {
		return fmt.Errorf("%w: %w", ErrBadEntry, err)
	}
	if err != nil {
		return fmt.Errorf("replica: storing entries %d to %d: %w", entries[0].GetIndex(), entries[len(entries)-1].GetIndex(), err)
	}
	return nil
}

// noteStored records the entries a call stored: those before the first
// batch not in infos, all of them if all was stored (an empty entry has
// no batch; its anchor is on disk already). It anchors the first batch of
// each segment the call started (rolled says whether it rolled at all:
// the segments are listed only then). A missing segment anchor costs a
// longer walk, never a wrong answer, so the checkpoint's save may fail
// after the entries are stored; the next one retries it. Called with mu.
//
// Each entry noted is remembered as Entries returns it (data[i] is the
// batch of infos[i], stamped by the append: the bytes stored), and so
// answered without a read.
func (s *Store) noteStored(entries []*pb.Entry, infos []seglog.AppendInfo, data [][]byte, all, rolled bool) {
	var bases map[int64]bool
	if rolled && len(infos) > 0 {
		bases = make(map[int64]bool)
		for _, seg := range s.log.Segments() {
			if seg.BaseOffset >= infos[0].FirstOffset {
				bases[seg.BaseOffset] = true
			}
		}
	}
	anchored := false
	s.idx.Lock()
	n := 0
	for _, e := range entries {
		if isEmpty(e) {
			if n < len(infos) || all {
				s.noteEmpty(e.GetIndex(), e.GetTerm())
				s.remember(&pb.Entry{Index: new(e.GetIndex()), Term: new(e.GetTerm())})
				continue
			}
			break
		}
		if n == len(infos) {
			break
		}
		info := infos[n]
		if s.noteAppended(e.GetIndex(), e.GetTerm(), info.FirstOffset, bases[info.FirstOffset]) {
			anchored = true
		}
		s.end = info.LastOffset + 1
		re := &pb.Entry{Index: new(e.GetIndex()), Term: new(e.GetTerm())}
		switch {
		case isProducer(e):
			re.Data = data[n]
		case e.GetType() == pb.EntryType_EntryNormal:
			// A command: its Type unset, as raft proposed it and
			// decodeEntry reads it back.
			re.Data = bytes.Clone(e.GetData())
		default:
			re.Type, re.Data = e.GetType().Enum(), bytes.Clone(e.GetData())
		}
		s.remember(re)
		n++
	}
	s.idx.Unlock()
	if anchored {
		_ = s.saveAnchors()
	}
}

// anchorStart makes the log empty, starting at index at the partition's
// end, after an entry of term: the anchor is on disk before a batch it
// names, so a crash between the two leaves an empty log starting there.
// Called with mu.
func (s *Store) anchorStart(index, term uint64) error {
	s.idx.Lock()
	defer s.idx.Unlock()
	old := s.anchors
	end := s.log.EndOffset()
	s.dropTables()
	s.anchors = []anchor{{index, end, term}}
	if err := s.saveAnchors(); err != nil {
		s.anchors = old
		return err
	}
	s.first, s.last, s.lastTerm, s.end = index, index-1, term, end
	return nil
}

// truncateFrom removes entry index and those after it, index in
// [first, last]. The partition is cut first, then the anchors past index
// go (the one at index stays: it keeps Term(index-1), and says whether
// index-1 is an empty entry), so a crash between leaves a prefix of the
// old log, every anchor past the cut dropped by Open, never a batch
// numbered as another entry. Called with mu.
func (s *Store) truncateFrom(index uint64) error {
	cut, _, _, err := s.locate(index)
	if err != nil {
		return err
	}
	prevTerm, err := s.term(index - 1)
	if err != nil {
		return err
	}
	// The view ends before index first (gen moves), so that a read
	// beside it does not trust what the cut removes.
	s.idx.Lock()
	s.dropTables()
	s.anchors = s.anchors[:s.anchorFor(index)+1]
	s.last, s.lastTerm, s.end = index-1, prevTerm, cut
	s.idx.Unlock()
	if err := s.p.TruncateTo(cut); err != nil {
		return err
	}
	if err := s.truncateEpochs(cut); err != nil {
		return err
	}
	return s.saveAnchors()
}

// ApplySnapshot makes the log start after the snapshot's index, with its
// term and ConfState. The entries' data is the partition itself, so the
// Store can only take a snapshot of what the partition already holds:
//
//   - at or below the snapshot it has already (FirstIndex-1): refused
//     with raft.ErrSnapOutOfDate, as raft.MemoryStorage does, except a
//     snapshot at index 0 on a log that has had none, a configuration
//     alone, which MemoryStorage takes too (the entries go);
//   - an index the log holds with the snapshot's term: the first index
//     moves past it (the Kafka data stays: retention, not raft, deletes
//     records), and the entries after it go, as MemoryStorage drops them;
//   - a fresh log (no entry ever stored) whose partition ends where the
//     snapshot's data says (none: offset 0), as multiraft's bootstrap
//     snapshot at index 1, term 1 on an empty partition: the log starts
//     after it, at the partition's end;
//   - the snapshot a completed copy from the leader prepared
//     (ReceiveSnapshot): the log becomes empty after it, at its end
//     offset, the copied batches below;
//   - anything else needs the partition's data up to the snapshot from the
//     leader: ErrSnapshotNeedsData, nothing changed.
//
// The raft state (ConfState) is saved before the anchors: a crash between
// them leaves a log raft takes for an empty one with that configuration,
// and the leader sends the snapshot again.
func (s *Store) ApplySnapshot(snap *pb.Snapshot) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	md := snap.GetMetadata()
	index, term := md.GetIndex(), md.GetTerm()
	if term > uint64(^uint32(0)>>1) {
		return fmt.Errorf("%w: snapshot term %d above the largest leader epoch", ErrBadEntry, term)
	}
	end, err := decodeSnapData(snap.GetData())
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if took, err := s.takePending(index, term, end, md.GetConfState()); took || err != nil {
		return err
	}
	if err := s.followLocked(); err != nil {
		return err
	}
	s.idx.RLock()
	first, last := s.bounds()
	fresh := len(s.anchors) == 0
	s.idx.RUnlock()
	if index == 0 && first == 1 {
		// A configuration alone, as etcd's applications bootstrap and
		// raft.MemoryStorage accepts: the log is emptied.
		st := s.state
		st.setConfState(md.GetConfState())
		if err := s.saveState(st); err != nil {
			return err
		}
		if last > 0 {
			return s.truncateFrom(1)
		}
		return nil
	}
	if index < first {
		return raft.ErrSnapOutOfDate
	}
	held := false
	if index <= last {
		t, err := s.term(index)
		if err != nil {
			return err
		}
		held = t == term
	}
	if !held && !(fresh && s.log.EndOffset() == end) {
		return fmt.Errorf("%w: snapshot at index %d, term %d, offset %d; the log holds [%d, %d] and the partition ends at %d", ErrSnapshotNeedsData, index, term, end, first, last, s.log.EndOffset())
	}
	st := s.state
	st.setConfState(md.GetConfState())
	// Committed up to the snapshot, in the same write: the driver saves
	// the hard state after this, and a crash in between would otherwise
	// leave a commit index below the log's first entry, which etcd raft
	// refuses at start as it does one past the last.
	st.commit = max(st.commit, index)
	if err := s.saveState(st); err != nil {
		return err
	}
	if !held {
		return s.anchorStart(index+1, term)
	}
	if index < last {
		if err := s.truncateFrom(index + 1); err != nil {
			return err
		}
	}
	return s.movePrefix(index+1, term)
}

// movePrefix makes next the first index, after an entry of term; next is
// at most last+1. Called with mu.
func (s *Store) movePrefix(next, term uint64) error {
	s.idx.RLock()
	last, end := s.last, s.end
	s.idx.RUnlock()
	off := end
	if next <= last {
		var err error
		if off, _, _, err = s.locate(next); err != nil {
			return err
		}
	}
	s.idx.Lock()
	defer s.idx.Unlock()
	s.dropTables()
	k := s.anchorFor(next)
	s.anchors = append([]anchor{{next, off, term}}, s.anchors[k+1:]...)
	s.first = next
	return s.saveAnchors()
}

// CompactTo moves the raft log's first entry up to the last anchored
// entry at or below index+1, index being an entry applied on this node,
// as raft.MemoryStorage's Compact does after a snapshot: the entries below
// leave raft's view (a follower that needs them gets a snapshot) and the
// partition keeps their data. Anchors are the raft log's first entry and
// every segment's first batch, so the first entry moves a segment at a
// time and the anchor checkpoint is rewritten only then. It returns the
// offset of the first entry afterwards (the partition's end for an empty
// log): nothing below it is raft's any more, so a compaction of the
// partition below it, which removes batches, renumbers no entry.
func (s *Store) CompactTo(index uint64) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	if err := s.followLocked(); err != nil {
		return 0, err
	}
	s.idx.Lock()
	defer s.idx.Unlock()
	if len(s.anchors) == 0 {
		return s.log.EndOffset(), nil
	}
	k := s.anchorFor(min(index+1, s.last+1))
	if k <= 0 {
		return s.anchors[0].offset, nil
	}
	old := s.anchors
	for _, a := range old[:k] {
		if t := s.tables[a.index]; t != nil {
			s.tableSize -= len(t.offs)
			delete(s.tables, a.index)
		}
	}
	s.anchors = append([]anchor(nil), old[k:]...)
	if err := s.saveAnchors(); err != nil {
		s.anchors = old
		return 0, err
	}
	s.first = s.anchors[0].index
	return s.anchors[0].offset, nil
}

// LastAnchor returns the offset of the last anchored entry: the first
// batch of the newest segment an append started, or the raft log's first
// entry (0 for a fresh log). Retention must keep it: were every anchored
// batch deleted while the Store is closed (or before it notices), nothing
// would say how many entries followed the last anchor, and Open refuses
// such a log. The partition manager's cleaning floor stays at or below
// it, so at least the newest anchored segment stays.
func (s *Store) LastAnchor() int64 {
	s.idx.RLock()
	defer s.idx.RUnlock()
	if len(s.anchors) == 0 {
		return 0
	}
	return s.anchors[len(s.anchors)-1].offset
}
