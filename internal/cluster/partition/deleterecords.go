package partition

import (
	"context"
	"errors"
	"fmt"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/internal/cluster/replica"
	"github.com/seglog/seglog/server"
)

// DeleteRecords moves a partition's log start to offset on every replica,
// as Kafka's DeleteRecords does (docs/cluster-partitions.md,
// "DeleteRecords"): offset -1 is the high watermark; one past the high
// watermark, or below -1, is seglog.ErrOffsetOutOfRange. This node must
// lead the partition (server.ErrNotLeader elsewhere). The leader proposes
// a DeleteRecords entry, which every replica applies when it commits; it
// answers once the entry is committed (a majority holds it) and applied
// here, with this replica's log start: Kafka's leader waits until every
// in-sync follower's start has passed the offset (its low watermark), a
// follower here applies the entry as soon as it learns of the commit. An
// offset at or below this replica's start proposes nothing and answers
// the start. ctx's end before the commit is context.DeadlineExceeded (the
// entry may still commit).
func (m *Manager) DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error) {
	p, err := m.part(topic, partition)
	if err != nil {
		return 0, err
	}
	lead, _, err := m.cfg.Raft.Leader(p.a.Group)
	if err != nil || lead != uint64(m.cfg.NodeID) {
		return 0, fmt.Errorf("%w: %s-%d is led by node %d", server.ErrNotLeader, topic, partition, lead)
	}
	hw := p.hw.Load()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, fmt.Errorf("%w: cannot delete the records of %s-%d before %d: the high watermark is %d", seglog.ErrOffsetOutOfRange, topic, partition, offset, hw)
	}
	if start := p.st.Log().StartOffset(); offset <= start {
		return start, nil
	}
	if _, err := m.cfg.Raft.Propose(ctx, p.a.Group, replica.DeleteRecordsEntry(offset)); err != nil {
		var nl *multiraft.NotLeaderError
		switch {
		case errors.As(err, &nl), errors.Is(err, multiraft.ErrProposalDropped), errors.Is(err, multiraft.ErrGroupRemoved), errors.Is(err, multiraft.ErrGroupNotFound):
			return 0, fmt.Errorf("%w: %s-%d: %w", server.ErrNotLeader, topic, partition, err)
		}
		// A deadline is Kafka's REQUEST_TIMED_OUT (the server maps
		// context.DeadlineExceeded to it), not Produce's
		// NOT_ENOUGH_REPLICAS.
		return 0, fmt.Errorf("partition: deleting the records of %s-%d before %d: %w", topic, partition, offset, err)
	}
	return p.st.Log().StartOffset(), nil
}

// applyDelete applies the DeleteRecords entry index, which moves p's log
// start to offset. The raft log first starts at the entry (its batch lies
// at or after offset: the leader proposed no offset past its high
// watermark, and the entry came after it), so the log start never passes
// the raft log's first anchor (replica.Store.KeepFrom); then the store
// moves the start, as a single node's DeleteRecords does: the log-start
// checkpoint first, then the segments wholly below it go; then the epoch
// cache is trimmed to the start (replica.Store.StartMoved). Applied again
// after a restart, it finds the start already there and moves nothing.
// An offset past the entry's own (which no leader proposes) is ignored on
// every replica alike, with a warning. On the driver goroutine.
func (m *Manager) applyDelete(p *part, index uint64, offset int64) error {
	at, err := p.st.Offset(index)
	if err != nil {
		return fmt.Errorf("partition: %s-%d: DeleteRecords entry %d: %w", p.a.Topic, p.a.Partition, index, err)
	}
	if offset < 0 || offset > at {
		m.cfg.Logger.Warn("partition: a DeleteRecords entry past its own offset, ignored", "topic", p.a.Topic, "partition", p.a.Partition, "index", index, "entry offset", at, "delete before", offset)
		return nil
	}
	if _, err := p.st.KeepFrom(index); err != nil {
		return fmt.Errorf("partition: %s-%d: DeleteRecords entry %d: %w", p.a.Topic, p.a.Partition, index, err)
	}
	if offset > p.st.Log().StartOffset() {
		if _, err := m.cfg.Store.DeleteRecords(p.a.Topic, p.a.Partition, offset); err != nil {
			return fmt.Errorf("partition: %s-%d: DeleteRecords entry %d: %w", p.a.Topic, p.a.Partition, index, err)
		}
		m.cfg.Logger.Info("partition: log start moved", "topic", p.a.Topic, "partition", p.a.Partition, "index", index, "start", offset)
	}
	// Applied again after a restart, it trims what a crash left.
	if err := p.st.StartMoved(); err != nil {
		return fmt.Errorf("partition: %s-%d: DeleteRecords entry %d: %w", p.a.Topic, p.a.Partition, index, err)
	}
	return nil
}
