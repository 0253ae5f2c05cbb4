package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A snapshot is the partition (docs/cluster-partitions.md, "Snapshot
// install"): its Data is only the offset where its index ends, and a
// follower that lacks the partition up to there copies it from the
// snapshot's sender, batch by batch at the same offsets, before raft takes
// the snapshot. The Store is both ends of the copy.
var (
	_ multiraft.SnapshotReceiver = (*Store)(nil)
	_ multiraft.SnapshotSender   = (*Store)(nil)
)

// ErrBadTransfer is a snapshot copy whose data does not fit: a batch that
// fails its checks, is not where the next one must be, or a range that
// does not end where the snapshot says. Nothing past the batches checked
// is written.
var ErrBadTransfer = errors.New("replica: bad snapshot data")

// The pull's request is from and to (8 bytes each, big endian): the
// batches [from, to) are wanted. The answer's first payload is a header,
// 'H' and the sender's log start offset (8 bytes); every other payload is
// 'D' and whole batches, as stored, in offset order.
const (
	payloadHeader = 'H'
	payloadData   = 'D'
)

// pendingSnap is a snapshot whose data a transfer wrote below a restarted
// partition, for ApplySnapshot to take.
type pendingSnap struct {
	index, term uint64
	end         int64
	// complete is set once every batch up to end is stored; restart
	// says the partition was restarted for it.
	complete, restart bool
}

// SnapshotNeedsData reports whether snap needs the sender's data: not
// when the log holds its index with its term, nor when the log is fresh
// and the partition ends where snap does, nor when a transfer has already
// written its data; not for a snapshot at or below the first index either
// (raft refuses it as out of date).
func (s *Store) SnapshotNeedsData(snap *pb.Snapshot) bool {
	if s.checkOpen() != nil {
		return false
	}
	md := snap.GetMetadata()
	index, term := md.GetIndex(), md.GetTerm()
	end, err := decodeSnapData(snap.GetData())
	if err != nil {
		return false // ApplySnapshot refuses it with the reason
	}
	s.mu.Lock()
	pend := s.pending
	s.mu.Unlock()
	if pend != nil && pend.complete && pend.index == index && pend.term == term && pend.end == end {
		return false
	}
	s.idx.RLock()
	first, last := s.bounds()
	fresh := len(s.anchors) == 0
	s.idx.RUnlock()
	if index < first || (fresh && s.log.EndOffset() == end) {
		return false
	}
	if index <= last {
		if t, err := s.term(index); err == nil && t == term {
			return false
		}
	}
	return true
}

// ServeSnapshot answers a follower's pull of the batches [from, to):
// the header (this partition's start), then the batches from the later
// of from and the start, as stored, in payloads of at most
// multiraft.MaxSnapshotPayload bytes. It fails if no batch starts there,
// or none ends at to.
func (s *Store) ServeSnapshot(ctx context.Context, req []byte, send func([]byte) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if len(req) != 16 {
		return fmt.Errorf("%w: a request of %d bytes", ErrBadTransfer, len(req))
	}
	from, to := int64(binary.BigEndian.Uint64(req)), int64(binary.BigEndian.Uint64(req[8:]))
	if from < 0 || to < from {
		return fmt.Errorf("%w: the range [%d, %d)", ErrBadTransfer, from, to)
	}
	start := s.log.StartOffset()
	if err := send(binary.BigEndian.AppendUint64([]byte{payloadHeader}, uint64(start))); err != nil {
		return err
	}
	off := max(from, start)
	if off >= to {
		if off > to {
			return fmt.Errorf("%w: the partition starts at %d, past %d", ErrBadTransfer, start, to)
		}
		return nil
	}
	buf := []byte{payloadData}
	next := off
	var bad error
	err := s.scan(off, func(e *segment.Entry) bool {
		if err := ctx.Err(); err != nil {
			bad = err
			return false
		}
		if e.BaseOffset() != next {
			bad = fmt.Errorf("%w: a batch at %d where %d was next", ErrBadTransfer, e.BaseOffset(), next)
			return false
		}
		if e.OverLimit() || len(e.Batch) > multiraft.MaxSnapshotPayload-1 {
			bad = fmt.Errorf("%w: the batch at %d is over the limit", ErrBadTransfer, e.BaseOffset())
			return false
		}
		if len(buf)+len(e.Batch) > multiraft.MaxSnapshotPayload {
			if bad = send(buf); bad != nil {
				return false
			}
			buf = buf[:1]
		}
		buf = append(buf, e.Batch...)
		next = e.LastOffset() + 1
		return next < to
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return err
	}
	if next != to {
		return fmt.Errorf("%w: the batches from %d end at %d, not %d", ErrBadTransfer, off, next, to)
	}
	if len(buf) > 1 {
		return send(buf)
	}
	return nil
}

// ReceiveSnapshot copies what snap needs from its sender (fetch) into the
// partition. It runs while the group is frozen (multiraft stops raft
// reading or writing this Store meanwhile). The part of the log raft has
// committed here is kept: the copy starts where the committed entries end.
//
//   - If the sender still holds that offset, the uncommitted tail, if
//     any, is cut, and the sender's batches up to the snapshot's end are
//     stored after the committed ones, at the same offsets. They cannot be
//     numbered by counting them (the sender's empty entries have no
//     batch), so the commit index and the anchor of the log after the
//     snapshot are saved first, as for a restart: a crash midway restarts
//     the partition at the snapshot's end (Open). raft, which must not see
//     its log grow behind its back, takes the snapshot (ApplySnapshot),
//     and the raft log is empty after it, the batches kept below.
//   - If the sender's log starts past it (retention deleted what this
//     node lacks), the partition is emptied and restarted at the sender's
//     log start, as Kafka's follower does (truncateFullyAndStartAt), and
//     the sender's batches up to the snapshot's end are stored there: the
//     raft log becomes empty after the snapshot's index when raft applies
//     it (ApplySnapshot). The commit index and that anchor are saved
//     before the partition is restarted, so a crash midway leaves a
//     partition that restarts at the snapshot's end (Open), never a log
//     numbered wrong.
//
// Every batch is checked (framing, CRC, the offset it must have, a whole
// batch of offsets: a compacted range cannot be copied this way) before
// it is stored.
func (s *Store) ReceiveSnapshot(ctx context.Context, snap *pb.Snapshot, fetch multiraft.FetchFunc) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	md := snap.GetMetadata()
	index, term := md.GetIndex(), md.GetTerm()
	end, err := decodeSnapData(snap.GetData())
	if err != nil {
		return err
	}
	if term > uint64(^uint32(0)>>1) {
		return fmt.Errorf("%w: snapshot term %d above the largest leader epoch", ErrBadEntry, term)
	}
	s.mu.Lock()
	commit := s.state.commit
	s.mu.Unlock()
	if err := s.follow(); err != nil {
		return err
	}
	s.idx.RLock()
	first := s.first
	fresh := len(s.anchors) == 0
	s.idx.RUnlock()
	if commit >= index {
		return fmt.Errorf("replica: snapshot at %d is not past the commit index %d", index, commit)
	}
	cut := int64(0)
	if !fresh {
		if commit+1 < first {
			commit = first - 1
		}
		if cut, err = s.HighWatermark(commit); err != nil {
			return err
		}
	}
	if cut > end {
		return fmt.Errorf("%w: the committed entries end at %d, past the snapshot's end %d", ErrBadTransfer, cut, end)
	}
	rc := &receive{s: s, index: index, term: term, end: end, commit: commit, cut: cut, next: cut}
	req := binary.BigEndian.AppendUint64(nil, uint64(cut))
	req = binary.BigEndian.AppendUint64(req, uint64(end))
	err = fetch(ctx, req, rc.payload)
	if err == nil {
		err = rc.finish()
	}
	if err != nil {
		s.abortTransfer(rc)
	}
	return err
}

// abortTransfer leaves a failed transfer's Store so that raft, unfrozen,
// finds a log no longer than it was (its view in memory never grew). On
// disk nothing can be undone, after a cut as after a restart: the pending
// snapshot stays, the commit index saved stays at least its
// index (SetHardState), and Append refuses entries, which stops the
// group until it is reopened (Open then restarts the partition at the
// snapshot's end) or another transfer completes.
func (s *Store) abortTransfer(rc *receive) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pending
	if rc.restart || p == nil || p.restart {
		return
	}
	// After a cut the disk holds the log after the snapshot (cutAfter),
	// which cannot be put back crash-safely (the anchors and the commit
	// index are two files): as after a restart, Append refuses entries
	// until the Store is reopened, and Open restarts the partition at the
	// snapshot's end.
	p.restart = true
}

