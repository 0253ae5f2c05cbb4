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
	s.awaitLeaders(ctx, func() bool {
		todo = s.nameLeaders(todo, &named)
		return len(todo) == 0
	})
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

// leaderRecheck is how often awaitLeaders looks again without a
// notification: the leaders of partitions this node does not replicate
// come in the controller's heartbeat answers, which notify nothing.
const leaderRecheck = 100 * time.Millisecond

// awaitLeaders calls known, and again at each change the Cluster
// notifies and every leaderRecheck, until it says yes, leaderHintWait
// has passed or ctx ends; after either of those it calls known once
// more. known looks at what this node knows of leaders.
func (s *Server) awaitLeaders(ctx context.Context, known func() bool) {
	timer := time.NewTimer(leaderHintWait)
	defer timer.Stop()
	tick := time.NewTicker(leaderRecheck)
	defer tick.Stop()
	for expired := false; ; {
		woken := s.notify.wait() // before the look: a change in between is not missed
		if known() || expired {
			return
		}
		select {
		case <-woken:
		case <-tick.C:
		case <-timer.C:
			expired = true // one last look
		case <-ctx.Done():
			expired = true
		}
	}
}

// leaders looks up, once per topic, the leaders this node knows.
type leaders struct {
	s     *Server
	parts map[string][]PartitionInfo
}

// elsewhere returns the leader of topic's partition and its epoch, if
// this node knows one and it is another node: a leader to send a client
// to. A leader unknown, or this node (one handing its leadership over
// still names itself), is not.
func (l *leaders) elsewhere(topic string, partition int32) (leader, epoch int32, ok bool) {
	if l.parts == nil {
		l.parts = make(map[string][]PartitionInfo)
	}
	ps, seen := l.parts[topic]
	if !seen {
		ps, _ = l.s.cluster.Partitions(topic) // an error: nothing known
		l.parts[topic] = ps
	}
	k := slices.IndexFunc(ps, func(pi PartitionInfo) bool { return pi.Partition == partition })
	if k < 0 || ps[k].Leader < 0 || ps[k].Leader == l.s.cfg.NodeID || ps[k].LeaderEpoch < 0 {
		return -1, -1, false
	}
	return ps[k].Leader, ps[k].LeaderEpoch, true
}

// nameLeaders sets each answer's CurrentLeader to the partition's leader
// this node knows, if that is another node, adds the leader to named
// once, and returns the answers it could not fill.
func (s *Server) nameLeaders(todo []hintee, named *[]int32) []hintee {
	look := leaders{s: s}
	left := todo[:0]
	for _, h := range todo {
		leader, epoch, ok := look.elsewhere(h.topic, h.rp.Partition)
		if !ok {
			left = append(left, h)
			continue
		}
		h.rp.CurrentLeader.LeaderID, h.rp.CurrentLeader.LeaderEpoch = leader, epoch
		if !slices.Contains(*named, leader) {
			*named = append(*named, leader)
		}
	}
	return left
}

// awaitFetchLeaders holds a cluster's Fetch answer that has partitions
// answered NOT_LEADER_OR_FOLLOWER while this node knows no leader
// elsewhere for one of them (a handover under way on this node, an
// election), until it knows one for each, up to leaderHintWait or ctx's
// end, and reports whether it waited (the caller reads again). Fetch up
// to v12 carries no leader hint, so a client learns the new leader from
// the Metadata it asks for next; answered before this node knows it, that
// Metadata says LEADER_NOT_AVAILABLE, and kgo waits its MetadataMinAge
// (5 s) to ask again: a walk's consumers stalled 5 s at each graceful
// stop of a leader.
func (s *Server) awaitFetchLeaders(ctx context.Context, a *fetchAnswer) bool {
	if s.cluster == nil {
		return false
	}
	type tp struct {
		topic     string
		partition int32
	}
	var todo []tp
	for _, t := range a.topics {
		for _, p := range t.parts {
			if p.code == kerr.NotLeaderForPartition.Code {
				todo = append(todo, tp{t.name, p.partition})
			}
		}
	}
	known := func() bool {
		look := leaders{s: s}
		for _, x := range todo {
			if _, _, ok := look.elsewhere(x.topic, x.partition); !ok {
				return false
			}
		}
		return true
	}
	if len(todo) == 0 || known() {
		return false
	}
	s.awaitLeaders(ctx, known)
	return true
}
