package server

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/server/acl"
	"github.com/seglog/seglog/store"
)

// topicSource is where Metadata's topics and partitions come from: the
// store of this one node, or the Cluster. Both answer through one loop,
// so what a request asks for, what auto creation does and how a topic's
// error is reported are the same whichever answers.
type topicSource struct {
	// all lists every topic, the internal offsets topic included (Kafka
	// lists it, marked internal; clients matching topics by regex rely on
	// the mark to skip it).
	all func() []string
	// partitions is a topic's partitions, or an error matching
	// store.ErrUnknownTopic when there is no such topic.
	partitions func(name string) ([]PartitionInfo, error)
	// createOnFirstUse creates an unknown topic asked for by name, as
	// auto.create.topics.enable does, and returns its partitions.
	createOnFirstUse func(name string) ([]PartitionInfo, error)
}

// metadata answers Metadata: this one broker as leader, replica and
// in-sync replica of every partition, or, in a cluster, what the Cluster
// knows (clusterTopics). A topic asked for by name that does not exist is
// created when auto creation is on and the client allows it (Metadata
// v4+ says so per request; older versions always allow it, as Kafka
// does).
func (s *Server) metadata(ctx context.Context, req *kmsg.MetadataRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.ClusterID = kmsg.StringPtr(s.cfg.ClusterID)
	var src topicSource
	if s.cluster != nil {
		src = s.clusterTopics(ctx, resp)
	} else {
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: s.cfg.NodeID, Host: s.host, Port: s.port}}
		resp.ControllerID = s.cfg.NodeID
		src = s.storeTopics()
	}
	az := authorizerFrom(ctx)
	if req.Version >= 8 && req.Version <= 10 && req.IncludeClusterAuthorizedOperations {
		// v11 dropped the field for DescribeCluster's (KIP-700).
		resp.AuthorizedOperations = az.operations(kmsg.ACLResourceTypeCluster, acl.ClusterName)
	}
	var names []string
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		// Only the topics the principal may describe (acl_authorize.go).
		names = keep(src.all(), func(n string) bool { return az.topic(kmsg.ACLOperationDescribe, n) }, func(string) {})
	} else {
		for _, t := range req.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
	}
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	var elections []int // the indexes in resp.Topics of topics with a partition electing
	for _, name := range names {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = kmsg.StringPtr(name)
		t.IsInternal = name == store.OffsetsTopic
		parts, err := src.partitions(name)
		creating := errors.Is(err, store.ErrUnknownTopic) && !all && allowCreate && s.autoCreate()
		if !all && !az.metadataTopic(name, creating) {
			t.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, t)
			continue
		}
		if creating {
			parts, err = src.createOnFirstUse(name)
		}
		if req.IncludeTopicAuthorizedOperations {
			// KIP-430: for a topic the principal may describe, known or
			// not; a refused one keeps "not provided", as in Kafka.
			t.AuthorizedOperations = az.operations(kmsg.ACLResourceTypeTopic, name)
		}
		if err != nil {
			t.ErrorCode = errCode(err)
			resp.Topics = append(resp.Topics, t)
			continue
		}
		fillPartitions(&t, parts)
		// A listing of every topic (an admin tool, a consumer matching
		// a pattern) is answered at once: a partition whose replicas are
		// live but cannot elect (two of three stopped by full disks) would
		// otherwise hold every listing 2 s. A client that writes or reads
		// a partition asks for its topic by name.
		if s.cluster != nil && !all && s.stuck.electing(name, parts, time.Now()) {
			elections = append(elections, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, t)
	}
	if len(elections) > 0 {
		s.awaitElections(ctx, resp, elections, src)
	}
	return resp
}

