package server

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderHintWait bounds how long a NOT_LEADER_OR_FOLLOWER answer waits
// for this node to learn of a leader other than itself, to name it. A
// leadership transfer (a graceful stop's handover) refuses writes while
// this node still leads, and the new leader is known here a few round
// trips later, unless the transferee must catch up first: raft gives a
// transfer up after an election timeout (1 s with the cluster's default
// tick), which this outlasts. An election after a leader died (1 to 2 s)
// often ends within it too. Answered without a hint, a v10+ client (one
// that reads hints) would wait for its metadata refresh instead, kgo's
// rate-limited to 5 s.
const leaderHintWait = 2 * time.Second

// hintee is a partition answer leaderHints fills.
type hintee struct {
	topic string
	rp    *kmsg.ProduceResponseTopicPartition
}

// leaderHints adds KIP-951's hints to a cluster's Produce answers (v10+,
// where they are tagged fields): each partition answered
// NOT_LEADER_OR_FOLLOWER, on whichever path (a follower asked, a
// leadership lost during the write, a node stopping), names the leader
// this node knows and its epoch, and the response lists that leader's
// endpoint once, as Metadata advertises it. A client that understands
// them (kgo, the Java client) moves the partition at once; without them
// it waits for a metadata refresh, which kgo rate-limits to
// MetadataMinAge (5 s by default).
//
// As Kafka's broker does, the leader is looked up once the partitions are
// answered: the newest this node knows. Kafka's controller names the new
// leader before the old one refuses writes; here raft refuses them first
// (a transfer under way, an election), so while this node knows no
// leader but itself, the answer waits for a change of leader, up to
// leaderHintWait or ctx's end. A leader still not known, or this node,
// keeps the default -1/-1 and names no broker: a hint must point
// elsewhere to be of use. A leader that is not a live broker is named
// without an endpoint, as Kafka does when it has none.
func (s *Server) leaderHints(ctx context.Context, resp *kmsg.ProduceResponse) {
	if s.cluster == nil || resp.Version < 10 {
		return
	}
	var todo []hintee
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			if rp := &rt.Partitions[j]; rp.ErrorCode == kerr.NotLeaderForPartition.Code {
				todo = append(todo, hintee{rt.Topic, rp})
			}
		}
	}
	if len(todo) == 0 {
		return
	}
	var named []int32 // the leaders named, in order
	timer := time.NewTimer(leaderHintWait)
	defer timer.Stop()
	for expired := false; ; {
		woken := s.notify.wait() // before the look: a change in between is not missed
		if todo = s.nameLeaders(todo, &named); len(todo) == 0 || expired {
			break
		}
		select {
		case <-woken:
		case <-timer.C:
			expired = true // one last look
		case <-ctx.Done():
			expired = true
		}
	}
	if len(named) == 0 {
		return
	}
	brokers, _ := s.cluster.Brokers()
	for _, id := range named {
		if b := slices.IndexFunc(brokers, func(b Broker) bool { return b.NodeID == id }); b >= 0 {
			rb := kmsg.NewProduceResponseBroker()
			rb.NodeID, rb.Host, rb.Port, rb.Rack = brokerEndpoint(brokers[b])
			resp.Brokers = append(resp.Brokers, rb)
		}
	}
}

// nameLeaders sets each answer's CurrentLeader to the partition's leader
// this node knows, if that is another node, adds the leader to named
// once, and returns the answers it could not fill.
func (s *Server) nameLeaders(todo []hintee, named *[]int32) []hintee {
	parts := make(map[string][]PartitionInfo) // one look per topic
	left := todo[:0]
	for _, h := range todo {
		ps, ok := parts[h.topic]
		if !ok {
			ps, _ = s.cluster.Partitions(h.topic) // an error: nothing known
			parts[h.topic] = ps
		}
		k := slices.IndexFunc(ps, func(pi PartitionInfo) bool { return pi.Partition == h.rp.Partition })
		if k < 0 || ps[k].Leader < 0 || ps[k].Leader == s.cfg.NodeID || ps[k].LeaderEpoch < 0 {
			left = append(left, h)
			continue
		}
		h.rp.CurrentLeader.LeaderID, h.rp.CurrentLeader.LeaderEpoch = ps[k].Leader, ps[k].LeaderEpoch
		if !slices.Contains(*named, ps[k].Leader) {
			*named = append(*named, ps[k].Leader)
		}
	}
	return left
}
