package server

import (
	"context"
	"errors"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetCommit validates the committer against the group as Kafka's
// ClassicGroup.validateOffsetCommit does, then writes the offsets to the
// store's __consumer_offsets topic: durable when the response is sent.
func (c *coordinator) offsetCommit(r *kmsg.OffsetCommitRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetCommitResponse()
	code := c.validateCommit(r)
	// Partitions checked one by one first, so that one bad partition
	// does not fail its topic's others (the store commits a topic's
	// partitions all or none).
	type slot struct{ t, p int }
	perTopic := make(map[string]map[int32]int64)
	var slots []slot
	for ti, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for pi, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = code
			if code == 0 {
				rp.ErrorCode = c.checkCommit(t.Topic, p)
			}
			if rp.ErrorCode == 0 {
				if perTopic[t.Topic] == nil {
					perTopic[t.Topic] = make(map[int32]int64)
				}
				perTopic[t.Topic][p.Partition] = p.Offset
				slots = append(slots, slot{ti, pi})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	errs := make(map[string]int16)
	for topic, offs := range perTopic {
		if err := c.gs.commit(r.Group, topic, offs); err != nil {
			errs[topic] = storeErrorCode(err)
		}
	}
	for _, s := range slots {
		if e := errs[r.Topics[s.t].Topic]; e != 0 {
			resp.Topics[s.t].Partitions[s.p].ErrorCode = e
		}
	}
	return resp
}

// validateCommit returns the error every partition of the commit gets, or
// 0. A commit with generation -1 and no member id is a standalone
// consumer's, allowed while the group has no members.
func (c *coordinator) validateCommit(r *kmsg.OffsetCommitRequest) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if code := c.refusedLocked(r.Group); code != 0 {
		return code
	}
	if r.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.groups[r.Group]
	if g == nil {
		switch {
		case r.Generation < 0:
			return 0
		case r.Version >= 9:
			return kerr.GroupIDNotFound.Code
		default:
			return kerr.IllegalGeneration.Code
		}
	}
	if r.Generation < 0 && g.state == stateEmpty {
		return 0
	}
	if r.Generation >= 0 || r.MemberID != "" || r.InstanceID != nil {
		m, code := g.memberAt(r.MemberID, r.InstanceID, r.Generation)
		if m == nil {
			return code
		}
		if g.state == stateCompletingRebalance {
			return kerr.RebalanceInProgress.Code
		}
		g.heartbeat(m)
		return 0
	}
	return kerr.UnknownMemberID.Code
}

// checkCommit is a partition's own error: unknown, internal or metadata
// too large. Any offset is stored, past the partition's end too, as Kafka
// stores it: kafkajs's setOffsets commits the offset it was given before
// anything is produced there, and its resetOffsets commits -2 (its
// "earliest"), which a consumer then resolves by its reset policy.
func (c *coordinator) checkCommit(topic string, p kmsg.OffsetCommitRequestTopicPartition) int16 {
	if p.Metadata != nil && len(*p.Metadata) > maxOffsetMetadata {
		return kerr.OffsetMetadataTooLarge.Code
	}
	if topic == store.OffsetsTopic {
		return kerr.InvalidTopicException.Code
	}
	if _, err := c.st.Log(topic, p.Partition); err != nil {
		return storeErrorCode(err)
	}
	return 0
}

func storeErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, store.ErrUnknownTopic), errors.Is(err, store.ErrUnknownPartition), errors.Is(err, store.ErrInvalidTopic):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, store.ErrInternalTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, seglog.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, store.ErrInvalidGroup):
		return kerr.InvalidGroupID.Code
	case errors.Is(err, store.ErrClosed), errors.Is(err, ErrNotLeader), errors.Is(err, errNotCoordinator):
		// The store is closing, or in a cluster this node lost the
		// lead of the group's partition: the client looks again.
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrNotEnoughReplicas), errors.Is(err, ErrNotEnoughReplicasAfterAppend), errors.Is(err, context.DeadlineExceeded):
		// Kafka's answer to a commit its replicas did not take in
		// time (GroupMetadataManager): retriable.
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, seglog.ErrBatchTooLarge):
		return kerr.InvalidCommitOffsetSize.Code
	default:
		return kerr.UnknownServerError.Code
	}
}

// offsetFetch answers committed offsets: -1 where the group has none, and
// every committed partition when the request names no topics. The commit
// metadata string is not stored, so it is always empty, and the leader
// epoch is -1.
func (c *coordinator) offsetFetch(r *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetFetchResponse()
	if r.Version >= 8 {
		for _, rg := range r.Groups {
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			if code := c.refused(rg.Group); code != 0 {
				g.ErrorCode = code
				resp.Groups = append(resp.Groups, g)
				continue
			}
			var topics []kmsg.OffsetFetchRequestTopic
			if rg.Topics != nil {
				topics = []kmsg.OffsetFetchRequestTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions})
				}
			}
			for _, t := range c.fetchOffsets(rg.Group, topics) {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = t.Topic
				for _, p := range t.Partitions {
					gt.Partitions = append(gt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{
						Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch,
						Metadata: p.Metadata, ErrorCode: p.ErrorCode,
					})
				}
				g.Topics = append(g.Topics, gt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp
	}
	if code := c.refused(r.Group); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	topics := r.Topics
	if r.Version < 2 && topics == nil {
		topics = []kmsg.OffsetFetchRequestTopic{} // null means all topics only from v2
	}
	resp.Topics = c.fetchOffsets(r.Group, topics)
	return resp
}

func (c *coordinator) fetchOffsets(group string, topics []kmsg.OffsetFetchRequestTopic) []kmsg.OffsetFetchResponseTopic {
	var out []kmsg.OffsetFetchResponseTopic
	if topics == nil {
		rows, err := c.gs.committedAll(group)
		if err != nil {
			return out // an unknown group has committed nothing
		}
		for _, row := range rows {
			if len(out) == 0 || out[len(out)-1].Topic != row.Topic {
				t := kmsg.NewOffsetFetchResponseTopic()
				t.Topic = row.Topic
				out = append(out, t)
			}
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset, p.Metadata = row.Partition, row.Committed, kmsg.StringPtr("")
			out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, p)
		}
		return out
	}
	for _, rt := range topics {
		t := kmsg.NewOffsetFetchResponseTopic()
		t.Topic = rt.Topic
		for _, part := range rt.Partitions {
			p := kmsg.NewOffsetFetchResponseTopicPartition()
			p.Partition, p.Offset, p.Metadata = part, -1, kmsg.StringPtr("")
			if off, ok := c.gs.committed(group, rt.Topic, part); ok {
				p.Offset = off
			}
			t.Partitions = append(t.Partitions, p)
		}
		out = append(out, t)
	}
	return out
}
