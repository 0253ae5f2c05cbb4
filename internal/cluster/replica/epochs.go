package replica

import (
	"sort"

	"fmt"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/epochcache"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
)

// The leader-epoch cache is package epochcache's (Kafka's
// LeaderEpochFileCache rules, one copy shared with raftlog), kept in the
// partition's leader-epoch-checkpoint so that OffsetForLeaderEpoch can
// answer from it (KIP-320). The replica store's own rule: an epoch lower
// than the last is ignored (it can only come after raft emptied its log
// and kept the Kafka data).

// loadEpochs reads the checkpoint (epochcache) and makes it agree with the
// batches: entries at or past the end go, the first kept starts at the log
// start at the earliest; if what is left does not end
// with the last batch's epoch, or is missing or malformed (it is derived
// data), it is rebuilt from every batch's header. Called from Open.
func (s *Store) loadEpochs() error {
	s.epochs = epochcache.New(s.fs, s.dir)
	ok, err := s.epochs.Load()
	if err != nil {
		return fmt.Errorf("replica: reading %s: %w", s.epochs.Path(), err)
	}
	end := s.log.EndOffset()
	if err := s.epochs.TruncateFromEnd(end); err != nil {
		return err
	}
	// As Kafka's log does at load: a start moved while the cache was not
	// trimmed (a crash between, StartMoved) is followed here.
	if err := s.epochs.TruncateFromStart(s.log.StartOffset()); err != nil {
		return err
	}
	if s.log.StartOffset() == end {
		if !ok {
			return s.epochs.Clear()
		}
		return nil
	}
	last, err := s.lastEpoch()
	if err != nil {
		return err
	}
	// A last epoch above the last batch's is the one an ignored lower
	// epoch leaves (see above); below it, the checkpoint missed one.
	if ok && s.epochs.Len() > 0 && s.epochs.Last() >= last {
		return nil
	}
	return s.rebuildEpochs()
}

// lastEpoch returns the leader epoch of the partition's last batch.
func (s *Store) lastEpoch() (int32, error) {
	b, err := s.readBatchHolding(s.log.EndOffset() - 1)
	if err != nil {
		return 0, err
	}
	return b.PartitionLeaderEpoch(), nil
}

// rebuildEpochs derives the cache from every batch's header, keeping an
// epoch only when it is newer than the last (as assignEpoch does).
func (s *Store) rebuildEpochs() error {
	var lines []layout.EpochLine
	err := s.scan(s.log.StartOffset(), func(e *segment.Entry) bool {
		ep := e.Batch.PartitionLeaderEpoch()
		if n := len(lines); n == 0 || ep > lines[n-1].Epoch {
			lines = append(lines, layout.EpochLine{Epoch: ep, StartOffset: max(e.BaseOffset(), s.log.StartOffset())})
		}
		return true
	})
	if err != nil {
		return err
	}
	return s.epochs.Replace(lines)
}

// assignEpoch records epoch's first offset, saved before the batch is
// written; an epoch not above the last is ignored (it can only come after
// raft emptied its log and kept the Kafka data). Called with mu.
func (s *Store) assignEpoch(epoch int32, offset int64) error {
	_, err := s.epochs.Assign(epoch, offset)
	return err
}

// truncateEpochs drops the epochs starting at or past end. Called with mu.
func (s *Store) truncateEpochs(end int64) error { return s.epochs.TruncateFromEnd(end) }

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

// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-320) by Kafka's rule
// (LeaderEpochFileCache.endOffsetFor), from the leader-epoch cache: for
// the latest epoch, that epoch and the end of the raft log; for an older
// one, the largest epoch at or below it and the start of the epoch after
// that one; for one below every epoch held, the epoch asked for and the
// first epoch's start; -1, -1 for an epoch above every epoch held, or
// when none is.
func (s *Store) EndOffsetForEpoch(epoch int32) (int32, int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, 0, err
	}
	s.mu.Lock()
	// As of the log start, which retention may have moved since the
	// cache was last trimmed: the file waits for the next write, since
	// answering a client writes nothing.
	es := s.epochs.EntriesFrom(s.log.StartOffset())
	s.mu.Unlock()
	s.idx.RLock()
	end := s.end
	if len(s.anchors) == 0 {
		end = s.log.EndOffset()
	}
	s.idx.RUnlock()
	if epoch < 0 || len(es) == 0 {
		return -1, -1, nil
	}
	if epoch == es[len(es)-1].Epoch {
		return epoch, end, nil
	}
	// The first epoch above the one asked for.
	i := sort.Search(len(es), func(i int) bool { return es[i].Epoch > epoch })
	switch {
	case i == len(es):
		return -1, -1, nil
	case i == 0:
		return epoch, es[0].StartOffset, nil
	}
	return es[i-1].Epoch, es[i].StartOffset, nil
}
