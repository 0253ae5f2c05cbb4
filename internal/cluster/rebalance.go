package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
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

// takers is the nodes a partition's leadership may be handed to: the live
// ones, less those stopping (a node's SIGTERM hands its partitions over,
// and tells the controller in its heartbeats from then on; a node that
// handed a partition back to it meanwhile would stall the partition's
// writes twice, and a walk saw one stopped still leading it).
func (n *Node) takers(st *meta.State) map[int32]bool {
	live := n.liveSet(st)
	for id := range n.stoppingSet() {
		delete(live, id)
	}
	return live
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
	moves := preferredMoves(n.cfg.NodeID, n.ledPlacements(st), n.takers(st))
	started := 0
	for _, m := range moves {
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.RequestTimeout)
		ok, err := n.parts.TransferLeader(ctx, m.topic, m.partition, m.to)
		cancel()
		switch {
		case err == nil && !ok:
			// Under way since an earlier check: said then.
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

// opElect asks a partition's leader to hand it to its preferred replica
// (ElectLeaders): Topic and Partitions (the partition) name it. It is
// answered by any node, not only the controller: only the leader can make
// the move. A build before it answers that it is not the controller,
// which ElectPreferredLeader reports as it came.
const opElect = "elect-preferred-leader"

// ElectPreferredLeader hands a partition's leadership to its preferred
// replica (server.Cluster's, for ElectLeaders): on this node when it leads
// the partition, else through its leader's node, as this node last knows
// it. It returns once the preferred replica leads, or with ctx's error.
// While the partition has no leader, or the node asked answers that it
// no longer leads it (an election, a leader handing over as it stops),
// it looks again, for up to electPatience: a walk's elections sent just
// after a node's SIGTERM were answered NOT_LEADER_OR_FOLLOWER and
// PREFERRED_LEADER_NOT_AVAILABLE for partitions that were merely moving.
func (n *Node) ElectPreferredLeader(ctx context.Context, topic string, partition int32) error {
	deadline := time.Now().Add(electPatience)
	for {
		err := n.electOnce(ctx, topic, partition)
		moving := errors.Is(err, server.ErrNotLeader) || errors.Is(err, errOnTheMove)
		if !moving || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-n.ctx.Done():
			return ErrClosed
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// electPatience bounds how long ElectPreferredLeader looks again for a
// partition on the move: longer than an election.
const electPatience = 3 * time.Second

// errOnTheMove is electOnce's answer for a partition whose leadership is
// moving: it has no leader, its leader's node did not answer, or another
// node took it over. PREFERRED_LEADER_NOT_AVAILABLE, unless it settles in
// time.
var errOnTheMove = fmt.Errorf("%w: its leadership is moving", server.ErrPreferredLeaderNotAvailable)

// electOnce is one try of ElectPreferredLeader.
func (n *Node) electOnce(ctx context.Context, topic string, partition int32) error {
	info, err := n.partitionInfo(topic, partition)
	if err != nil {
		return err
	}
	switch {
	case len(info.Replicas) > 0 && info.Leader == info.Replicas[0]:
		return fmt.Errorf("%w: %s-%d is led by its preferred replica, node %d", server.ErrElectionNotNeeded, topic, partition, info.Leader)
	case info.Leader < 0:
		return fmt.Errorf("%w: %s-%d has no leader now", errOnTheMove, topic, partition)
	case info.Leader == n.cfg.NodeID:
		return n.electHere(ctx, topic, partition)
	}
	resp, err := n.roundTrip(ctx, info.Leader, request{Op: opElect, Broker: n.cfg.NodeID, Topic: topic, Partitions: partition})
	if err != nil {
		return fmt.Errorf("%w: %s-%d: its leader, node %d, did not answer: %v", errOnTheMove, topic, partition, info.Leader, err)
	}
	return resp.errFrom(fmt.Sprintf("node %d", info.Leader))
}

// electHere moves a partition this node leads to its preferred replica,
// if that one is live and in the ISR, and waits until it leads. A node
// stopping moves nothing: its HandOver is moving its partitions, and a
// transfer of its own would race it (a walk saw the handover's target
// win, and the partition left off its preferred replica); the asker looks
// again once the handover is done.
func (n *Node) electHere(ctx context.Context, topic string, partition int32) error {
	if n.stopping.Load() {
		return fmt.Errorf("%w: %s-%d: its leader, node %d, is stopping", errOnTheMove, topic, partition, n.cfg.NodeID)
	}
	st := n.meta.State()
	t, ok := st.Topic(topic)
	if !ok {
		return fmt.Errorf("%w: %s", store.ErrUnknownTopic, topic)
	}
	if int(partition) >= len(t.Replicas) || len(t.Replicas[partition]) == 0 {
		return fmt.Errorf("%w: %s-%d", store.ErrUnknownPartition, topic, partition)
	}
	pref := t.Replicas[partition][0]
	leader, _, isr, ok := n.parts.Leader(topic, partition)
	switch {
	case !ok || leader != n.cfg.NodeID:
		if leader == pref {
			return fmt.Errorf("%w: %s-%d is led by its preferred replica, node %d", server.ErrElectionNotNeeded, topic, partition, leader)
		}
		return fmt.Errorf("%w: %s-%d is not led by node %d", server.ErrNotLeader, topic, partition, n.cfg.NodeID)
	case pref == n.cfg.NodeID:
		return fmt.Errorf("%w: %s-%d is led by its preferred replica, node %d", server.ErrElectionNotNeeded, topic, partition, leader)
	case !n.takers(st)[pref]:
		return fmt.Errorf("%w: %s-%d: node %d is not live, or is stopping", server.ErrPreferredLeaderNotAvailable, topic, partition, pref)
	case !slices.Contains(isr, pref):
		return fmt.Errorf("%w: %s-%d: node %d is not in the ISR %v", server.ErrPreferredLeaderNotAvailable, topic, partition, pref, isr)
	}
	if _, err := n.parts.TransferLeader(ctx, topic, partition, pref); err != nil {
		return err
	}
	n.log.Info("cluster: moving a partition's leadership to its preferred replica", "topic", topic, "partition", partition, "to", pref, "asked", true)
	// Raft gives a transfer up after an election timeout without the
	// transferee taking over; the leader asks again while ctx lasts.
	t0 := time.NewTicker(electPoll)
	defer t0.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.ctx.Done():
			return ErrClosed
		case <-t0.C:
		}
		if !n.takers(n.meta.State())[pref] {
			// Gone, or stopping, since the transfer began.
			return fmt.Errorf("%w: %s-%d: node %d is not live any more, or is stopping", server.ErrPreferredLeaderNotAvailable, topic, partition, pref)
		}
		leader, _, _, _ := n.parts.Leader(topic, partition)
		switch leader {
		case pref:
			return nil
		case n.cfg.NodeID:
			// Raft gave the transfer up, or has not told this node yet
			// that it is done: asked again, a transfer under way is
			// left alone and a done one answers not leader, and the
			// next look finds the new leader.
			if _, err := n.parts.TransferLeader(ctx, topic, partition, pref); err != nil && !errors.Is(err, server.ErrNotLeader) {
				return err
			}
		case -1:
			// An election under way: the transferee's, most likely.
		default:
			return fmt.Errorf("%w: %s-%d: node %d took it over instead", errOnTheMove, topic, partition, leader)
		}
	}
}

// electPoll is how often electHere looks whether the preferred replica
// has taken over: a transfer takes a round trip or two.
const electPoll = 20 * time.Millisecond

// serveElect is a peer's opElect, on the node it believes leads the
// partition.
func (n *Node) serveElect(ctx context.Context, req request) response {
	if err := n.electHere(ctx, req.Topic, req.Partitions); err != nil {
		return errResponse(err)
	}
	return response{}
}
