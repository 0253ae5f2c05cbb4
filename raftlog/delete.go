package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// DeleteRange deletes the entries [min, max], which raft only ever asks
// for as a prefix (compaction after a snapshot), a suffix (a follower
// dropping entries that conflict with its leader) or everything (after a
// snapshot install or RecoverCluster). A range strictly inside the log
// (neither a prefix nor a suffix) is refused with an error matching
// ErrMiddleRange and changes nothing; one outside it does nothing.
//
// A prefix raises the log start offset and removes the segments wholly
// below it (DeleteBefore). Everything restarts the partition empty at its
// end (RestartAt), which is cheap whatever the log's size. A suffix is a
// Kafka truncation (TruncateTo); as that removes whole batches, the part of
// the batch holding min that stays is written back as a new batch, and a
// copy of that batch is kept in a file beside the partition until then,
// so no crash loses it.
func (s *Store) DeleteRange(min, max uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	if s.empty() || min > max {
		return nil
	}
	first, last := toIndex(s.log.StartOffset()), toIndex(s.log.EndOffset()-1)
	if min > last || max < first {
		return nil
	}
	// Reads neither use nor fill the caches while offsets change.
	s.cache.beginWrite()
	defer s.cache.endWrite()
	switch {
	case min <= first && max >= last:
		if err := s.log.RestartAt(s.log.EndOffset()); err != nil {
			return err
		}
		return s.epochs.Clear()
	case min <= first:
		start := toOffset(max) + 1
		if _, err := s.log.DeleteBefore(start); err != nil {
			return err
		}
		return s.epochs.TruncateFromStart(start)
	case max >= last:
		return s.truncateTail(toOffset(min))
	}
	return fmt.Errorf("%w: [%d, %d] is inside [%d, %d]", ErrMiddleRange, min, max, first, last)
}

// truncateTail removes every offset from cut on. Called with mu.
func (s *Store) truncateTail(cut int64) error {
	b, err := s.readBatch(cut)
	if err != nil {
		return err
	}
	// TruncateTo ends the log at the batch's start, or at the log start
	// when the batch straddles it: the records from there to cut stay.
	from := max(b.BaseOffset(), s.log.StartOffset())
	split := from < cut
	if split {
		// Keep a copy until they are written back, so a crash after
		// TruncateTo cannot lose them.
		data := binary.BigEndian.AppendUint64(nil, uint64(from))
		data = binary.BigEndian.AppendUint64(data, uint64(cut))
		if err := vfs.WriteFileAtomic(s.fs, s.tailPath(), append(data, b...)); err != nil {
			return err
		}
	}
	if err := s.log.TruncateTo(cut); err != nil {
		return err
	}
	if err := s.epochs.TruncateFromEnd(s.log.EndOffset()); err != nil {
		return err
	}
	if !split {
		return nil
	}
	if err := s.rewriteKept(b, from, cut); err != nil {
		return err
	}
	return s.removeTail()
}

func (s *Store) tailPath() string { return filepath.Join(s.dir, tailFile) }

// rewriteKept appends b's records in [from, cut), with b's term, to a log
// that ends at from.
func (s *Store) rewriteKept(b record.Batch, from, cut int64) error {
	if s.log.EndOffset() != from {
		return fmt.Errorf("raftlog: rewriting records from %d into a log ending at %d", from, s.log.EndOffset())
	}
	var kept []*raft.Log
	for r, err := range b.Records() {
		if err != nil {
			return err
		}
		if r.Offset < from {
			continue
		}
		if r.Offset >= cut {
			break
		}
		l := new(raft.Log)
		if err := decode(r, b.PartitionLeaderEpoch(), l); err != nil {
			return err
		}
		kept = append(kept, l)
	}
	if len(kept) == 0 {
		return nil
	}
	if s.log.StartOffset() == s.log.EndOffset() && s.epochs.Len() > 0 {
		if err := s.epochs.Clear(); err != nil {
			return err
		}
	}
	return s.appendLocked(kept, 0)
}

func (s *Store) removeTail() error {
	err := s.fs.Remove(s.tailPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// Durably: a copy a power loss brought back would be "finished" by a
	// later Open, appending its stale records after whatever the log then
	// holds (or refusing to open when their term went back).
	return s.fs.SyncDir(s.dir)
}

// finishTail completes a suffix delete that a crash interrupted: if the
// log ends where the saved batch began, TruncateTo had finished and the
// kept records are written back; otherwise the log still holds them (the
// truncation had not happened, or the rewrite had) and the copy goes.
func (s *Store) finishTail() error {
	data, err := vfs.ReadFileLimit(s.fs, s.tailPath(), int64(s.opts.MaxBatchBytes)+16)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("raftlog: reading %s: %w", s.tailPath(), err)
	}
	if len(data) < 16+record.HeaderSize {
		// WriteFileAtomic never leaves a short file: only damage does.
		return fmt.Errorf("raftlog: %s is %d bytes, too short to hold a batch", s.tailPath(), len(data))
	}
	from := int64(binary.BigEndian.Uint64(data))
	cut := int64(binary.BigEndian.Uint64(data[8:]))
	b := record.Batch(data[16:])
	if err := b.Validate(); err != nil {
		return fmt.Errorf("raftlog: %s at byte 16: %w", s.tailPath(), err)
	}
	if s.log.EndOffset() == from && from < cut {
		if ok, err := s.epochs.Load(); err != nil {
			return err
		} else if !ok {
			if err := s.rebuildEpochs(); err != nil {
				return err
			}
		}
		if err := s.epochs.TruncateFromEnd(s.log.EndOffset()); err != nil {
			return err
		}
		if err := s.rewriteKept(b, from, cut); err != nil {
			return err
		}
	}
	return s.removeTail()
}
