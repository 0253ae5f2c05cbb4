package server

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/store"
)

// createTopics creates topics with the store's config keys. One node keeps
// one copy: a replication factor other than 1 (or -1, "the default") is
// INVALID_REPLICATION_FACTOR, and manual replica assignments are refused.
// In a cluster the controller creates them (NOT_CONTROLLER when this node
// cannot reach it), with up to as many replicas as there are live brokers.
func (s *Server) createTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	if s.cluster != nil {
		var cancel context.CancelFunc
		ctx, cancel = adminContext(ctx, req.TimeoutMillis)
		defer cancel()
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		n := int(t.NumPartitions)
		if n == -1 {
			n = s.cfg.NumPartitions
		}
		rt.NumPartitions = int32(n)
		rt.ReplicationFactor = 1
		fail := func(code int16, msg string) {
			rt.ErrorCode = code
			rt.ErrorMessage = kmsg.StringPtr(msg)
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
		}
		cfg := s.cfg.TopicConfig.Inherited()
		var cfgErr error
		for _, c := range t.Configs {
			if c.Value == nil {
				continue
			}
			if err := cfg.Set(c.Name, *c.Value); err != nil {
				cfgErr = err
				break
			}
		}
		switch {
		case s.cluster != nil && len(t.ReplicaAssignment) == 0 && cfgErr == nil:
			rf, err := s.clusterCreateTopic(ctx, t, n, req.ValidateOnly)
			if err != nil {
				fail(configErrCode(err), err.Error())
			} else {
				rt.ReplicationFactor = rf
			}
		case s.cluster == nil && t.ReplicationFactor != -1 && t.ReplicationFactor != 1:
			fail(kerr.InvalidReplicationFactor.Code, fmt.Sprintf("replication factor %d: this is a single node", t.ReplicationFactor))
		case len(t.ReplicaAssignment) > 0:
			fail(kerr.InvalidReplicaAssignment.Code, "manual replica assignment is not supported")
		case cfgErr != nil:
			fail(kerr.InvalidConfig.Code, cfgErr.Error())
		case req.ValidateOnly:
			err := store.ValidateTopic(t.Topic)
			if err == nil && (n < 1 || n > store.MaxPartitions) {
				err = fmt.Errorf("%w: %d", store.ErrInvalidPartitions, n)
			}
			if err == nil {
				if _, perr := s.st.Partitions(t.Topic); perr == nil {
					err = fmt.Errorf("%w: %s", store.ErrTopicExists, t.Topic)
				}
			}
			if err != nil {
				fail(errCode(err), err.Error())
			}
		default:
			if err := s.st.CreateTopic(t.Topic, n, cfg); err != nil {
				fail(errCode(err), err.Error())
			}
		}
		if rt.ErrorCode == 0 && req.Version >= 5 {
			// KIP-525: the configs the topic was (or would be) created
			// with; acl_authorize.go takes them out for a principal
			// without DESCRIBE_CONFIGS on the topic.
			rt.Configs = createdConfigs(cfg)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// createdConfigs is CreateTopics v5+'s answer of a new topic's configs,
// each with where its value comes from, as DescribeConfigs reports it.
func createdConfigs(cfg store.TopicConfig) []kmsg.CreateTopicsResponseTopicConfig {
	var out []kmsg.CreateTopicsResponseTopicConfig
	for _, k := range store.Keys() {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(cfg.Get(k))
		switch cfg.Source(k) {
		case store.SourceTopic:
			c.Source = int8(kmsg.ConfigSourceDynamicTopicConfig)
		case store.SourceBroker:
			c.Source = int8(kmsg.ConfigSourceStaticBrokerConfig)
		default:
			c.Source = int8(kmsg.ConfigSourceDefaultConfig)
		}
		out = append(out, c)
	}
	return out
}

// deleteTopics deletes topics by name: in a cluster through the
// controller.
func (s *Server) deleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	del := s.st.DeleteTopic
	if s.cluster != nil {
		var cancel context.CancelFunc
		ctx, cancel = adminContext(ctx, req.TimeoutMillis)
		defer cancel()
		del = func(name string) error {
			if name == store.OffsetsTopic {
				return fmt.Errorf("%w: %s", store.ErrInternalTopic, name)
			}
			return s.cluster.DeleteTopic(ctx, name)
		}
	}
	for _, name := range req.TopicNames {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		if err := del(name); err != nil {
			rt.ErrorCode = errCode(err)
			rt.ErrorMessage = kmsg.StringPtr(err.Error())
		} else {
			s.pids.forgetTopic(name)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// deleteRecords moves partitions' log start offsets, as Kafka's
// DeleteRecords does: offset -1 means the high watermark; the offsets
// topic is INVALID_TOPIC_EXCEPTION and a topic whose cleanup.policy is
// compact alone POLICY_VIOLATION, on one node as in a cluster. In a
// cluster the partition's leader moves it on every replica (Cluster's
// DeleteRecords), the request's partitions at once, within the request's
// timeout.
func (s *Server) deleteRecords(ctx context.Context, req *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	// replicated are the partitions the Cluster deletes from: their
	// places in resp, filled once every answer is in.
	type replicated struct {
		t, p   int
		offset int64
	}
	var pending []replicated
	if s.cluster != nil {
		var cancel context.CancelFunc
		ctx, cancel = adminContext(ctx, req.TimeoutMillis)
		defer cancel()
	}
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LowWatermark = -1
			if t.Topic == store.OffsetsTopic {
				// The groups' commits: Kafka refuses to delete internal
				// topics' records too.
				rp.ErrorCode = kerr.InvalidTopicException.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if tc, err := s.st.TopicConfigOf(t.Topic); err == nil && tc.CleanupPolicy == cleaner.Compact {
				// Kafka refuses a topic that only compacts: its log
				// config says no delete, and moving the start is
				// deleting. (An unknown topic is answered below.)
				rp.ErrorCode = kerr.PolicyViolation.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			if s.cluster != nil {
				// The replication moves it on every replica, never one
				// node's store alone.
				pending = append(pending, replicated{len(resp.Topics), len(rt.Partitions), p.Offset})
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			l, err := s.partitionLog(t.Topic, p.Partition)
			if err != nil {
				rp.ErrorCode = errCode(err)
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			off := p.Offset
			if off == -1 {
				off = l.EndOffset()
			}
			switch {
			case off < 0 || off > l.EndOffset():
				rp.ErrorCode = kerr.OffsetOutOfRange.Code
			default:
				// The store deletes: it owns the partition's start (and
				// its checkpoint); a view cannot move it.
				if start, err := s.st.DeleteRecords(t.Topic, p.Partition, off); err != nil {
					rp.ErrorCode = logErrorCode(err)
				} else {
					rp.LowWatermark = start
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	// Each waits for its own commit; resp is complete, so each fills its
	// own place.
	var wg sync.WaitGroup
	for _, r := range pending {
		wg.Go(func() {
			rt := &resp.Topics[r.t]
			rp := &rt.Partitions[r.p]
			if low, err := s.cluster.DeleteRecords(ctx, rt.Topic, rp.Partition, r.offset); err != nil {
				rp.ErrorCode = errCode(err)
			} else {
				rp.LowWatermark = low
			}
		})
	}
	wg.Wait()
	return resp
}

// logErrorCode maps an error from a partition's log to Kafka's code.
func logErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, seglog.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, seglog.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, seglog.ErrClosed):
		// The topic was deleted or the server is stopping (the Log, the
		// Store or a segment under a read was closed: one ErrClosed for
		// all): a client refreshes its metadata on this and retries.
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, seglog.ErrCorrupt):
		// Damage in the partition's files (a *CorruptionError naming file
		// and byte, or a damaged index): the broker's storage is at fault,
		// not the client's data, as Kafka answers a log directory it
		// cannot read. A client's bad batch is ErrCorruptBatch, which only
		// a Produce meets (appendErrorCode).
		return kerr.KafkaStorageError.Code
	}
	return kerr.KafkaStorageError.Code
}
