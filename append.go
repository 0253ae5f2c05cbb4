package seglog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
)

// ErrWriteFailed wraps an error from writing a batch to a segment. The
// segment may then hold a partial batch, so, as after a failed fsync, the
// Log refuses appends until it is reopened; recovery truncates the partial
// batch.
var ErrWriteFailed = errors.New("seglog: write failed; reopen the log to recover")

// ErrAppendTruncated: under SyncAlways, TruncateTo removed the batch before
// the sync that would have acknowledged it. Nothing of it is in the log.
var ErrAppendTruncated = errors.New("seglog: batch truncated before it was synced")

// builders are reused across Append calls: a warm builder encodes records
// without allocating, and compression runs outside the Log's lock, so
// concurrent appenders compress in parallel.
var builders = sync.Pool{New: func() any { return record.NewBuilder(record.None) }}

// iterators keep their decompression buffers between AppendBatch calls.
var iterators = sync.Pool{New: func() any { return new(record.Iterator) }}

// Append stores recs as one batch, compressed with Options.Compression, and
// returns the offsets assigned to it. A record's Offset field is ignored; a
// zero Timestamp means "now" (store a literal 0 with AppendBatch). Under
// SyncAlways, Append returns once the batch is on disk. recs is only read,
// and nothing of it is retained. No records, or one that cannot be encoded,
// is ErrInvalidRecord; a batch over MaxBatchBytes is ErrBatchTooLarge. Once
// a write or fsync has failed (ErrWriteFailed, ErrSyncFailed) every append
// returns that error until the Log is reopened.
func (l *Log) Append(recs ...record.Record) (AppendInfo, error) {
	return l.appendRecords(l.opts.LeaderEpoch, true, recs)
}

// appendRecords encodes recs into one batch stamped with epoch and stores
// it: Append and AppendEpoch. zeroIsNow says a zero Timestamp means "now"
// (Append) rather than a literal 0 (AppendEpoch, whose callers keep their
// own clock in the record).
func (l *Log) appendRecords(epoch int32, zeroIsNow bool, recs []record.Record) (AppendInfo, error) {
	if l.ro != nil {
		return AppendInfo{}, ErrReadOnly
	}
	if len(recs) == 0 {
		return AppendInfo{}, fmt.Errorf("%w: no records", ErrInvalidRecord)
	}
	bld := builders.Get().(*record.Builder)
	defer builders.Put(bld)
	bld.Reset()
	lim := l.lim()
	bld.SetCodec(lim.Compression)
	bld.SetBaseOffset(0)
	bld.SetPartitionLeaderEpoch(epoch)
	var now int64
	if zeroIsNow || l.opts.TimestampType == record.LogAppendTime {
		now = l.opts.Clock.Now().UnixMilli()
	}
	if l.opts.TimestampType == record.LogAppendTime {
		bld.SetLogAppendTime(now)
	} else {
		bld.SetLogAppendTime(-1)
	}
	for i := range recs {
		ts := recs[i].Timestamp
		if ts == 0 && zeroIsNow {
			ts = now
		}
		// AddAt reads the record in place: copying the five-word struct
		// per record was a fifth of encoding a 100-byte one.
		if err := bld.AddAt(int64(i), ts, &recs[i]); err != nil {
			return AppendInfo{}, fmt.Errorf("%w: record %d: %w", ErrInvalidRecord, i, err)
		}
	}
	if n := bld.UncompressedSize(); n > l.maxDecompressed() {
		// It might compress under MaxBatchBytes, but no reader would be
		// allowed to decompress it.
		return AppendInfo{}, fmt.Errorf("%w: %d bytes uncompressed, readers decompress at most %d", ErrBatchTooLarge, n, l.maxDecompressed())
	}
	b, err := bld.Build()
	if err != nil {
		return AppendInfo{}, fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	if len(b) > lim.MaxBatchBytes {
		return AppendInfo{}, fmt.Errorf("%w: %d bytes, limit %d", ErrBatchTooLarge, len(b), lim.MaxBatchBytes)
	}
	return l.store(b, b.MaxTimestamp(), false)
}

// AppendBatch stores a producer's batch as it arrived, the way a Kafka
// leader does: it checks the batch (CRC, framing, every record, the
// producer rules: base offset 0, lastOffsetDelta+1 == count > 0, no control
// batch, a sequence for an idempotent producer), then rewrites it IN PLACE —
// base offset, partition leader epoch, and the max timestamp (recomputed
// from the records under CreateTime, the append time under LogAppendTime;
// the CRC is recomputed only when it changed). A refused batch leaves the
// log untouched; the error matches ErrBatchTooLarge, or is a *BatchError
// (ErrCorruptBatch; record.ErrInvalidProducerBatch for a producer rule).
func (l *Log) AppendBatch(batch []byte) (AppendInfo, error) {
	if l.ro != nil {
		return AppendInfo{}, ErrReadOnly
	}
	b := record.Batch(batch)
	if err := record.ValidateProducerBatch(b, l.lim().MaxBatchBytes); err != nil {
		if errors.Is(err, ErrBatchTooLarge) {
			return AppendInfo{}, err
		}
		return AppendInfo{}, badBatch(err)
	}
	// Walking the records checks their framing and count, and yields the
	// max timestamp a CreateTime batch must carry.
	it := iterators.Get().(*record.Iterator)
	it.MaxDecompressed = l.maxDecompressed()
	maxTS, err := record.MaxRecordTimestamp(b, it)
	iterators.Put(it)
	if err != nil {
		return AppendInfo{}, badBatch(err)
	}
	b.SetPartitionLeaderEpoch(l.opts.LeaderEpoch)
	return l.store(b, maxTS, true)
}

// maxDecompressed is the decompression cap for this log's batches: record's
// default (8 × Kafka's max batch) or, for a log that allows larger batches,
// the same multiple of its own limit, so every batch the log accepts can be
// read back.
func (l *Log) maxDecompressed() int {
	return max(record.DefaultMaxDecompressed, 8*l.readBatchBytes())
}

// store assigns offsets to b and writes it to the active segment, rolling
// first if needed; then it waits for durability as the Sync mode says.
// stamp says whether b's max timestamp must be set (producer batches).
func (l *Log) store(b record.Batch, maxTS int64, stamp bool) (AppendInfo, error) {
	l.mu.Lock()
	if err := l.writable(); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, err
	}
	now := l.opts.Clock.Now()
	if stamp {
		if l.opts.TimestampType == record.LogAppendTime {
			b.SetMaxTimestamp(now.UnixMilli(), record.LogAppendTime)
		} else {
			b.SetMaxTimestamp(maxTS, record.CreateTime)
		}
	}
	info, err := l.appendLocked(b, now)
	if err != nil {
		l.mu.Unlock()
		return AppendInfo{}, err
	}
	return info, l.finishAppend(info.LastOffset + 1)
}

