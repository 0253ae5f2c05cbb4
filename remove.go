package seglog

import "fmt"

// DeleteBefore makes offset the log's start offset and removes every
// segment whose records all lie below it: the primitive that retention and
// Kafka's DeleteRecords stand on. An offset past the end is
// ErrOffsetOutOfRange; one at or below the start moves nothing, but still
// removes any segment wholly below the start that a crash between an
// earlier call's checkpoint and its removals left behind. Records
// below the new start are unreadable at once even where their segment stays
// (the one holding the new start): Records and OffsetForTime called after
// DeleteBefore returned never return them, and Read refuses offsets below
// the start (a slice may still begin with the batch holding the start,
// whose earlier records a consumer skips, as in Kafka). A removed segment's files
// are renamed to .deleted now and unlinked when the last reader holding it
// lets go, so a Slice made before keeps its bytes, as a Kafka fetch in
// flight does; an iteration that reaches a record below the new start ends
// with ErrOffsetOutOfRange instead of yielding it. When the new start reaches the end, the
// active segment is replaced by an empty one at the end. The new start is
// written to the log-start-offset checkpoint (durably) before anything is
// removed, so no crash brings the removed records back, and only once the
// records below it are durable (synced first if they are not), so no crash
// leaves the checkpoint beyond the end of the log. It returns how many
// segments were removed.
func (l *Log) DeleteBefore(offset int64) (int, error) {
	l.swapMu.Lock()
	defer l.swapMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return 0, err
	}
	if err := l.publishLocked(); err != nil {
		return 0, err
	}
	end := l.end.Load()
	if offset > end {
		return 0, fmt.Errorf("%w: %d is past the end %d", ErrOffsetOutOfRange, offset, end)
	}
	if start := l.start.Load(); offset <= start {
		// Nothing moves, but a crash (or a kill) after an earlier call's
		// checkpoint and before its removals left segments wholly below
		// the start: they go now, as Kafka's next retention pass removes
		// them by its log-start-offset rule. Usually there are none and
		// nothing below touches the disk.
		offset = start
	} else {
		// The records below the new start are made durable first: were
		// they lost to a crash after the checkpoint, the start would lie
		// beyond the end, which Open refuses (ErrLogStartBeyondEnd).
		if err := l.syncBelow(offset); err != nil {
			return 0, err
		}
		// The checkpoint goes next: after a crash the start must not
		// move back and expose records a caller was told are gone.
		if err := l.writeOffsetCheckpoint(LogStartOffsetFile, offset); err != nil {
			return 0, err
		}
		l.start.Store(offset)
	}
	if offset == end && l.segs.active.Size() > 0 {
		// Everything goes: start an empty active segment at the end so the
		// old one can be removed like any other.
		if err := l.roll(end); err != nil {
			return 0, err
		}
	}
	removed := 0
	for {
		l.segs.Lock()
		first, ok := l.segs.tree.Min()
		var upper int64
		if next := l.nextSegment(first.base); ok && next != nil {
			upper = next.BaseOffset()
		}
		if !ok || first.seg == l.segs.active || upper > offset {
			l.segs.Unlock()
			break
		}
		l.segs.tree.Delete(first)
		l.segs.Unlock()
		l.retire(first.seg)
		removed++
	}
	return removed, nil
}

// syncBelow makes every record below offset durable: it syncs the
// segments from the one holding the recovery point to the one holding
// offset-1. The recovery point is left for the flusher to advance (it
// knows the rules of preallocated and rolled segments). Called with mu.
func (l *Log) syncBelow(offset int64) error {
	if offset <= l.mu.recoveryPoint {
		return nil
	}
	segs := l.acquireRange(l.mu.recoveryPoint, offset)
	defer func() {
		for _, s := range segs {
			s.Release()
		}
	}()
	if err := l.flushSegments(segs); err != nil {
		return l.fail(err)
	}
	return nil
}
