package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// Errors of Cluster.ElectPreferredLeader.
var (
	// ErrElectionNotNeeded: the partition has the leader the election
	// would give it: its preferred replica for a PREFERRED election, any
	// for an UNCLEAN one (ELECTION_NOT_NEEDED).
	ErrElectionNotNeeded = errors.New("server: no election is needed")
	// ErrPreferredLeaderNotAvailable: the preferred replica cannot take
	// the partition over now: its broker is not live, it is not in the
	// ISR, or the partition has no leader to hand it over
	// (PREFERRED_LEADER_NOT_AVAILABLE).
	ErrPreferredLeaderNotAvailable = errors.New("server: the preferred replica cannot lead the partition now")
)

// electConcurrency bounds the partitions one ElectLeaders request moves
// at once: each waits for its new leader, and a request naming every
// partition of a large cluster should not start them all together.
const electConcurrency = 16

// electionResult is one partition's answer to ElectLeaders.
type electionResult struct {
	topic     string
	partition int32
	err       error
}

// electLeaders answers ElectLeaders (kafka-leader-election.sh, kadm's
// ElectLeaders). A PREFERRED election hands each partition to its
// preferred replica, its first, through the Cluster, and answers once that
// replica leads it or the request's timeout passes (REQUEST_TIMED_OUT);
// ELECTION_NOT_NEEDED where it leads already. An UNCLEAN election cannot
// be made on raft, which elects a leader whenever a majority of the
// replicas is live and never one outside it: a partition with a leader
// needs none, one without is ELIGIBLE_LEADERS_NOT_AVAILABLE. On one node
// every partition's one replica leads it: ELECTION_NOT_NEEDED. No topics
// (null) means every partition.
func (s *Server) electLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	const preferred, unclean = 0, 1
	kind := int8(preferred)
	if req.Version >= 1 {
		kind = req.ElectionType
	}
	if kind != preferred && kind != unclean {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	results := s.electionTargets(req.Topics)
	if s.cluster != nil {
		var cancel context.CancelFunc
		ctx, cancel = adminContext(ctx, req.TimeoutMillis)
		defer cancel()
	}
	sem := make(chan struct{}, electConcurrency)
	var wg sync.WaitGroup
	for i := range results {
		r := &results[i]
		if r.err != nil {
			continue
		}
		switch {
		case s.cluster == nil:
			r.err = fmt.Errorf("%w: %s-%d has one replica, which leads it", ErrElectionNotNeeded, r.topic, r.partition)
		case kind == unclean:
			r.err = s.uncleanElection(r.topic, r.partition)
		default:
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				r.err = s.cluster.ElectPreferredLeader(ctx, r.topic, r.partition)
			})
		}
	}
	wg.Wait()
	for _, r := range results {
		i := slices.IndexFunc(resp.Topics, func(t kmsg.ElectLeadersResponseTopic) bool { return t.Topic == r.topic })
		if i < 0 {
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic = r.topic
			resp.Topics = append(resp.Topics, t)
			i = len(resp.Topics) - 1
		}
		p := kmsg.NewElectLeadersResponseTopicPartition()
		p.Partition = r.partition
		if r.err != nil {
			p.ErrorCode = errCode(r.err)
			msg := r.err.Error()
			p.ErrorMessage = &msg
		}
		t := &resp.Topics[i]
		t.Partitions = append(t.Partitions, p)
	}
	return resp
}

// electionTargets lists the partitions an ElectLeaders request names,
// each once, in the request's order (every partition of every topic for
// null); an unknown topic or partition carries its error.
func (s *Server) electionTargets(topics []kmsg.ElectLeadersRequestTopic) []electionResult {
	count := func(topic string) (int, error) {
		if s.cluster != nil {
			infos, err := s.cluster.Partitions(topic)
			return len(infos), err
		}
		return s.st.Partitions(topic)
	}
	var out []electionResult
	if topics == nil {
		var names []string
		if s.cluster != nil {
			names = s.cluster.Topics()
		} else {
			names = s.storeTopics().all()
		}
		for _, name := range names {
			n, err := count(name)
			if err != nil {
				continue // deleted since listed
			}
			for p := range n {
				out = append(out, electionResult{topic: name, partition: int32(p)})
			}
		}
		return out
	}
	seen := map[electionResult]bool{}
	for _, t := range topics {
		n, err := count(t.Topic)
		for _, p := range t.Partitions {
			r := electionResult{topic: t.Topic, partition: p}
			if seen[r] {
				continue
			}
			seen[r] = true
			switch {
			case err != nil:
				r.err = err
			case p < 0 || int(p) >= n:
				r.err = fmt.Errorf("%w: %s-%d", store.ErrUnknownPartition, t.Topic, p)
			}
			out = append(out, r)
		}
	}
	return out
}

// uncleanElection is an UNCLEAN election's answer for a partition of the
// cluster: none is needed while it has a leader, and none can be made
// without one.
func (s *Server) uncleanElection(topic string, partition int32) error {
	infos, err := s.cluster.Partitions(topic)
	switch {
	case err != nil:
		return err
	case int(partition) >= len(infos):
		return fmt.Errorf("%w: %s-%d", store.ErrUnknownPartition, topic, partition)
	case infos[partition].Leader >= 0:
		return fmt.Errorf("%w: %s-%d has a leader, node %d", ErrElectionNotNeeded, topic, partition, infos[partition].Leader)
	}
	return errNoUncleanElection
}

// errNoUncleanElection is an UNCLEAN election of a partition with no
// leader (ELIGIBLE_LEADERS_NOT_AVAILABLE).
var errNoUncleanElection = errors.New("server: raft elects a leader once a majority of the replicas is live, and never a replica outside it: no unclean election can be made")
