package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// singleNodeEpoch is the leader epoch of a single node: its store stamps
// every batch with seglog's default LeaderEpoch, 0, and Metadata answers
// 0, so a client's batches and its metadata agree on it.
const singleNodeEpoch = 0

// offsetForLeaderEpoch answers, per partition, the largest leader epoch at
// or below the one asked and the offset where it ended (KIP-320): a
// consumer that read up to some offset in that epoch learns whether the
// log it read was truncated since (an end below its position). In a
// cluster only the leader answers, from its leader-epoch checkpoint
// (Cluster.EndOffsetForEpoch), after the CurrentLeaderEpoch check Fetch
// makes. A single node has only ever had epoch 0: any epoch from 0 is
// answered with 0 and the log end, which never reports a truncation, and
// -1 (none) with -1, -1, as Kafka answers an epoch it does not know.
func (s *Server) offsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LeaderEpoch, rp.EndOffset = -1, -1
			epoch, end, code := s.epochEnd(t.Topic, p)
			if rp.ErrorCode = code; code == 0 {
				rp.LeaderEpoch, rp.EndOffset = epoch, end
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (s *Server) epochEnd(topic string, p kmsg.OffsetForLeaderEpochRequestTopicPartition) (int32, int64, int16) {
	if s.cluster == nil {
		l, err := s.partitionLog(topic, p.Partition)
		if err != nil {
			return -1, -1, errCode(err)
		}
		if code := epochCode(p.CurrentLeaderEpoch, singleNodeEpoch); code != 0 {
			return -1, -1, code
		}
		if p.LeaderEpoch < 0 {
			return -1, -1, 0
		}
		return singleNodeEpoch, l.EndOffset(), 0
	}
	if _, code := s.leaderState(topic, p.Partition, p.CurrentLeaderEpoch); code != 0 {
		return -1, -1, code
	}
	epoch, end, err := s.cluster.EndOffsetForEpoch(topic, p.Partition, p.LeaderEpoch)
	if err != nil {
		return -1, -1, errCode(err)
	}
	return epoch, end, 0
}
