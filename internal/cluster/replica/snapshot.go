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
// 'H', the sender's log start offset and the offset its batches begin at
// (8 bytes each); every other payload is 'D' and whole batches, as
// stored, in offset order.
//
// The batches begin at from, or, when from is below the sender's log
// start, at the start, unless the start lies inside a batch (DeleteRecords
// moves it to any offset): then at that batch's base offset, as Kafka
// serves a fetch at the log start with the whole batch holding it. A
// follower that restarts its partition does so there, below the start,
// and takes the sender's start once the copy is whole (takePending).
const (
	payloadHeader = 'H'
	payloadData   = 'D'
	headerSize    = 1 + 8 + 8
)

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
// the header (this partition's start, and where the batches begin), then
// the batches from the later of from and the start (from the batch
// holding the start, when it lies inside one), as stored, in payloads of
// at most multiraft.MaxSnapshotPayload bytes. It fails if no batch starts
// there, or none ends at to.
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
	off := max(from, start)
	first := off
	if from < start && start < to {
		base, err := s.batchHolding(start)
		if err != nil {
			return err
		}
		first = max(from, base)
	}
	h := binary.BigEndian.AppendUint64([]byte{payloadHeader}, uint64(start))
	if err := send(binary.BigEndian.AppendUint64(h, uint64(first))); err != nil {
		return err
	}
	if off >= to {
		if off > to {
			return fmt.Errorf("%w: the partition starts at %d, past %d", ErrBadTransfer, start, to)
		}
		return nil
	}
	buf := []byte{payloadData}
	next := first
	var bad error
	err := s.scan(off, func(e *segment.Entry) bool {
		if err := ctx.Err(); err != nil {
			bad = err
			return false
		}
		if e.BaseOffset() < next {
			// Above is a gap, compaction's; below, a batch holding
			// offsets before the range (or out of order).
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
		return fmt.Errorf("%w: the batches from %d end at %d, not %d", ErrBadTransfer, first, next, to)
	}
	if len(buf) > 1 {
		return send(buf)
	}
	return nil
}

// batchHolding returns the base offset of the batch holding off, which
// lies at or after the log start: off itself when no batch holds it (a
// gap compaction left, or the end).
func (s *Store) batchHolding(off int64) (int64, error) {
	base := off
	err := s.scan(off, func(e *segment.Entry) bool {
		base = min(off, e.BaseOffset())
		return false
	})
	return base, err
}

// ReceiveSnapshot copies what snap needs from its sender (fetch) into the
// partition. It runs while the group is frozen (multiraft stops raft
// reading or writing this Store meanwhile). The part of the log raft has
// committed here is kept: the copy starts where the committed entries end,
// or, when a copy before this one stopped short, where the partition ends
// (its batches past the raft log are that copy's, checked as they came).
//
// Before the partition changes, the install is saved in the raft-state
// file (install, state.go): the uncommitted tail, if any, is cut first, so
// that the raft log the anchors describe ends where the committed entries
// do, and every batch past it is the sender's. The sender's batches cannot
// be numbered as entries by counting them (its empty entries have no
// batch), and they are not: the raft log, on disk as in memory, stays the
// committed entries until raft takes the snapshot (ApplySnapshot, which
// then replaces the anchors with the snapshot's and drops the install).
// Should the copy fail or the power go meanwhile, the partition keeps
// every batch it had below the cut and the batches copied after it; the
// next copy resumes at its end, and entries raft appends instead replace
// the copied batches (abandonInstall).
//
// If the sender's log starts past that point (retention or DeleteRecords
// deleted what this node lacks), the partition is emptied and restarted
// where the sender's batches begin: its log start, or the base offset of
// the batch holding it (a start DeleteRecords moved inside a batch), as
// Kafka's follower does (truncateFullyAndStartAt), and the sender's
// batches up to the snapshot's end are stored there. A copy that
// does not finish leaves a partition whose own data is gone, holding the
// sender's batches from its start, and a raft log empty after the commit
// index: in place or reopened, the install stays, and the next copy
// resumes at the partition's end (restarting again only if the sender's
// start has moved past it), so the replica ends up holding what the
// sender holds from its start.
//
// Every batch is checked (framing, CRC, an offset at or past the next
// one wanted, no more records than offsets) before it is stored, at its
// own offset (seglog's AppendAsFollower): a range the sender compacted is
// copied with its gaps.
//
// When raft takes the snapshot, the partition's log start rises to the
// sender's, if that is higher (takePending), as a Kafka follower takes its
// leader's log start: a DeleteRecords entry the snapshot is past (the
// sender's raft log moved beyond it: retention, or compaction on a
// compact,delete topic) is never applied here, yet its start holds.
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
	if err := s.follow(); err != nil {
		return err
	}
	s.mu.Lock()
	commit := s.state.commit
	p := s.pending
	s.mu.Unlock()
	s.idx.RLock()
	first := s.first
	fresh := len(s.anchors) == 0
	s.idx.RUnlock()
	if commit >= index {
		return fmt.Errorf("replica: snapshot at %d is not past the commit index %d", index, commit)
	}
	if fresh {
		// multiraft bootstraps every group before raft runs: a log with
		// no anchor has nothing to number the sender's batches from.
		return fmt.Errorf("%w: a log never started takes no snapshot data", ErrBadTransfer)
	}
	commit = max(commit, first-1)
	cut, err := s.HighWatermark(commit)
	if err != nil {
		return err
	}
	if cut > end {
		return fmt.Errorf("%w: the committed entries end at %d, past the snapshot's end %d", ErrBadTransfer, cut, end)
	}
	next := cut
	if p != nil && (p.restart || p.from == cut) {
		// An earlier copy's batches are kept: this one goes on after
		// them (up to the snapshot's end: past it, the batches are the
		// entries after the snapshot, which raft appends).
		next = max(cut, min(s.log.EndOffset(), end))
	}
	rc := &receive{s: s, index: index, term: term, end: end, commit: commit, cut: cut, next: next, cs: md.GetConfState()}
	req := binary.BigEndian.AppendUint64(nil, uint64(next))
	req = binary.BigEndian.AppendUint64(req, uint64(end))
	err = fetch(ctx, req, rc.payload)
	if err == nil {
		err = rc.finish()
	}
	if err != nil {
		s.abortTransfer()
	}
	return err
}

