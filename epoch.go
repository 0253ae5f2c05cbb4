package seglog

import (
	"fmt"

	"github.com/seglog/seglog/record"
)

// AppendEpoch is Append for a replicated log whose leader epoch changes
// while it is open, as a Raft log's term does: it stores recs as one batch
// stamped with epoch instead of Options.LeaderEpoch. Record timestamps are
// stored as given (a zero Timestamp is 0, not "now"), so a caller that
// keeps its own clock in the record gets it back exactly.
func (l *Log) AppendEpoch(epoch int32, recs ...record.Record) (AppendInfo, error) {
	if l.ro != nil {
		return AppendInfo{}, ErrReadOnly
	}
	if epoch < 0 {
		return AppendInfo{}, fmt.Errorf("%w: negative leader epoch %d", ErrInvalidRecord, epoch)
	}
	return l.appendRecords(epoch, false, recs)
}

// RestartAt empties the log and restarts it at offset, below, inside or
// past its current range: Kafka's truncateFullyAndStartAt, which a replica
// uses after installing a snapshot. StartOffset and EndOffset both become
// offset. It is durable before it returns, as TruncateTo is: every segment
// is removed and the log-start-offset and recovery-point checkpoints name
// offset. Readers it overtakes learn it as they learn of a TruncateTo. A
// negative offset is ErrOffsetOutOfRange.
func (l *Log) RestartAt(offset int64) error {
	// It removes sealed segments, as TruncateTo does: a swap's renames
	// and its change of the segment set must not straddle it.
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: negative offset %d", ErrOffsetOutOfRange, offset)
	}
	if err := l.publishLocked(); err != nil {
		return err
	}
	if end := l.segs.active.NextOffset(); offset > l.start.Load() && offset >= end {
		// Past the end the old records must reach the new start's
		// checkpoint intact (restartPastEnd). syncBelow takes flushMu,
		// so it runs before flushMu is held here; mu keeps appends out
		// until the restart is done.
		if err := l.syncBelow(end); err != nil {
			return err
		}
	}
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	// Everything from the start goes, so that is the lowest offset removed.
	cut := l.start.Load()
	l.truncations.begin()
	defer func() { l.truncations.finish(cut) }()
	if err := l.restartAt(offset); err != nil {
		err = fmt.Errorf("%w: restarting at %d: %w", ErrWriteFailed, offset, err)
		l.failure.CompareAndSwap(nil, &err)
		return *l.failure.Load()
	}
	end := l.segs.active.NextOffset()
	l.end.Store(end)
	l.mu.next = end
	l.mu.activeJitter = l.drawJitter()
	l.commit.lower(end)
	if l.mu.recoveryPoint != end {
		// Nothing is left below end, and nothing above it exists yet.
		l.mu.recoveryPoint = end
		if err := l.writeOffsetCheckpoint(RecoveryPointFile, end); err != nil {
			err = fmt.Errorf("%w: checkpointing the recovery point %d: %w", ErrWriteFailed, end, err)
			l.failure.CompareAndSwap(nil, &err)
			return *l.failure.Load()
		}
	}
	return nil
}

// AppendEpochBatch stores an encoded RecordBatch v2 as one batch of a
// replicated log, stamped with epoch (a Raft term) and the log's next
// offset: what a replica does with a batch its leader already checked.
// Every replica appending the same batches in the same order assigns the
// same offsets, and, as both fields lie outside the CRC, stores the same
// bytes; nothing else of the batch changes (its max timestamp is kept as
// it is, so replicas agree whatever their clocks).
//
// The batch is checked as AppendBatch checks it (CRC, framing, every
// record, lastOffsetDelta+1 == count > 0) except for the producer's rules:
// its base offset is ignored, and control batches are allowed (raft's own
// entries are stored as control batches). Nor is its size held to
// MaxBatchBytes: the limit bounds what a producer appends, and its
// leader applied it then; a replica keeps what its leader accepted,
// whatever max.message.bytes is by the time the batch reaches it (Kafka's
// follower append ignores the record size too). It is stamped in place;
// a field that holds its value already is not written, so a caller that
// stamped the batch beforehand (with the offset it will get) may let
// other goroutines read it meanwhile. A negative epoch is
// ErrInvalidRecord; a bad batch is a *BatchError (ErrCorruptBatch). A
// refused batch leaves the log untouched.
func (l *Log) AppendEpochBatch(epoch int32, batch []byte) (AppendInfo, error) {
	infos, err := l.AppendEpochBatches([]int32{epoch}, [][]byte{batch})
	if len(infos) == 1 {
		return infos[0], err
	}
	return AppendInfo{}, err
}

