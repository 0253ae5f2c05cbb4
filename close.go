package seglog

import (
	"errors"

	"github.com/seglog/seglog/vfs"
)

// Close flushes every record to disk, closes the segments (trimming the
// active segment's indexes), writes the recovery-point and log-start
// checkpoints and the clean-shutdown marker, and releases the directory
// lock. The next Open then trusts the files as they are. After a failed
// fsync or write, Close leaves no marker, so the next Open recovers. A
// read-only Log's Close only releases its files. Every call after the
// first returns ErrClosed.
func (l *Log) Close() error {
	if l.ro != nil {
		return l.ro.close()
	}
	l.swapMu.Lock() // a swap under way finishes first
	defer l.swapMu.Unlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.mu.closed = true
	l.mu.Unlock()
	l.stopFlusher()
	l.delayed.releaseAll()

	var errs []error
	l.mu.Lock()
	if l.failure.Load() == nil {
		if err := l.publishLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	l.mu.Unlock()
	if l.failure.Load() == nil {
		if err := l.flushAll(l.end.Load(), false); err != nil {
			errs = append(errs, err)
		}
	}
	// Wake appenders waiting for a group commit; they get ErrClosed.
	l.commit.mu.Lock()
	if l.commit.err == nil {
		l.commit.err = ErrClosed
	}
	l.commit.cond.Broadcast()
	l.commit.mu.Unlock()

	l.ckptMu.Lock() // the checkpoints are written below
	defer l.ckptMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.segs.Lock()
	if err := l.closeSegments(); err != nil {
		errs = append(errs, err)
	}
	l.segs.Unlock()
	if l.failure.Load() == nil && len(errs) == 0 {
		end := l.end.Load()
		if err := l.writeOffsetCheckpoint(RecoveryPointFile, end); err != nil {
			errs = append(errs, err)
		}
		if err := l.writeOffsetCheckpoint(LogStartOffsetFile, l.start.Load()); err != nil {
			errs = append(errs, err)
		}
		if len(errs) == 0 && l.opts.checkpoints == nil {
			if err := vfs.WriteFileAtomic(l.fs, l.path(CleanShutdownFile), []byte(`{"version":0,"brokerEpoch":-1}`)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if f := l.failure.Load(); f != nil {
		// The records since the failure are not durable: say so, or an
		// embedder keeping the marker itself (package store) writes it.
		errs = append(errs, *f)
	}
	if err := l.lock.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