// appendLocked gives b the next offset and writes it to the active
// segment, rolling first if needed; under SyncAlways it only joins the
// pending group: the group commit writes every waiting appender's batch
// with one write call and then syncs (publishLocked, syncActive). l.mu is
// held. A failure after which bytes may have been written fails the log
// (ErrWriteFailed) until it is reopened; one refused before anything was
// written (segment.ErrBadAppend, ErrPreallocate, a roll that failed)
// leaves it intact.
func (l *Log) appendLocked(b record.Batch, now time.Time) (AppendInfo, error) {
	if b.BaseOffset() != l.mu.next {
		// Written only when it differs: a batch stamped beforehand
		// (AppendEpochBatches) may be read meanwhile by its sender.
		b.SetBaseOffset(l.mu.next)
	}
	if err := l.maybeRoll(b, now); err != nil {
		return AppendInfo{}, err
	}
	var err error
	if l.opts.Sync == SyncAlways {
		err = l.segs.active.AppendDeferred(b)
	} else {
		err = l.segs.active.Append(b)
	}
	if err != nil {
		if errors.Is(err, segment.ErrBadAppend) || errors.Is(err, segment.ErrPreallocate) {
			return AppendInfo{}, err
		}
		err = fmt.Errorf("%w: %w", ErrWriteFailed, err)
		l.failure.CompareAndSwap(nil, &err)
		return AppendInfo{}, *l.failure.Load()
	}
	l.mu.next = b.NextOffset()
	if l.opts.Sync == SyncPeriodic && l.opts.SyncBytes > 0 {
		l.mu.dirtyBytes += int64(len(b))
	}
	return AppendInfo{FirstOffset: b.BaseOffset(), LastOffset: b.LastOffset(), MaxTimestamp: b.MaxTimestamp(), Bytes: len(b)}, nil
}

// finishAppend ends an append call that stored batches up to target (the
// offset after its last) with appendLocked: it publishes them (under
// SyncAlways the call counts as one appender of the group commit, however
// many batches it stored), releases l.mu, and waits for durability as the
// Sync mode says.
func (l *Log) finishAppend(target int64) error {
	if l.opts.Sync == SyncAlways {
		l.commit.appends.Add(1)
	} else {
		l.end.Store(l.mu.next)
	}
	gen := l.truncations.current()
	kick := l.opts.Sync == SyncPeriodic && l.opts.SyncBytes > 0 && l.mu.dirtyBytes >= l.opts.SyncBytes
	l.mu.Unlock()
	switch {
	case l.opts.Sync == SyncAlways:
		return l.waitDurable(target, gen)
	case kick:
		l.kickFlusher(target)
	}
	return nil
}

// maybeRoll seals the active segment and starts a new one at b's base
// offset when b would not fit, the segment is old enough, an index is full,
// or b's offsets overflow the segment's 32-bit relative range. Called with mu.
func (l *Log) maybeRoll(b record.Batch, now time.Time) error {
	check := segment.RollCheck{
		NextBatchSize:   len(b),
		LastOffset:      b.LastOffset(),
		MaxTimestamp:    b.MaxTimestamp(),
		Now:             now,
		MaxSegmentBytes: l.lim().SegmentBytes,
		MaxAge:          l.opts.SegmentAge,
		Jitter:          l.mu.activeJitter,
	}
	if !l.segs.active.ShouldRoll(check) {
		return nil
	}
	return l.roll(b.BaseOffset())
}

