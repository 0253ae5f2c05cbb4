package server

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// defaultProduceTimeout bounds a replicated write whose request gives no
// timeout (TimeoutMillis 0 or less), which Kafka would time out at once:
// a client sending 0 means "no particular bound", not "fail every acks=all
// write".
const defaultProduceTimeout = 30 * time.Second

// leaderState is the state of a partition this node must lead to serve
// (Fetch, ListOffsets, OffsetForLeaderEpoch), or the Kafka error code to
// answer instead: NOT_LEADER_OR_FOLLOWER on a follower, and the
// client's current leader epoch checked against the partition's (-1 skips
// the check).
func (s *Server) leaderState(topic string, partition, currentEpoch int32) (PartitionState, int16) {
	st, err := s.cluster.State(topic, partition)
	if err != nil {
		return st, errCode(err)
	}
	if !st.Leader {
		return st, kerr.NotLeaderForPartition.Code
	}
	return st, epochCode(currentEpoch, st.LeaderEpoch)
}

// epochCode checks a request's CurrentLeaderEpoch against the partition's
// leader epoch, as Kafka's leader does (KIP-320): a client behind the
// leader was fenced (FENCED_LEADER_EPOCH: its metadata is stale), a client
// ahead of it knows of a leader this node has not heard of yet
// (UNKNOWN_LEADER_EPOCH); both refresh metadata and retry. -1 is "do not
// check".
func epochCode(current, leader int32) int16 {
	switch {
	case current < 0:
		return 0
	case current < leader:
		return kerr.FencedLeaderEpoch.Code
	case current > leader:
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}

// errNotPlacedYet is a topic created on first use that the controller
// could not place on enough live brokers for the default replication
// factor: LEADER_NOT_AVAILABLE, which clients retry, as Kafka answers for
// a topic still being created.
var errNotPlacedYet = errors.New("server: the topic waits for enough live brokers")

// clusterErrCode maps the Cluster's sentinels and a replicated write's
// context to Kafka's codes; 0 for an error that is none of them.
func clusterErrCode(err error) int16 {
	switch {
	case errors.Is(err, errNotPlacedYet):
		return kerr.LeaderNotAvailable.Code
	case errors.Is(err, ErrNotLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, ErrNotController):
		return kerr.NotController.Code
	case errors.Is(err, ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend.Code
	case errors.Is(err, ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, errNoUncleanElection):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, context.Canceled):
		// The server is stopping: the client finds the partition's
		// leader again.
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// replicatePartition is producePartition in a cluster: the checks and
// the idempotent producer's deduplication as on one node, then the
// Cluster's Produce instead of the store's Writer. ctx bounds the wait
// (the request's TimeoutMillis).
func (s *Server) replicatePartition(ctx context.Context, version, acks int16, topic string, p *kmsg.ProduceRequestTopicPartition, rp *kmsg.ProduceResponseTopicPartition) {
	if topic == store.OffsetsTopic {
		// The group coordinator's log: clients may not write it.
		rp.ErrorCode = kerr.InvalidTopicException.Code
		return
	}
	st, err := s.cluster.State(topic, p.Partition)
	switch {
	case err != nil:
		rp.ErrorCode = errCode(err)
		return
	case !st.Leader:
		rp.ErrorCode = kerr.NotLeaderForPartition.Code
		return
	}
	l, err := s.partitionLog(topic, p.Partition)
	if err != nil {
		rp.ErrorCode = s.openErrorCode(topic, p.Partition, err)
		return
	}
	if rp.ErrorCode = checkProduceBatch(version, p.Records); rp.ErrorCode != 0 {
		return
	}
	if rp.ErrorCode = s.checkReplicatedBatch(topic, p.Records); rp.ErrorCode != 0 {
		return
	}
	if acks == 0 {
		// Kafka's leader appends an acks=0 batch as an acks=1 one.
		acks = 1
	}
	b := record.Batch(p.Records)
	if b.ProducerID() < 0 {
		off, err := s.cluster.Produce(ctx, topic, p.Partition, p.Records, acks)
		s.answerReplicated(l, off, err, rp)
		return
	}
	// One producer's batches on a partition are checked, proposed and
	// recorded one at a time: a retry of a batch still being replicated
	// waits here and then finds it recorded (a duplicate) or failed, and
	// the sequence check of the next batch sees the one before it.
	// Other producers go on meanwhile.
	pp := s.pids.partition(topic, p.Partition, l)
	// Read before Produce: the batch is the Cluster's from then on.
	pid, delta := b.ProducerID(), int64(b.LastOffsetDelta())
	unlock := pp.lockProducer(pid)
	defer unlock()
	// The state follows this replica's log whoever wrote it (the
	// replication reports every batch stored and every truncation,
	// observe.go), so it holds what earlier leaders wrote.
	pp.lockLoaded()
	v := pp.check(b)
	pp.mu.Unlock()
	switch {
	case v.code != 0:
		rp.ErrorCode = v.code
		rp.LogStartOffset = l.StartOffset()
		return
	case v.duplicate:
		// The original may be in the log and not yet committed (its
		// Produce failed or timed out while the replicas confirmed it):
		// acks=all answers once the high watermark passes it, as Kafka's
		// delayed produce waits for a duplicate's offsets too. Answered
		// earlier, the retry would be acknowledged and then lost with
		// the leader.
		if acks == -1 {
			if rp.ErrorCode = s.awaitCommitted(ctx, topic, p.Partition, st.LeaderEpoch, v.dupOffset+delta+1); rp.ErrorCode != 0 {
				return
			}
		}
		rp.BaseOffset = v.dupOffset
		rp.LogStartOffset = l.StartOffset()
		return
	}
	// Stored or not, the replication reported it before Produce returned:
	// a batch in this node's log is in the state, where a retry finds
	// it, even when the write failed (a timeout while the replicas
	// confirm it, a leader lost after its append).
	off, err := s.cluster.Produce(ctx, topic, p.Partition, p.Records, acks)
	s.answerReplicated(l, off, err, rp)
}

// checkReplicatedBatch checks a batch as the store's AppendBatch would
// (size under the topic's max.message.bytes, CRC, framing, the producer
// rules, every record), so that the Cluster is given only batches every
// replica will accept: a batch refused after replication would be a
// replicated entry no replica can store.
func (s *Server) checkReplicatedBatch(topic string, recs []byte) int16 {
	cfg, err := s.st.TopicConfigOf(topic)
	if err != nil {
		return errCode(err)
	}
	b := record.Batch(recs)
	if err := record.ValidateProducerBatch(b, cfg.MaxMessageBytes); err != nil {
		return replicatedBatchCode(err)
	}
	if _, err := record.MaxRecordTimestamp(b, nil); err != nil {
		return replicatedBatchCode(err)
	}
	return keylessCode(cfg, b)
}

// replicatedBatchCode is appendErrorCode for a batch refused before it
// reached a log: everything wrong with it is the client's.
func replicatedBatchCode(err error) int16 {
	switch {
	case errors.Is(err, record.ErrInvalidProducerBatch):
		return kerr.InvalidRecord.Code
	case errors.Is(err, record.ErrTooLarge), errors.Is(err, record.ErrDecompressLimit):
		return kerr.MessageTooLarge.Code
	}
	return kerr.CorruptMessage.Code
}

// answerReplicated is answerAppend for a replicated write.
func (s *Server) answerReplicated(l seglog.View, off int64, err error, rp *kmsg.ProduceResponseTopicPartition) {
	if err != nil {
		if rp.ErrorCode = errCode(err); rp.ErrorCode == kerr.KafkaStorageError.Code {
			s.errs.Error(l.Dir(), "server: replicated write failed", "dir", l.Dir(), "err", err)
		}
		return
	}
	rp.BaseOffset = off
	rp.LogStartOffset = l.StartOffset()
}

// produceContext bounds a replicated write by the request's timeout.
func (s *Server) produceContext(timeoutMillis int32) (context.Context, context.CancelFunc) {
	d := time.Duration(timeoutMillis) * time.Millisecond
	if d <= 0 {
		d = defaultProduceTimeout
	}
	return context.WithTimeout(s.ctx, d)
}

// awaitCommitted waits until the partition's high watermark reaches end
// while this node leads it in epoch, and returns 0, or the error code the
// wait ended with: NOT_LEADER_OR_FOLLOWER once the leadership moved (the
// batch may be truncated: the client retries with the new leader, whose
// log says whether it survived), REQUEST_TIMED_OUT when ctx ends.
func (s *Server) awaitCommitted(ctx context.Context, topic string, partition, epoch int32, end int64) int16 {
	for {
		woken := s.notify.wait() // before the check: a wake in between is not missed
		st, err := s.cluster.State(topic, partition)
		switch {
		case err != nil:
			if code := clusterErrCode(err); code != 0 {
				return code
			}
			return errCode(err)
		case !st.Leader || st.LeaderEpoch != epoch:
			return kerr.NotLeaderForPartition.Code
		case st.HighWatermark >= end:
			return 0
		}
		select {
		case <-woken:
		case <-ctx.Done():
			return clusterErrCode(ctx.Err())
		}
	}
}
