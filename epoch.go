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
