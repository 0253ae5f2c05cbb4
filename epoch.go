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
// The batch is checked as AppendBatch checks it (size, CRC, framing, every
// record, lastOffsetDelta+1 == count > 0) except for the producer's rules:
// its base offset is ignored, and control batches are allowed (raft's own
// entries are stored as control batches). It is stamped in place. A
// negative epoch is ErrInvalidRecord; a batch over MaxBatchBytes or
// SegmentBytes is ErrBatchTooLarge; a bad batch is a *BatchError
// (ErrCorruptBatch). A refused batch leaves the log untouched.
func (l *Log) AppendEpochBatch(epoch int32, batch []byte) (AppendInfo, error) {
	if l.ro != nil {
		return AppendInfo{}, ErrReadOnly
	}
	if epoch < 0 {
		return AppendInfo{}, fmt.Errorf("%w: negative leader epoch %d", ErrInvalidRecord, epoch)
	}
	b := record.Batch(batch)
	if max := l.lim().MaxBatchBytes; len(b) > max {
		return AppendInfo{}, fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, len(b), max)
	}
	if err := b.Validate(); err != nil {
		return AppendInfo{}, badBatch(err)
	}
	if b.NumRecords() == 0 || int64(b.LastOffsetDelta())+1 != int64(b.NumRecords()) {
		return AppendInfo{}, badBatch(fmt.Errorf("%w: lastOffsetDelta %d with %d records", record.ErrInvalidProducerBatch, b.LastOffsetDelta(), b.NumRecords()))
	}
	// The walk checks every record's framing and that the count is true.
	it := iterators.Get().(*record.Iterator)
	it.MaxDecompressed = l.maxDecompressed()
	_, err := record.MaxRecordTimestamp(b, it)
	iterators.Put(it)
	if err != nil {
		return AppendInfo{}, badBatch(err)
	}
	b.SetPartitionLeaderEpoch(epoch)
	return l.store(b, b.MaxTimestamp(), false)
}