// receive is one transfer's state.
type receive struct {
	s           *Store
	index, term uint64
	end         int64
	commit      uint64
	cut, next   int64
	// started says the header came; restart that the partition was
	// restarted at the sender's start (else the batches are entries).
	started, restart bool
}

// payload takes one payload of the sender's answer.
func (rc *receive) payload(p []byte) error {
	s := rc.s
	if len(p) == 0 {
		return fmt.Errorf("%w: an empty payload", ErrBadTransfer)
	}
	if !rc.started {
		if p[0] != payloadHeader || len(p) != 9 {
			return fmt.Errorf("%w: the answer does not start with a header", ErrBadTransfer)
		}
		rc.started = true
		start := int64(binary.BigEndian.Uint64(p[1:]))
		if start < 0 || start > rc.end {
			return fmt.Errorf("%w: the sender starts at %d, past the snapshot's end %d", ErrBadTransfer, start, rc.end)
		}
		if start > rc.cut {
			rc.restart, rc.next = true, start
			return s.restartForSnapshot(rc.index, rc.term, rc.end, start)
		}
		return s.cutAfter(rc.commit, rc.cut, &pendingSnap{index: rc.index, term: rc.term, end: rc.end})
	}
	if p[0] != payloadData {
		return fmt.Errorf("%w: a payload of kind %q", ErrBadTransfer, p[0])
	}
	batches, err := rc.check(p[1:])
	if err != nil {
		return err
	}
	return s.storeRaw(batches)
}

