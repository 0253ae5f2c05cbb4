package seglog

import (
	"errors"
	"fmt"
	"time"

	"github.com/seglog/seglog/layout"
)

// Open opens the log in dir, creating the directory and an empty log if
// needed. It creates a log only in an absent or empty directory: a
// directory holding subdirectories (a Kafka log.dir) or files that are not
// log files is refused with a *NotALogError (ErrNotALog) and nothing is
// written to it; so is an absent directory inside a log's directory. It takes the directory's lock: a second Open of the same
// directory, in this process or another, fails with ErrLocked until Close.
//
// After a clean Close the segments are trusted as they are. Otherwise every
// segment from the one holding the recovery point on is scanned: batches are
// checked (framing, CRC-32C, increasing offsets), indexes rebuilt, and the
// log cut at the first invalid or partial batch. Open deletes no valid
// byte doing so, which is stricter than Kafka: only a torn tail (bytes
// after the damage that hold no valid batch) is cut away (logged); when
// valid batches follow the damage, the bytes from the damage to the end of
// the file are first copied, byte for byte and durably, into a quarantine
// file (Quarantine, "<base>-<byte>.quarantine" beside the segment), and
// every later segment, which Kafka deletes, is renamed to one if it holds a
// valid batch (deleted only if it holds none). Each quarantine is logged
// (WARN) and handed to Options.OnQuarantine; fsck lists quarantine files
// and `seglog dump FILE` reads them. Damage found below the recovery
// point — data that had been synced — is not cut: Open fails with a
// *CorruptionError naming the file and byte position and changes nothing
// (see fsck). A log-start-offset checkpoint beyond the end of the segments
// is not a reason to delete them (Kafka deletes them all): Open fails with
// a *LogStartError (ErrLogStartBeyondEnd). Leftover .deleted, .cleaned and
// .swap files are resolved as Kafka does (package layout), after those
// checks.
func Open(dir string, opts Options) (*Log, error) {
	if opts.ReadOnly {
		return openReadOnly(dir, opts)
	}
	began := time.Now()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	fs := opts.FS
	if err := refuseInLogDir(fs, dir, opts); err != nil {
		return nil, err
	}
	if err := refuseInRaftLog(fs, dir, opts); err != nil {
		return nil, err
	}
	exists, err := checkLogDir(fs, dir)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := checkNotInLog(fs, dir); err != nil {
			return nil, err
		}
		if err := fs.MkdirAll(dir); err != nil {
			return nil, err
		}
	}
	lockPath := dir + "/" + LockFile
	_, statErr := fs.Stat(lockPath)
	if statErr != nil && !isNotExist(statErr) {
		return nil, statErr
	}
	madeLock := statErr != nil && !opts.lockHeld
	lock, err := lockDir(fs, dir, opts.lockHeld)
	if err != nil {
		if h, named, held := layout.HolderOf(err); named {
			return nil, fmt.Errorf("seglog: directory is locked by another log: %s is held by %s: %w", dir, h, err)
		} else if held {
			return nil, fmt.Errorf("seglog: directory is locked by another log: %s: %w", dir, err)
		}
		return nil, err
	}
	l := newLog(dir, fs, opts, lock)
	if err := l.load(); err != nil {
		l.closeSegments()
		if madeLock {
			// A refused Open leaves the directory as it found it: the lock
			// file is removed while still held, so no other opener can be
			// holding it.
			fs.Remove(lockPath)
		}
		lock.Close()
		return nil, err
	}
	l.commit.init(l.mu.recoveryPoint)
	l.mu.activeJitter = l.drawJitter()
	l.startFlusher()
	l.countOpen(began, l.recovered)
	return l, nil
}

// closeSegments closes every segment in the tree (used when Open fails and
// by Close).
//
// The active segment is sealed (its final time-index entry written, both
// indexes trimmed, as Kafka's close does) and every segment then loses the
// Log's reference rather than being closed outright: a Slice or an
// iteration still holding one keeps its descriptor until it lets go, so a
// send in flight never meets a closed (or reused) descriptor.
func (l *Log) closeSegments() error {
	var errs []error
	l.segs.tree.Ascend(func(it segItem) bool {
		if !it.seg.IsSealed() {
			if err := it.seg.Seal(); err != nil {
				errs = append(errs, err)
			} else if l.opts.Preallocate && l.failure.Load() == nil {
				// Sealing trimmed a preallocated .log: the trim must be
				// durable before the clean-shutdown marker vouches for
				// the file's size.
				if err := it.seg.Flush(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		it.seg.Release()
		return true
	})
	return errors.Join(errs...)
}
