package server

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// metadata answers with this one broker as leader, replica and in-sync
// replica of every partition. A topic asked for by name that does not exist
// is created when auto creation is on and the client allows it (Metadata
// v4+ says so per request; older versions always allow it, as Kafka does).
func (s *Server) metadata(ctx context.Context, req *kmsg.MetadataRequest) kmsg.Response {
	if s.cluster != nil {
		return s.clusterMetadata(ctx, req)
	}
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: s.cfg.NodeID, Host: s.host, Port: s.port}}
	resp.ClusterID = kmsg.StringPtr(s.cfg.ClusterID)
	resp.ControllerID = s.cfg.NodeID
	var names []string
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		// Kafka lists its internal offsets topic too, marked internal;
		// clients matching topics by regex rely on the mark to skip it.
		names = s.st.Topics()
		if _, err := s.st.Partitions(store.OffsetsTopic); err == nil {
			names = append(names, store.OffsetsTopic)
		}
	} else {
		for _, t := range req.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
	}
	allowCreate := req.Version < 4 || req.AllowAutoTopicCreation
	for _, name := range names {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = kmsg.StringPtr(name)
		t.IsInternal = name == store.OffsetsTopic
		n, err := s.st.Partitions(name)
		if errors.Is(err, store.ErrUnknownTopic) && !all && allowCreate && s.autoCreate() {
			n, err = s.createOnFirstUse(name)
		}
		if err != nil {
			t.ErrorCode = errCode(err)
			resp.Topics = append(resp.Topics, t)
			continue
		}
		for p := range int32(n) {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition = p
			mp.Leader = s.cfg.NodeID
			mp.LeaderEpoch = 0
			mp.Replicas = []int32{s.cfg.NodeID}
			mp.ISR = []int32{s.cfg.NodeID}
			mp.OfflineReplicas = []int32{}
			t.Partitions = append(t.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
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
