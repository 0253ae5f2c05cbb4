package server

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// createPartitions grows topics as Kafka's CreatePartitions does, through
// the store's AddPartitions (new partition directories, then the topic
// file's count, crash-safely). A topic named twice is INVALID_REQUEST for
// each mention, as in Kafka. An assignment list is accepted only when it
// is what this single node would do anyway: one entry per new partition,
// each naming this node alone.
func (s *Server) createPartitions(req *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := make(map[string]int)
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		fail := func(code int16, msg string) {
			rt.ErrorCode = code
			rt.ErrorMessage = kmsg.StringPtr(msg)
		}
		if seen[t.Topic] > 1 {
			fail(kerr.InvalidRequest.Code, "duplicate topic in request")
		} else if s.cluster != nil {
			if code, msg := s.clusterCreatePartitions(t, req.ValidateOnly, req.TimeoutMillis); code != 0 {
				fail(code, msg)
			}
		} else if err := s.st.CheckAddPartitions(t.Topic, int(t.Count)); err != nil {
			fail(errCode(err), err.Error())
		} else if t.Assignment != nil && !s.trivialAssignment(t) {
			fail(kerr.InvalidReplicaAssignment.Code, fmt.Sprintf("this is the single node %d: each new partition may only be assigned [%d], one assignment per new partition", s.cfg.NodeID, s.cfg.NodeID))
		} else if !req.ValidateOnly {
			if err := s.st.AddPartitions(t.Topic, int(t.Count)); err != nil {
				fail(errCode(err), err.Error())
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// trivialAssignment says whether a topic's assignment list has one entry
// per new partition, each this node alone.
func (s *Server) trivialAssignment(t kmsg.CreatePartitionsRequestTopic) bool {
	n, err := s.st.Partitions(t.Topic)
	if err != nil || len(t.Assignment) != int(t.Count)-n {
		return false
	}
	for _, a := range t.Assignment {
		if len(a.Replicas) != 1 || a.Replicas[0] != s.cfg.NodeID {
			return false
		}
	}
	return true
}
