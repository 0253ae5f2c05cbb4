package segment

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// Seal makes the segment read-only, as Kafka's onBecomeInactiveSegment: the
// running maximum timestamp is appended to the time index once more (even
// if the index is otherwise full), so its last entry is the segment's
// largest timestamp, and both index files are trimmed to their entries and
// made durable. Seal does not fsync the .log (see Flush). Sealing a sealed
// segment does nothing.
func (s *Segment) Seal() error { return s.seal(true) }

// SealDeferred makes the segment read-only as Seal does (its final
// time-index entry written) and leaves the work on its files to its next
// Flush or Close: trimming both indexes and the .log's reserved blocks,
// and syncing the trimmed index files. For a roll, whose segment the
// flusher syncs next anyway: on ext4 a truncate or an fsync in the
// appender's path waits for the journal, which the previous segment's
// flush in progress holds for hundreds of milliseconds (docs/benchmarks.md,
// "Issue 32: the roll's stall"). Until that Flush the segment must not be
// trusted across a crash, as its unsynced .log is not either (SyncPending).
func (s *Segment) SealDeferred() error { return s.seal(false) }

func (s *Segment) seal(now bool) error {
	if s.sealed.Load() {
		return nil
	}
	if s.removed.Load() {
		return fmt.Errorf("segment: seal %s: %w", s.LogPath(), ErrClosed)
	}
	if err := s.WriteDeferred(); err != nil {
		return err
	}
	if !s.tailLoaded.Load() {
		if err := s.loadTail(); err != nil {
			return err
		}
	}
	if ts := s.maxTS.Load(); ts >= 0 {
		if err := s.timeIdx.MaybeAppend(ts, s.maxTSOffset, true); err != nil {
			return err
		}
	}
	if !now {
		s.sealMu.Lock()
		s.sealPending = true
		s.sealed.Store(true)
		s.sealMu.Unlock()
		return nil
	}
	if err := errors.Join(s.offIdx.Seal(), s.timeIdx.Seal(), s.releaseReserved()); err != nil {
		return err
	}
	s.sealed.Store(true)
	return nil
}

// finishSeal does a SealDeferred's work on the files: the trims, with the
// index files' sync left to the caller (Flush) through indexSyncPending.
// A failure leaves it pending; each step can be done again.
func (s *Segment) finishSeal() error {
	s.sealMu.Lock()
	defer s.sealMu.Unlock()
	if !s.sealPending {
		return nil
	}
	if err := errors.Join(s.offIdx.SealUnsynced(), s.timeIdx.SealUnsynced(), s.releaseReserved()); err != nil {
		if s.removed.Load() {
			// Removed meanwhile (retention, a truncation): its files
			// are going, with nothing in them to keep.
			s.sealPending = false
			return nil
		}
		return err
	}
	s.indexSyncPending.Store(true)
	s.sealPending = false
	return nil
}

// SyncPending reports whether the segment holds a change since its last
// Flush that a power loss could undo unseen by a recovery that trusts it:
// a SealDeferred not finished, index files trimmed but not synced, a
// preallocated .log's trim (TrimPending). A log must not let its recovery
// point pass such a segment.
func (s *Segment) SyncPending() bool {
	s.sealMu.Lock()
	pending := s.sealPending
	s.sealMu.Unlock()
	return pending || s.indexSyncPending.Load() || s.trimPending.Load()
}

// Unseal makes a sealed segment active again (truncation into it, or a log
// whose active segment was sealed at shutdown): its tail state is loaded and
// both indexes are grown back to MaxIndexBytes and mapped writable.
// Unsealing an active segment does nothing.
func (s *Segment) Unseal() error {
	if !s.sealed.Load() {
		return nil
	}
	if s.removed.Load() {
		return fmt.Errorf("segment: unseal %s: %w", s.LogPath(), ErrClosed)
	}
	if _, err := s.ensureTail(); err != nil {
		return err
	}
	if s.opts.ReadOnly {
		return fmt.Errorf("segment: unseal %s: opened read-only", s.LogPath())
	}
	// Appends and truncations change the file through its descriptor, and
	// a write position must not be lost to a reopen: keep it open.
	if err := s.holdOpen(); err != nil {
		return err
	}
	s.sealMu.Lock()
	defer s.sealMu.Unlock()
	if s.sealPending {
		// A deferred seal changed no file: the indexes are still
		// writable and the reserved blocks still there.
		s.sealPending = false
		s.sealed.Store(false)
		return nil
	}
	if err := s.makeIndexesWritable(); err != nil {
		return err
	}
	s.sealed.Store(false)
	return nil
}

func (s *Segment) makeIndexesWritable() error {
	if err := s.offIdx.MakeWritable(); err != nil {
		return err
	}
	if err := s.timeIdx.MakeWritable(); err != nil {
		return errors.Join(err, s.offIdx.Seal())
	}
	return nil
}

// Flush makes the segment durable: fdatasync of the .log and of the active
// indexes' mappings (sealed indexes were made durable when trimmed, or,
// when recovery found them right and left them as they were or a
// SealDeferred left them, are trimmed and fsynced here, once).
func (s *Segment) Flush() error {
	if !s.filesOpen.Load() {
		return nil // never opened, so nothing was written through it
	}
	// Before the sync, which must cover the trims.
	if err := s.finishSeal(); err != nil {
		return err
	}
	// Read before the sync: a trim after it is not covered by it, and
	// writes to a segment sealed by then are.
	trimmed := s.trimPending.Load()
	sealed := s.sealed.Load()
	if err := s.log.Sync(); err != nil {
		return err
	}
	if trimmed {
		s.trimPending.Store(false)
	}
	if err := errors.Join(s.offIdx.Flush(), s.timeIdx.Flush()); err != nil {
		return err
	}
	if s.indexSyncPending.Swap(false) {
		if err := errors.Join(s.offIdx.SyncFile(), s.timeIdx.SyncFile()); err != nil && !s.removed.Load() {
			s.indexSyncPending.Store(true)
			return err
		}
	}
	if sealed {
		s.mayClose()
	}
	return nil
}