// check splits data into batches and checks each: its framing and CRC,
// its base offset (the next one wanted), a whole batch (as many records
// as offsets: compaction's gaps are refused), and the end.
func (rc *receive) check(data []byte) ([]record.Batch, error) {
	var out []record.Batch
	for len(data) > 0 {
		if len(data) < record.HeaderSize {
			return nil, fmt.Errorf("%w: %d bytes left at offset %d, less than a batch header", ErrBadTransfer, len(data), rc.next)
		}
		b := record.Batch(data)
		size := b.Size()
		if size < record.HeaderSize || size > len(data) {
			return nil, fmt.Errorf("%w: a batch of %d bytes at offset %d, %d bytes left", ErrBadTransfer, size, rc.next, len(data))
		}
		b = b[:size:size]
		if b.Magic() != record.CurrentMagic {
			return nil, fmt.Errorf("%w: the batch at %d has magic %d", ErrBadTransfer, rc.next, b.Magic())
		}
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("%w: the batch at %d: %w", ErrBadTransfer, rc.next, err)
		}
		if b.BaseOffset() != rc.next {
			return nil, fmt.Errorf("%w: a batch at %d where %d is next", ErrBadTransfer, b.BaseOffset(), rc.next)
		}
		if b.NumRecords() <= 0 || int64(b.LastOffsetDelta())+1 != int64(b.NumRecords()) {
			return nil, fmt.Errorf("%w: the batch at %d holds %d records for %d offsets (a compacted range is not copied)", ErrBadTransfer, rc.next, b.NumRecords(), int64(b.LastOffsetDelta())+1)
		}
		if b.NextOffset() > rc.end {
			return nil, fmt.Errorf("%w: the batch at %d ends at %d, past the snapshot's end %d", ErrBadTransfer, rc.next, b.NextOffset(), rc.end)
		}
		out = append(out, b)
		rc.next = b.NextOffset()
		data = data[size:]
	}
	return out, nil
}

// finish checks the transfer reached the snapshot's end, and marks the
// pending snapshot complete: raft may take it.
func (rc *receive) finish() error {
	s := rc.s
	if !rc.started {
		return fmt.Errorf("%w: the answer had no header", ErrBadTransfer)
	}
	if rc.next != rc.end {
		return fmt.Errorf("%w: the batches end at %d, the snapshot at %d", ErrBadTransfer, rc.next, rc.end)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log.EndOffset() != rc.end || s.pending == nil {
		return fmt.Errorf("%w: the partition ends at %d after the copy, the snapshot at %d", ErrBadTransfer, s.log.EndOffset(), rc.end)
	}
	s.pending.complete = true
	return nil
}

// cutAfter removes the entries after commit, if any (a tail raft has not
// committed here, which the sender's batches replace), and whatever a
// transfer before left after cut, the end of the committed entries. The
// batches then stored after cut are the sender's entries after commit, so
// a crash before raft takes the snapshot leaves a log whose entries are
// numbered right (Open walks them from the last anchor). The in-memory
// raft view ends at commit until ApplySnapshot takes p.
func (s *Store) cutAfter(commit uint64, cut int64, p *pendingSnap) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.RLock()
	_, last := s.bounds()
	fresh := len(s.anchors) == 0
	s.idx.RUnlock()
	if fresh {
		// multiraft bootstraps every group before raft runs: a log with
		// no anchor has nothing to number the sender's batches from.
		return fmt.Errorf("%w: a log never started takes no snapshot data", ErrBadTransfer)
	}
	if last > commit {
		if err := s.truncateFrom(commit + 1); err != nil {
			return err
		}
	}
	if s.log.EndOffset() > cut {
		if err := s.p.TruncateTo(cut); err != nil {
			return err
		}
		if err := s.truncateEpochs(cut); err != nil {
			return err
		}
	}
	// The sender's batches after cut are not numbered by counting them
	// (its empty entries have none): on disk, the log is the one after
	// the snapshot, as a restart's, so a crash midway restarts the
	// partition at the snapshot's end (Open) and one after the copy finds
	// the log empty after it. The raft view in memory keeps the committed
	// entries until raft takes the snapshot, or a failure puts them back
	// on disk (abortTransfer).
	s.pending = p
	st := s.state
	st.commit = max(st.commit, p.index)
	if err := s.saveState(st); err != nil {
		return err
	}
	return s.writeAnchors([]anchor{{p.index + 1, p.end, p.term}})
}

