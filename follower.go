package seglog

import (
	"errors"
	"fmt"

	"github.com/seglog/seglog/record"
)

// ErrOverlap: a batch given to AppendAsFollower starts below the log's end
// (or below the end of the batch before it in the call), so it would
// overlap records already there. *OverlapError matches it.
var ErrOverlap = errors.New("seglog: batch overlaps the log")

// OverlapError is AppendAsFollower's refusal of a batch that starts below
// where the log (with the call's batches before it) ends.
type OverlapError struct {
	// BaseOffset is the refused batch's base offset; End the offset it
	// had to be at or above.
	BaseOffset, End int64
}

// Error says which batch overlapped where.
func (e *OverlapError) Error() string {
	return fmt.Sprintf("seglog: a batch at offset %d overlaps the log, which ends at %d", e.BaseOffset, e.End)
}

// Is makes the error match ErrOverlap.
func (e *OverlapError) Is(target error) bool { return target == ErrOverlap }

// AppendAsFollower stores batches a replica copies from its leader at the
// offsets they carry, as Kafka's appendAsFollower does: nothing of a batch
// is changed (base offset, leader epoch, timestamps), so the replica holds
// the leader's bytes. Each base offset must be at or above the log's end
// and the end of the batch before it, else nothing is stored and the error
// is an *OverlapError (ErrOverlap); a base offset above is a gap, as the
// leader's compaction leaves between batches, and so is a compacted batch
// holding fewer records than offsets (even none). Before a gap is stored
// the log is recorded as compacted (its gaps are then compaction's, not
// missing data, for readers and recovery), as a swap of cleaned segments
// does.
//
// Every batch is checked as AppendEpochBatch checks it (CRC,
// framing, every record; control batches allowed) but for its record
// count, which may be below lastOffsetDelta+1, and is checked before any
// is stored. The batches are durable together as AppendEpochBatches's
// (under SyncAlways, one group commit). A write that fails midway returns,
// with its error, the AppendInfo of the batches stored before it.
func (l *Log) AppendAsFollower(batches [][]byte) ([]AppendInfo, error) {
	if l.ro != nil {
		return nil, ErrReadOnly
	}
	if len(batches) == 0 {
		return nil, nil
	}
	gaps := false
	for i, raw := range batches {
		b := record.Batch(raw)
		if err := l.checkFollowerBatch(b); err != nil {
			return nil, err
		}
		if int64(b.NumRecords()) != int64(b.LastOffsetDelta())+1 {
			gaps = true
		}
		if i > 0 {
			prev := record.Batch(batches[i-1]).NextOffset()
			if b.BaseOffset() < prev {
				return nil, &OverlapError{BaseOffset: b.BaseOffset(), End: prev}
			}
			gaps = gaps || b.BaseOffset() > prev
		}
	}
	l.mu.Lock()
	next := l.mu.next
	l.mu.Unlock()
	if first := record.Batch(batches[0]).BaseOffset(); gaps || first > next {
		// Recorded before the gap can be seen. (An append beside this
		// one may move the end meanwhile: then the call is refused below,
		// and the checkpoint says no more than a compaction would.)
		l.swapMu.Lock()
		err := l.markCompacted()
		l.swapMu.Unlock()
		if err != nil {
			return nil, err
		}
	}
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	if first := record.Batch(batches[0]).BaseOffset(); first < l.mu.next {
		end := l.mu.next
		l.mu.Unlock()
		return nil, &OverlapError{BaseOffset: first, End: end}
	}
	now := l.opts.Clock.Now()
	infos := make([]AppendInfo, 0, len(batches))
	var err error
	for _, raw := range batches {
		// appendLocked stamps the log's next offset: the batch's own.
		prev := l.mu.next
		l.mu.next = record.Batch(raw).BaseOffset()
		var info AppendInfo
		if info, err = l.appendLocked(record.Batch(raw), now); err != nil {
			l.mu.next = prev
			break
		}
		infos = append(infos, info)
	}
	return l.endAppend(infos, err)
}

// checkFollowerBatch is AppendAsFollower's check of one batch:
// checkEpochBatch's but for the record count (compaction leaves fewer
// records than offsets), and the offsets in range.
func (l *Log) checkFollowerBatch(b record.Batch) error {
	return l.checkReplicatedBatch(b, func() error {
		if b.BaseOffset() < 0 || b.LastOffsetDelta() < 0 || int64(b.NumRecords()) > int64(b.LastOffsetDelta())+1 || b.LastOffset() < b.BaseOffset() {
			return fmt.Errorf("%w: base offset %d, lastOffsetDelta %d with %d records", record.ErrInvalidProducerBatch, b.BaseOffset(), b.LastOffsetDelta(), b.NumRecords())
		}
		return nil
	})
}