// fillPartitions sets t's partitions from parts.
func fillPartitions(t *kmsg.MetadataResponseTopic, parts []PartitionInfo) {
	t.Partitions = t.Partitions[:0]
	for _, pi := range parts {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = pi.Partition, pi.Leader, pi.LeaderEpoch
		mp.Replicas, mp.ISR, mp.OfflineReplicas = nonNil(pi.Replicas), nonNil(pi.ISR), nonNil(pi.Offline)
		if pi.Leader < 0 {
			// LEADER_NOT_AVAILABLE during an election: clients retry.
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		t.Partitions = append(t.Partitions, mp)
	}
}

// electing reports whether pi is having an election: it has no leader,
// or one that is not live, while a majority of its replicas is live, so
// raft will soon elect one.
func electing(pi PartitionInfo) bool {
	if pi.Leader >= 0 && !slices.Contains(pi.Offline, pi.Leader) {
		return false
	}
	return len(pi.Replicas)-len(pi.Offline) > len(pi.Replicas)/2
}

// stuckFor is how long a partition whose election outlasted a Metadata's
// wait is answered at once: its replicas are live but cannot elect (two
// of three stopped by full disks, a node whose raft group is broken), and
// every Metadata naming its topic would otherwise wait leaderHintWait. A
// partition still stuck after it costs one more wait, then is remembered
// again: at most one wait per partition in stuckFor.
const stuckFor = 30 * time.Second

// stuckElections remembers the partitions whose election outlasted a
// Metadata's wait, and since when.
type stuckElections struct {
	mu    sync.Mutex
	since map[tp]time.Time
}

// electing reports whether one of topic's parts is having an election
// worth waiting for: electing, and not stuck in the last stuckFor. A
// partition seen with a live leader is forgotten: its next election is
// waited for.
func (se *stuckElections) electing(topic string, parts []PartitionInfo, now time.Time) bool {
	se.mu.Lock()
	defer se.mu.Unlock()
	wait := false
	for _, pi := range parts {
		k := tp{topic, pi.Partition}
		if !electing(pi) {
			delete(se.since, k)
			continue
		}
		if t, ok := se.since[k]; ok && now.Sub(t) < stuckFor {
			continue
		}
		wait = true
	}
	return wait
}

// stuck remembers topic's parts that are still electing as stuck since
// now, and forgets those that have lapsed.
func (se *stuckElections) stuck(topic string, parts []PartitionInfo, now time.Time) {
	se.mu.Lock()
	defer se.mu.Unlock()
	for k, t := range se.since {
		if now.Sub(t) >= stuckFor {
			delete(se.since, k)
		}
	}
	for _, pi := range parts {
		if electing(pi) {
			if se.since == nil {
				se.since = map[tp]time.Time{}
			}
			if _, ok := se.since[tp{topic, pi.Partition}]; !ok {
				se.since[tp{topic, pi.Partition}] = now
			}
		}
	}
}

// awaitElections holds a cluster's Metadata answer while partitions of
// the topics at indexes electing of resp are having an election, until
// each has a live leader, up to leaderHintWait or ctx's end, and answers
// what this node knows then. Answered at once, such a partition would say
// LEADER_NOT_AVAILABLE, and kgo asks again only after its MetadataMinAge
// (5 s by default): a walk's producer with kgo's defaults stalled about
// 5 s after each SIGKILL of a leader, for an election of 1 to 2 s.
// Kafka's brokers do not wait (its controller names a new leader as it
// fences the old one, and the Java client asks again after
// retry.backoff.ms); here raft has no leader until its election ends. A
// partition whose replicas are mostly not live is answered at once: no
// election can end. Partitions still electing when the wait ends are
// remembered as stuck (stuckElections).
func (s *Server) awaitElections(ctx context.Context, resp *kmsg.MetadataResponse, waiting []int, src topicSource) {
	latest := make(map[int][]PartitionInfo, len(waiting))
	s.awaitLeaders(ctx, func() bool {
		left := waiting[:0]
		for _, i := range waiting {
			t := &resp.Topics[i]
			parts, err := src.partitions(*t.Topic)
			if err != nil {
				continue // deleted meanwhile: the answer read before stands
			}
			fillPartitions(t, parts)
			latest[i] = parts
			// A partition already known stuck is not waited for here
			// either, beside one that is electing.
			if s.stuck.electing(*t.Topic, parts, time.Now()) {
				left = append(left, i)
			}
		}
		waiting = left
		return len(waiting) == 0
	})
	if ctx.Err() == nil {
		now := time.Now()
		for _, i := range waiting {
			s.stuck.stuck(*resp.Topics[i].Topic, latest[i], now)
		}
	}
	// A leader named now may have become live while the answer waited.
	s.clusterBrokers(resp)
}

// nonNil is ids or an empty list: a null array is not valid before the
// versions that allow it, and clients read an empty one the same.
func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// storeTopics is the single node's topicSource: the store's topics, each
// partition led and replicated by this broker alone, at leader epoch 0.
func (s *Server) storeTopics() topicSource {
	parts := func(n int, err error) ([]PartitionInfo, error) {
		if err != nil {
			return nil, err
		}
		out := make([]PartitionInfo, n)
		for p := range out {
			out[p] = PartitionInfo{Partition: int32(p), Leader: s.cfg.NodeID,
				Replicas: []int32{s.cfg.NodeID}, ISR: []int32{s.cfg.NodeID}}
		}
		return out, nil
	}
	return topicSource{
		all: func() []string {
			names := s.st.Topics()
			if _, err := s.st.Partitions(store.OffsetsTopic); err == nil {
				names = append(names, store.OffsetsTopic)
			}
			return names
		},
		partitions:       func(name string) ([]PartitionInfo, error) { return parts(s.st.Partitions(name)) },
		createOnFirstUse: func(name string) ([]PartitionInfo, error) { return parts(s.createOnFirstUse(name)) },
	}
}

// createOnFirstUse creates a topic as auto.create.topics.enable does, with
// num.partitions partitions, and returns its partition count (another
// request may have created it meanwhile).
func (s *Server) createOnFirstUse(name string) (int, error) {
	err := s.st.CreateTopic(name, s.cfg.NumPartitions, s.cfg.TopicConfig.Inherited())
	if err != nil && !errors.Is(err, store.ErrTopicExists) {
		return 0, err
	}
	return s.st.Partitions(name)
}

// errCode maps a store or log error to Kafka's error code.
func errCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, store.ErrUnknownTopic), errors.Is(err, store.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, store.ErrInvalidTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, store.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, store.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, store.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, store.ErrInternalTopic):
		return kerr.TopicAuthorizationFailed.Code
	}
	if code := clusterErrCode(err); code != 0 {
		return code
	}
	return logErrorCode(err)
}