// restartForSnapshot empties the partition and restarts it at start, the
// sender's log start, for the batches up to end, the snapshot (index,
// term)'s. The commit index and the anchor of the log after the snapshot
// are saved first: should the copy not finish, Open finds the partition
// ending before that anchor and restarts it at the snapshot's end. The
// in-memory raft view becomes an empty log after the commit index: what
// raft (frozen, every committed entry applied) still takes for its log,
// in which it finds the snapshot's index absent, so it takes the
// snapshot; ApplySnapshot then switches to the saved anchor. Until then
// retention is not followed (the anchors on disk are the snapshot's).
func (s *Store) restartForSnapshot(index, term uint64, end, start int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idx.RLock()
	commit := s.state.commit
	if commit+1 < s.first {
		commit = s.first - 1
	}
	s.idx.RUnlock()
	commitTerm, err := s.term(commit)
	if err != nil {
		return err
	}
	s.pending = &pendingSnap{index: index, term: term, end: end, restart: true}
	st := s.state
	st.commit = max(st.commit, index)
	if err := s.saveState(st); err != nil {
		return err
	}
	if err := s.writeAnchors([]anchor{{index + 1, end, term}}); err != nil {
		return err
	}
	if err := s.p.RestartAt(start); err != nil {
		return err
	}
	if err := s.epochs.Clear(); err != nil {
		return err
	}
	s.idx.Lock()
	s.dropTables()
	s.anchors = []anchor{{commit + 1, start, commitTerm}}
	s.first, s.last, s.lastTerm, s.end = commit+1, commit, commitTerm, start
	s.idx.Unlock()
	return nil
}

// storeRaw appends checked batches of a restarted partition, outside the
// raft view, keeping their epochs (and the epoch checkpoint with them).
func (s *Store) storeRaw(batches []record.Batch) error {
	if len(batches) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if end := s.log.EndOffset(); batches[0].BaseOffset() != end {
		return fmt.Errorf("%w: a batch at %d, the partition ends at %d", ErrBadTransfer, batches[0].BaseOffset(), end)
	}
	epochs := make([]int32, len(batches))
	raw := make([][]byte, len(batches))
	for i, b := range batches {
		epochs[i] = max(b.PartitionLeaderEpoch(), 0)
		raw[i] = b
		if err := s.assignEpoch(epochs[i], b.BaseOffset()); err != nil {
			return err
		}
	}
	if _, err := s.p.AppendEpochBatches(epochs, raw); err != nil {
		return err
	}
	return s.p.Sync()
}

// takePending makes the log empty after the pending snapshot, if it is
// (index, term) and the partition ends at its end; it reports whether it
// did. Called with mu.
func (s *Store) takePending(index, term uint64, end int64, cs *pb.ConfState) (bool, error) {
	p := s.pending
	if p == nil || !p.complete || p.index != index || p.term != term || p.end != end || s.log.EndOffset() != end {
		return false, nil
	}
	st := s.state
	st.setConfState(cs)
	st.commit = max(st.commit, index)
	if err := s.saveState(st); err != nil {
		return false, err
	}
	s.idx.Lock()
	defer s.idx.Unlock()
	s.dropTables()
	s.anchors = []anchor{{index + 1, end, term}}
	s.first, s.last, s.lastTerm, s.end = index+1, index, term, end
	s.pending = nil
	return true, s.saveAnchors()
}