// receive is one transfer's state.
type receive struct {
	s           *Store
	index, term uint64
	end         int64
	commit      uint64
	// cut is where the committed entries end, next where the next batch
	// goes.
	cut, next int64
	cs        *pb.ConfState
	// started says the header came; start is the sender's log start it
	// carried, which the follower takes with the snapshot.
	started bool
	start   int64
}

// payload takes one payload of the sender's answer.
func (rc *receive) payload(p []byte) error {
	s := rc.s
	if len(p) == 0 {
		return fmt.Errorf("%w: an empty payload", ErrBadTransfer)
	}
	if !rc.started {
		if p[0] != payloadHeader || len(p) != headerSize {
			return fmt.Errorf("%w: the answer does not start with a header", ErrBadTransfer)
		}
		rc.started = true
		start, first := int64(binary.BigEndian.Uint64(p[1:])), int64(binary.BigEndian.Uint64(p[9:]))
		if start < 0 || start > rc.end {
			return fmt.Errorf("%w: the sender starts at %d, past the snapshot's end %d", ErrBadTransfer, start, rc.end)
		}
		// The batches begin where they were asked for, or past it, at
		// the sender's start or the base of the batch holding it.
		if first < rc.next || first > max(rc.next, start) {
			return fmt.Errorf("%w: the sender's batches begin at %d, asked from %d, its log start %d", ErrBadTransfer, first, rc.next, start)
		}
		rc.start = start
		if first > rc.next {
			rc.next = first
			return s.restartForSnapshot(rc, first)
		}
		return s.prepareCopy(rc)
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
// its base offset (at or past the next one wanted: the sender's compaction
// leaves gaps), its record count (at most its offsets), and the end.
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
		if b.BaseOffset() < rc.next {
			return nil, fmt.Errorf("%w: a batch at %d where %d is next", ErrBadTransfer, b.BaseOffset(), rc.next)
		}
		// A batch past rc.next, or with fewer records than offsets (none,
		// even), is the sender's compaction: below the snapshot nothing
		// is a raft entry, so its gaps renumber nothing.
		if b.LastOffsetDelta() < 0 || int64(b.NumRecords()) > int64(b.LastOffsetDelta())+1 {
			return nil, fmt.Errorf("%w: the batch at %d holds %d records for %d offsets", ErrBadTransfer, b.BaseOffset(), b.NumRecords(), int64(b.LastOffsetDelta())+1)
		}
		if b.NextOffset() > rc.end || b.NextOffset() <= b.BaseOffset() {
			return nil, fmt.Errorf("%w: the batch at %d ends at %d, past the snapshot's end %d", ErrBadTransfer, b.BaseOffset(), b.NextOffset(), rc.end)
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
	if p := s.pending; p == nil || p.index != rc.index || p.term != rc.term || p.end != rc.end || s.log.EndOffset() != rc.end {
		return fmt.Errorf("%w: the partition ends at %d after the copy, the snapshot at %d", ErrBadTransfer, s.log.EndOffset(), rc.end)
	}
	s.pending.complete = true
	return nil
}

// storeRaw appends checked batches of the sender past the raft log (no
// entry of it: the install says so, install.go), keeping their epochs (and
// the epoch checkpoint with them), synced before it returns.
func (s *Store) storeRaw(batches []record.Batch) error {
	if len(batches) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if end := s.log.EndOffset(); batches[0].BaseOffset() < end {
		return fmt.Errorf("%w: a batch at %d, the partition ends at %d", ErrBadTransfer, batches[0].BaseOffset(), end)
	}
	raw := make([][]byte, len(batches))
	for i, b := range batches {
		raw[i] = b
		if err := s.assignEpoch(max(b.PartitionLeaderEpoch(), 0), b.BaseOffset()); err != nil {
			return err
		}
	}
	// At their own offsets, the sender's bytes unchanged (epochs too),
	// compaction's gaps kept.
	if _, err := s.p.AppendAsFollower(raw); err != nil {
		return err
	}
	return s.p.Sync()
}