// mayClose lets Options.FileCache close the .log while it is idle: the
// segment is sealed and everything written through this descriptor was
// synced. Not before that sync: a write-back error is reported only
// through descriptors open when it happened, so a sync through a reopened
// one could claim durable what never reached the disk. Never for a
// read-only segment: the writer beside it may replace the file under the
// same name (compaction's swap), and a reopen would read the new file at
// the old file's positions.
func (s *Segment) mayClose() {
	if s.lazy == nil || s.opts.ReadOnly {
		return
	}
	s.evictMu.Lock()
	defer s.evictMu.Unlock()
	s.evictOK = true
	if s.sealed.Load() && !s.removed.Load() {
		_ = s.lazy.SetEvictable(true) // turning it on cannot fail
	}
}

// holdOpen keeps the .log descriptor open from now on (reopening it if
// the FileCache closed it), before the segment is changed through it
// (unsealed for appends or a truncation) or renamed (removed). A later
// Flush of the sealed segment lets it go again.
func (s *Segment) holdOpen() error {
	if s.lazy == nil {
		return nil
	}
	s.evictMu.Lock()
	defer s.evictMu.Unlock()
	s.evictOK = false
	return s.lazy.SetEvictable(false)
}

// Acquire takes a reference for a reader that will use File or ReadAt. It
// returns false if the segment's resources are already released (the count
// reached zero); the reader must then look the segment up again. A new
// segment starts with one reference, the Log's.
func (s *Segment) Acquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release drops a reference. When the last one goes, the segment's
// descriptors are closed and its mappings dropped and, if it was removed,
// its *.deleted files are unlinked (failures are logged: no caller is left
// to tell).
func (s *Segment) Release() {
	n := s.refs.Add(-1)
	if n > 0 {
		return
	}
	if n < 0 {
		s.opts.Logger.Error("segment: Release without a reference", "path", s.LogPath())
		return
	}
	s.openMu.Lock()
	s.closed = true
	open := s.filesOpen.Load()
	s.openMu.Unlock()
	if !s.removed.Load() {
		if !open {
			return
		}
		if err := s.closeFiles(); err != nil {
			s.opts.Logger.Warn("segment: closing released segment", "path", s.LogPath(), "err", err)
		}
		return
	}
	var err error
	paths := []string{s.LogPath(), s.deletedPath(TxnIndexSuffix)}
	if open {
		err = errors.Join(s.offIdx.Delete(), s.timeIdx.Delete(), s.closeLog())
	} else {
		paths = append(paths, s.idxPath, s.timePath)
	}
	for _, p := range paths {
		if rerr := s.fs.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		s.opts.Logger.Warn("segment: deleting removed segment", "path", s.LogPath(), "err", err)
	}
}

func (s *Segment) deletedPath(suffix string) string {
	return filepath.Join(s.dir, FileName(s.base, suffix)+DeletedSuffix)
}

// Remove renames the segment's files (.log, .index, .timeindex and a
// .txnindex if present) to *.deleted now and makes the renames durable
// (fsync of the directory), so a crash from here on leaves files that
// loading deletes. Readers holding a reference keep reading the renamed
// files through the open descriptor; when the last reference is released
// (the Log releases its own after Remove) the files are closed and
// unlinked. Remove is idempotent. If renaming the .log fails, nothing was
// removed and the segment stays live; a later failure (renaming an index,
// syncing the directory) is reported but the segment counts as removed,
// since a loader drops a .log.deleted and the orphaned index files.
func (s *Segment) Remove() error {
	if s.removed.Swap(true) {
		return nil
	}
	s.openMu.Lock()
	defer s.openMu.Unlock()
	// A .log closed for the FileCache would be reopened by its old name
	// after the rename: hold it open from here on, for the readers that
	// keep the removed segment alive.
	if err := s.holdOpen(); err != nil {
		s.removed.Store(false)
		return err
	}
	var errs []error
	logDel := s.deletedPath(LogSuffix)
	if err := s.fs.Rename(s.LogPath(), logDel); err != nil {
		// Nothing renamed: the segment stays whole and live, and the last
		// Release must not unlink its files.
		s.removed.Store(false)
		return err
	}
	s.logPath.Store(&logDel)
	// From here the segment is gone for a loader (a .log.deleted is
	// deleted, index files without a .log are orphans), whatever fails.
	idxDel, timeDel := s.deletedPath(IndexSuffix), s.deletedPath(TimeIndexSuffix)
	if s.filesOpen.Load() {
		errs = append(errs, s.offIdx.Rename(idxDel), s.timeIdx.Rename(timeDel))
	} else {
		// Not opened yet: rename the files themselves and remember where
		// they went, for a reader that opens them later. A missing index
		// is legitimate (it would have been rebuilt).
		for _, r := range []struct{ from, to *string }{{&s.idxPath, &idxDel}, {&s.timePath, &timeDel}} {
			if err := s.fs.Rename(*r.from, *r.to); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
			*r.from = *r.to
		}
	}
	txn := filepath.Join(s.dir, FileName(s.base, TxnIndexSuffix))
	if _, err := s.fs.Stat(txn); err == nil {
		errs = append(errs, s.fs.Rename(txn, s.deletedPath(TxnIndexSuffix)))
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	errs = append(errs, s.fs.SyncDir(s.dir))
	return errors.Join(errs...)
}