// AppendEpochBatches is AppendEpochBatch for several batches, batches[i]
// stamped with epochs[i], stored in order at consecutive offsets and made
// durable together: under SyncAlways, one group commit (one write and one
// fsync, and one more for each segment rolled on the way) instead of one
// per batch, as a raft follower storing the entries of an AppendEntries
// needs. Every batch is checked before any is stored, so a refused one
// leaves the log untouched. A write that fails midway returns, with its
// error, the AppendInfo of the batches stored before it.
func (l *Log) AppendEpochBatches(epochs []int32, batches [][]byte) ([]AppendInfo, error) {
	if l.ro != nil {
		return nil, ErrReadOnly
	}
	if len(epochs) != len(batches) {
		return nil, fmt.Errorf("%w: %d epochs for %d batches", ErrInvalidRecord, len(epochs), len(batches))
	}
	for i, b := range batches {
		if err := l.checkEpochBatch(epochs[i], b); err != nil {
			return nil, err
		}
	}
	return l.storeEpochBatches(epochs, batches)
}

// checkEpochBatch is AppendEpochBatch's check of one batch.
func (l *Log) checkEpochBatch(epoch int32, batch []byte) error {
	if epoch < 0 {
		return fmt.Errorf("%w: negative leader epoch %d", ErrInvalidRecord, epoch)
	}
	b := record.Batch(batch)
	return l.checkReplicatedBatch(b, func() error {
		if b.NumRecords() == 0 || int64(b.LastOffsetDelta())+1 != int64(b.NumRecords()) {
			return fmt.Errorf("%w: lastOffsetDelta %d with %d records", record.ErrInvalidProducerBatch, b.LastOffsetDelta(), b.NumRecords())
		}
		return nil
	})
}

// checkReplicatedBatch is the check AppendEpochBatches and
// AppendAsFollower make of a batch another replica wrote: CRC and
// framing, counts (their own rule, a *BatchError when it fails), and a
// walk of every record (framing, and that the count is true). Not its
// size against MaxBatchBytes (AppendEpochBatch): a follower behind its
// leader when a topic's max.message.bytes was lowered refused, for ever,
// the larger batches its leader had accepted before.
func (l *Log) checkReplicatedBatch(b record.Batch, counts func() error) error {
	if err := b.Validate(); err != nil {
		return badBatch(err)
	}
	if err := counts(); err != nil {
		return badBatch(err)
	}
	it := iterators.Get().(*record.Iterator)
	it.MaxDecompressed = l.maxDecompressed()
	_, err := record.MaxRecordTimestamp(b, it)
	iterators.Put(it)
	if err != nil {
		return badBatch(err)
	}
	return nil
}

// storeEpochBatches is store for checked batches that keep their max
// timestamps, several at once: each gets its epoch and the next offset
// (appendLocked), then the call waits once for them all (finishAppend).
func (l *Log) storeEpochBatches(epochs []int32, batches [][]byte) ([]AppendInfo, error) {
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	now := l.opts.Clock.Now()
	infos := make([]AppendInfo, 0, len(batches))
	var err error
	for i, raw := range batches {
		b := record.Batch(raw)
		if b.PartitionLeaderEpoch() != epochs[i] {
			b.SetPartitionLeaderEpoch(epochs[i])
		}
		var info AppendInfo
		if info, err = l.appendLocked(b, now); err != nil {
			break
		}
		infos = append(infos, info)
	}
	return l.endAppend(infos, err)
}

// endAppend ends a call that stored infos with appendLocked, l.mu held:
// with none stored it releases the lock and returns err; else
// finishAppend publishes them and waits as the sync mode says, and a
// failure there comes before err.
func (l *Log) endAppend(infos []AppendInfo, err error) ([]AppendInfo, error) {
	if len(infos) == 0 {
		l.mu.Unlock()
		return nil, err
	}
	if werr := l.finishAppend(infos[len(infos)-1].LastOffset + 1); werr != nil {
		return infos, werr
	}
	return infos, err
}
