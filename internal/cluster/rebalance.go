package cluster

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/server"
)

// Leader rebalancing, Kafka's auto.leader.rebalance.enable: a partition's
// first replica is its preferred leader, and the assignment spreads the
// first replicas over the nodes, so leaders on their preferred replicas
// spread the leaders' work (the clients' requests, the sends to the
// followers) evenly. A fresh partition's first election goes to its
// preferred replica (multiraft's first-election hold), but after a node
// dies its partitions are led elsewhere, and raft never moves them back by
// itself: after a rolling restart, one node would lead everything.
//
// So every Config.LeaderImbalanceCheckInterval each node looks at the
// partitions it leads, and hands each one whose preferred replica is
// another node, live and in the ISR, over to that replica (raft's
// leadership transfer). The leader decides, not the controller as in
// Kafka: only the leader knows its ISR exactly, and the transfer is its
// own step. This is KRaft's rule (since Kafka 4.0, which dropped
// leader.imbalance.per.broker.percentage): every imbalanced partition whose
// preferred replica can take it moves, with no threshold.

// Defaults for the rebalancer's Config fields.
const (
	// DefaultLeaderImbalanceCheckInterval is Kafka's
	// leader.imbalance.check.interval.seconds.
	DefaultLeaderImbalanceCheckInterval = 5 * time.Minute
)

// placement is one partition as the rebalancer weighs it.
type placement struct {
	topic     string
	partition int32
	replicas  []int32 // preference order: the first is the preferred leader
	leader    int32   // -1 unknown
	isr       []int32
}

// leaderMove is one partition's leadership to hand over.
type leaderMove struct {
	topic     string
	partition int32
	to        int32
}

// preferredMoves lists the partitions among parts that self leads and
// should hand to their preferred replica: another node, live, and in the
// partition's ISR (caught up, so the transfer is quick and the partition
// keeps its acknowledged records).
func preferredMoves(self int32, parts []placement, live map[int32]bool) []leaderMove {
	var out []leaderMove
	for _, p := range parts {
		if p.leader != self || len(p.replicas) == 0 {
			continue
		}
		pref := p.replicas[0]
		if pref == self || !live[pref] || !slices.Contains(p.isr, pref) {
			continue
		}
		out = append(out, leaderMove{topic: p.topic, partition: p.partition, to: pref})
	}
	return out
}

// ledPlacements lists the partitions this node leads as st assigns them,
// with the ISR the partition manager knows.
func (n *Node) ledPlacements(st *meta.State) []placement {
	var out []placement
	for _, name := range st.TopicNames() {
		t, _ := st.Topic(name)
		for p, r := range t.Replicas {
			if len(r) == 0 || r[0] == n.cfg.NodeID || !slices.Contains(r, n.cfg.NodeID) {
				continue // on its preferred replica, or not here
			}
			leader, _, isr, ok := n.parts.Leader(name, int32(p))
			if ok && leader == n.cfg.NodeID {
				out = append(out, placement{topic: name, partition: int32(p), replicas: r, leader: leader, isr: isr})
			}
		}
	}
	return out
}

// rebalanceLoop moves this node's led partitions to their preferred
// replicas every LeaderImbalanceCheckInterval, until the node closes. It
// does not run when the interval is negative.
func (n *Node) rebalanceLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.LeaderImbalanceCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		n.rebalance()
	}
}

// rebalance starts the moves preferredMoves finds now, and returns how
// many it started.
func (n *Node) rebalance() int {
	st := n.meta.State()
	moves := preferredMoves(n.cfg.NodeID, n.ledPlacements(st), n.liveSet(st))
	started := 0
	for _, m := range moves {
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.RequestTimeout)
		err := n.parts.TransferLeader(ctx, m.topic, m.partition, m.to)
		cancel()
		switch {
		case err == nil:
			started++
			n.log.Info("cluster: moving a partition's leadership to its preferred replica", "topic", m.topic, "partition", m.partition, "to", m.to)
		case errors.Is(err, server.ErrNotLeader), n.ctx.Err() != nil:
			// Led elsewhere since it was looked at, or the node is
			// stopping: nothing to move.
		default:
			n.log.Warn("cluster: moving a partition's leadership to its preferred replica", "topic", m.topic, "partition", m.partition, "to", m.to, "error", err)
		}
	}
	return started
}
