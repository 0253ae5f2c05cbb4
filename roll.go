package seglog

// Roll seals the active segment now and starts an empty one at the end of
// the log, as Kafka's roll does; on an empty active segment it does
// nothing. Retention uses it to delete an active segment whose records
// have all expired: rolling first makes it an ordinary sealed segment that
// DeleteBefore can remove while appends continue in the new one.
func (l *Log) Roll() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writable(); err != nil {
		return err
	}
	// Deferred group-commit batches belong to the segment being sealed;
	// publishing them first makes next the true end.
	if err := l.publishLocked(); err != nil {
		return err
	}
	if l.segs.active.Size() == 0 {
		return nil
	}
	return l.roll(l.mu.next)
}