// roll makes a new active segment at base. Under SyncAlways the old segment
// is synced before anything lands in the new one, so a crash can never keep
// a newer segment while losing acknowledged bytes of an older one; otherwise
// the flusher syncs it in the background, as Kafka does. Called with mu.
func (l *Log) roll(base int64) error {
	if err := l.publishLocked(); err != nil {
		return err
	}
	old := l.segs.active
	if old.Size() == 0 && old.BaseOffset() == base {
		return nil
	}
	began := time.Now()
	// The work on the old segment's files (trims, index syncs) is left to
	// its Flush: below under SyncAlways, by the flusher otherwise, before
	// the recovery point passes it. Done here, a truncate or fsync waits
	// for the filesystem's journal behind the previous segment's flush in
	// progress, stalling appends for up to 0.7 s (docs/benchmarks.md,
	// "Issue 32: the roll's stall"). Unless the point already trusts the
	// whole of the old segment (a flush reached the end of the log): then
	// a crash before that Flush would leave it trusted with untrimmed,
	// unsynced indexes, so it is sealed in full now.
	seal := old.SealDeferred
	if l.mu.recoveryPoint >= base {
		seal = old.Seal
	}
	if err := seal(); err != nil {
		return fmt.Errorf("seglog: sealing %s: %w", old.LogPath(), err)
	}
	if l.opts.Sync == SyncAlways {
		if err := old.Flush(); err != nil {
			return l.fail(err)
		}
	}
	// The directory sync too, but under SyncAlways, whose next append
	// syncs the new segment at once.
	seg, err := l.newSegment(base, l.opts.Sync != SyncAlways)
	if err != nil {
		return err
	}
	l.segs.Lock()
	if old.Size() == 0 {
		// An empty segment (left by truncation or retention) has nothing to
		// keep; replacing it avoids a gap-less pair of segments.
		l.segs.tree.Delete(probe(old.BaseOffset()))
	}
	l.segs.tree.ReplaceOrInsert(segItem{base: base, seg: seg})
	l.segs.active = seg
	l.segs.Unlock()
	if old.Size() == 0 {
		l.retire(old)
	}
	l.mu.activeJitter = l.drawJitter()
	if l.opts.Sync == SyncAlways {
		if base > l.mu.recoveryPoint {
			l.mu.recoveryPoint = base
		}
	} else {
		l.kickFlusher(base)
	}
	l.countRoll(began)
	return nil
}

// publishLocked writes the batches deferred for a group commit and
// publishes them. A failed write leaves the log refusing appends, as any
// failed write does. Called with mu.
func (l *Log) publishLocked() error {
	if err := l.segs.active.WriteDeferred(); err != nil {
		err = fmt.Errorf("%w: %w", ErrWriteFailed, err)
		l.failure.CompareAndSwap(nil, &err)
		return *l.failure.Load()
	}
	l.end.Store(l.mu.next)
	return nil
}

// createSegment creates a segment's files at base and makes their directory
// entries durable. Files already there under that name belong to no segment
// of the log (it would be in the tree otherwise), so they are replaced, as
// Kafka does when rolling onto a leftover empty segment.
func (l *Log) createSegment(base int64) (*segment.Segment, error) {
	return l.newSegment(base, false)
}

// newSegment is createSegment, with the directory's sync left to the next
// flush of segments when deferSync is set.
func (l *Log) newSegment(base int64, deferSync bool) (*segment.Segment, error) {
	seg, err := segment.Create(l.fs, l.dir, base, l.segmentOptions())
	if errors.Is(err, segment.ErrExists) {
		for _, suffix := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix, segment.TxnIndexSuffix} {
			if rerr := l.fs.Remove(l.path(segment.FileName(base, suffix))); rerr != nil && !isNotExist(rerr) {
				return nil, err
			}
		}
		seg, err = segment.Create(l.fs, l.dir, base, l.segmentOptions())
	}
	if err != nil {
		return nil, err
	}
	if deferSync {
		l.dirSyncPending.Store(true)
		return seg, nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		seg.Close()
		return nil, err
	}
	return seg, nil
}

// retire removes a segment that has left the tree: its files are renamed
// to .deleted at once and unlinked when the last reader lets go.
func (l *Log) retire(s *segment.Segment) {
	if err := s.Remove(); err != nil {
		l.logger.Warn("seglog: removing segment", "file", s.LogPath(), "err", err)
	}
	l.delayed.hold(l, s)
	s.Release()
}

// drawJitter picks the active segment's roll jitter, uniform in
// [0, SegmentJitter), drawn once per segment as Kafka does.
func (l *Log) drawJitter() time.Duration {
	if l.opts.SegmentJitter <= 0 {
		return 0
	}
	j := l.opts.SegmentJitter
	if j > l.opts.SegmentAge {
		j = l.opts.SegmentAge
	}
	return time.Duration(rand.Int64N(int64(j)))
}
