package cluster

import (
	"cmp"
	"slices"
	"time"

	"github.com/seglog/seglog/internal/cluster/meta"
)

// Leaders of partitions this node does not replicate (docs
// /cluster-node.md, "Leaders"): only a partition's replicas run its raft
// group, so only they know its leader. Every node reports the partitions
// it leads (as leaderLoop last found them) in its liveness heartbeat; the controller keeps each live
// node's last report and answers every heartbeat with their union, which
// the node keeps as its view of the other partitions' leaders. The view
// is as stale as two or three heartbeat intervals (a client told of a leader
// that moved gets NOT_LEADER_OR_FOLLOWER and asks again), and it lapses
// with the node's live set, when no controller answers.
//
// Heartbeats rather than the metadata log: leadership changes at every
// election of every partition, and proposing each to the metadata group
// would put a raft write (and a disk sync on a majority) on the failover
// path of every partition, for a fact that is only advisory to clients.

// leaderReport is one partition's leader as the node leading it reports
// it: the partition by its raft group (GroupID, which names the topic's
// incarnation, so a report of a deleted topic never answers for a topic
// created again under its name), the leader epoch and the in-sync
// replicas.
type leaderReport struct {
	Group  uint64  `json:"g"`
	Leader int32   `json:"l"`
	Epoch  int32   `json:"e"`
	ISR    []int32 `json:"i,omitempty"`
}

// leaderLoop refreshes, every HeartbeatInterval, the partitions this
// node leads, which its heartbeats carry. It runs apart from the
// heartbeats: a leader's ISR is asked of the raft driver, partition by
// partition, which a busy node answers slowly, and a heartbeat that
// waited for that could miss the liveness timeout.
func (n *Node) leaderLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		led := n.ledPartitions(n.meta.State())
		n.mu.Lock()
		n.led = led
		n.mu.Unlock()
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ledPartitions lists the partitions this node leads now, as the
// metadata st assigns them.
func (n *Node) ledPartitions(st *meta.State) []leaderReport {
	var out []leaderReport
	for _, name := range st.TopicNames() {
		t, _ := st.Topic(name)
		for p, r := range t.Replicas {
			if !slices.Contains(r, n.cfg.NodeID) {
				continue
			}
			leader, epoch, isr, ok := n.parts.Leader(name, int32(p))
			if ok && leader == n.cfg.NodeID {
				out = append(out, leaderReport{Group: GroupID(t.ID, int32(p)), Leader: leader, Epoch: epoch, ISR: isr})
			}
		}
	}
	return out
}

// noteLeaders records, on the controller, what node id reported leading;
// n.mu held.
func (n *Node) noteLeaders(id int32, led []leaderReport) {
	if n.reports == nil {
		n.reports = map[int32][]leaderReport{}
	}
	n.reports[id] = led
}

// mergedLeaders is, on the controller, the union of the live nodes'
// reports: for a partition two nodes claim (an old leader that has not
// heard of the election yet), the higher epoch; n.mu held.
func (n *Node) mergedLeaders(live map[int32]bool) map[uint64]leaderReport {
	byGroup := map[uint64]leaderReport{}
	for id, led := range n.reports {
		if !live[id] {
			continue
		}
		for _, r := range led {
			if cur, ok := byGroup[r.Group]; !ok || r.Epoch > cur.Epoch {
				byGroup[r.Group] = r
			}
		}
	}
	return byGroup
}

// leaderList is a heartbeat's answer of leaders: m's reports in the
// order of their groups.
func leaderList(m map[uint64]leaderReport) []leaderReport {
	out := make([]leaderReport, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b leaderReport) int { return cmp.Compare(a.Group, b.Group) })
	return out
}

// setLeaderView keeps the leaders the controller answered, at at, and
// reports whether they changed (the node's record shows them); n.mu
// held.
func (n *Node) setLeaderView(led []leaderReport, at time.Time) bool {
	view := make(map[uint64]leaderReport, len(led))
	changed := len(led) != len(n.leaderView)
	for _, r := range led {
		view[r.Group] = r
		if old, ok := n.leaderView[r.Group]; !ok || old.Leader != r.Leader || old.Epoch != r.Epoch || !slices.Equal(old.ISR, r.ISR) {
			changed = true
		}
	}
	n.leaderView, n.leaderAt = view, at
	return changed
}

// reportedLeaders returns the partitions' leaders as the nodes report
// them, by raft group: on the controller, from the live nodes' reports;
// elsewhere, from the controller's last answer while it is fresh
// (LivenessTimeout, as the live set); nil when there is none. The map is
// the caller's to read, not to change.
func (n *Node) reportedLeaders(st *meta.State) map[uint64]leaderReport {
	if n.meta.IsController() {
		live := n.liveSet(st)
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.mergedLeaders(live)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.leaderAt.IsZero() || time.Since(n.leaderAt) >= n.cfg.LivenessTimeout {
		return nil
	}
	return n.leaderView
}
