package partition

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/server"
)

// produceAll is Produce with acks -1: the batch is answered once raft has
// committed it (a majority holds it) and this node has applied it, and,
// when the topic's min.insync.replicas asks for more replicas than a
// majority, once that many hold it.
func (m *Manager) produceAll(ctx context.Context, topic string, partition int32, p *part, batch []byte) (int64, error) {
	need, err := m.checkInsync(topic, partition, p)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	index, err := m.cfg.Raft.Propose(ctx, p.a.Group, batch)
	if err != nil {
		return 0, m.produceErr(topic, partition, err)
	}
	m.timeCommit(start)
	if need > 0 {
		if err := m.awaitInsync(ctx, topic, partition, p, index, need); err != nil {
			return 0, err
		}
	}
	return p.st.Offset(index)
}

// checkInsync is Kafka's check before an acks=all append
// (Partition.appendRecordsToLeader): the replicas live (multiraft's Live:
// heard from within an election timeout, the leader itself included) must
// be at least the topic's min.insync.replicas, and at least a majority,
// which raft needs to commit anything. Fewer refuse the batch before it is
// proposed: ErrNotEnoughReplicas, which tells the client it was not
// stored, where a proposal nobody can commit would wait out the request's
// timeout and leave its outcome unknown. It returns how many replicas
// must hold the batch before it is answered when that is more than a
// majority (0 otherwise: the commit is the answer).
func (m *Manager) checkInsync(topic string, partition int32, p *part) (need int, err error) {
	cfg, err := m.cfg.Store.TopicConfigOf(topic)
	if err != nil {
		return 0, fmt.Errorf("partition: %s-%d: %w", topic, partition, err)
	}
	live, voters, err := m.cfg.Raft.Live(p.a.Group)
	if err != nil {
		return 0, m.produceErr(topic, partition, err)
	}
	majority := voters/2 + 1
	need = max(cfg.MinInsyncReplicas, majority)
	if live < need {
		return 0, fmt.Errorf("%w: %s-%d: %d of its %d replicas in sync, %d needed (min.insync.replicas %d; raft commits at a majority, %d)",
			server.ErrNotEnoughReplicas, topic, partition, live, voters, need, cfg.MinInsyncReplicas, majority)
	}
	if need == majority {
		return 0, nil
	}
	return need, nil
}

// awaitInsync waits, after the commit, for need replicas to hold the entry
// at index (a min.insync.replicas above the majority). The batch is
// stored whatever this answers: a replica lost meanwhile is Kafka's
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, a deadline REQUEST_TIMED_OUT, a lost
// leadership NOT_LEADER_OR_FOLLOWER; the client's retry is an idempotent
// producer's duplicate.
func (m *Manager) awaitInsync(ctx context.Context, topic string, partition int32, p *part, index uint64, need int) error {
	err := m.cfg.Raft.WaitReplicated(ctx, p.a.Group, index, need)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, multiraft.ErrTooFewLive):
		return fmt.Errorf("%w: %s-%d: the batch is committed, but fewer than min.insync.replicas (%d) replicas stayed in sync to hold it",
			server.ErrNotEnoughReplicasAfterAppend, topic, partition, need)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("partition: %s-%d: the batch is committed, but min.insync.replicas (%d) replicas did not all hold it in time: %w",
			topic, partition, need, err)
	}
	return m.produceErr(topic, partition, err)
}
