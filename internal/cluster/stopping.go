package cluster

import (
	"slices"
	"time"
)

// Stopping nodes (Kafka's controlled shutdown tells the controller, which
// then elects no leader on the broker going away): a node whose HandOver
// began says so in every heartbeat from then on, the controller keeps
// what each live broker last said and answers every heartbeat with the
// brokers stopping, and a node hands no partition to one of them
// (takers, rebalance.go). Builds before it send no flag: they count as
// not stopping, as before.

// noteStopping records, on the controller, whether broker id said it is
// stopping; n.mu held. A registration (a new process) clears it.
func (n *Node) noteStopping(id int32, stopping bool) {
	if n.stoppingIDs == nil {
		n.stoppingIDs = map[int32]bool{}
	}
	if stopping {
		n.stoppingIDs[id] = true
	} else {
		delete(n.stoppingIDs, id)
	}
}

// stoppingList is, on the controller, the live brokers stopping, sorted;
// n.mu held.
func (n *Node) stoppingList(live map[int32]bool) []int32 {
	var out []int32
	for id := range n.stoppingIDs {
		if live[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// stoppingSet is the brokers this node knows to be stopping: itself once
// its HandOver began; on the controller, the brokers whose last heartbeat
// said so; elsewhere, the controller's last answer while it is fresh
// (LivenessTimeout, as the live set).
func (n *Node) stoppingSet() map[int32]bool {
	out := map[int32]bool{}
	if n.stopping.Load() {
		out[n.cfg.NodeID] = true
	}
	ctrl := n.meta.IsController()
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case ctrl:
		for id := range n.stoppingIDs {
			out[id] = true
		}
	case !n.liveAt.IsZero() && time.Since(n.liveAt) < n.cfg.LivenessTimeout:
		for _, id := range n.stoppingView {
			out[id] = true
		}
	}
	return out
}
