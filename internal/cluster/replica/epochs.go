package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// The leader-epoch cache (Kafka's LeaderEpochFileCache): the first offset
// of each term, kept in the partition's leader-epoch-checkpoint as Kafka
// keeps it, so that OffsetForLeaderEpoch can answer from it (KIP-320). It
// follows Kafka's rules: an epoch is assigned, and saved, before the first
// batch of it is written, so a crash leaves at most an entry at the log
// end, which Open drops; an epoch lower than the last is ignored (it can
// only come after raft emptied its log and kept the Kafka data); a
// truncation drops the epochs that start at or past the new end.

// maxEpochFile bounds how much of a damaged checkpoint is read.
const maxEpochFile = 1 << 20

func (s *Store) epochPath() string { return filepath.Join(s.dir, layout.LeaderEpochFile) }

// loadEpochs reads the checkpoint and makes it agree with the batches:
// entries at or past the end go; if what is left does not end with the
// last batch's epoch, or is missing or malformed (it is derived data), it
// is rebuilt from every batch's header. Called from Open.
func (s *Store) loadEpochs() error {
	end := s.log.EndOffset()
	data, err := vfs.ReadFileLimit(s.fs, s.epochPath(), maxEpochFile)
	var lines []layout.EpochLine
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, vfs.ErrFileTooLarge):
	case err != nil:
		return fmt.Errorf("replica: reading %s: %w", s.epochPath(), err)
	default:
		lines, err = layout.ParseLeaderEpochs(s.epochPath(), data)
		if err != nil || !ordered(lines) {
			lines = nil
		}
	}
	k := len(lines)
	for k > 0 && lines[k-1].StartOffset >= end {
		k--
	}
	kept := lines[:k]
	if s.log.StartOffset() == end {
		s.epochs = kept
		if k != len(lines) {
			return s.saveEpochs()
		}
		return nil
	}
	last, err := s.lastEpoch()
	if err != nil {
		return err
	}
	// A last epoch above the last batch's is the one an ignored lower
	// epoch leaves (see above); below it, the checkpoint missed one.
	if data != nil && k > 0 && kept[k-1].Epoch >= last {
		s.epochs = kept
		if k != len(lines) {
			return s.saveEpochs()
		}
		return nil
	}
	return s.rebuildEpochs()
}

// ordered reports epochs increasing with offsets never decreasing, as
// the cache writes them.
func ordered(lines []layout.EpochLine) bool {
	for i := 1; i < len(lines); i++ {
		if lines[i].Epoch <= lines[i-1].Epoch || lines[i].StartOffset < lines[i-1].StartOffset {
			return false
		}
	}
	return true
}

// lastEpoch returns the leader epoch of the partition's last batch.
func (s *Store) lastEpoch() (int32, error) {
	b, err := s.readBatchHolding(s.log.EndOffset() - 1)
	if err != nil {
		return 0, err
	}
	return b.PartitionLeaderEpoch(), nil
}

// rebuildEpochs derives the cache from every batch's header.
func (s *Store) rebuildEpochs() error {
	s.epochs = nil
	err := s.scan(s.log.StartOffset(), func(e *segment.Entry) bool {
		s.assignLocal(e.Batch.PartitionLeaderEpoch(), max(e.BaseOffset(), s.log.StartOffset()))
		return true
	})
	if err != nil {
		return err
	}
	return s.saveEpochs()
}

// assignLocal records that epoch starts at offset, if it is newer than
// the last; it reports whether it did.
func (s *Store) assignLocal(epoch int32, offset int64) bool {
	if n := len(s.epochs); n > 0 && epoch <= s.epochs[n-1].Epoch {
		return false
	}
	s.epochs = append(s.epochs, layout.EpochLine{Epoch: epoch, StartOffset: offset})
	return true
}

// assignEpoch is assignLocal, saved before the batch is written. Called
// with mu.
func (s *Store) assignEpoch(epoch int32, offset int64) error {
	if !s.assignLocal(epoch, offset) {
		return nil
	}
	if err := s.saveEpochs(); err != nil {
		s.epochs = s.epochs[:len(s.epochs)-1]
		return err
	}
	return nil
}

// truncateEpochs drops the epochs starting at or past end. Called with mu.
func (s *Store) truncateEpochs(end int64) error {
	k := len(s.epochs)
	for k > 0 && s.epochs[k-1].StartOffset >= end {
		k--
	}
	if k == len(s.epochs) {
		return nil
	}
	s.epochs = s.epochs[:k]
	return s.saveEpochs()
}

func (s *Store) saveEpochs() error {
	return vfs.WriteFileAtomic(s.fs, s.epochPath(), layout.FormatLeaderEpochs(s.epochs))
}

// readBatchHolding returns the CRC-checked batch holding offset.
func (s *Store) readBatchHolding(off int64) (record.Batch, error) {
	sl, err := s.log.Read(off, 1, seglog.ReadOptions{})
	if err != nil {
		return nil, err
	}
	first := sl.FirstOffset()
	sl.Close()
	return s.readBatch(first)
}
