package multiraft

import (
	"context"
	"fmt"

	"go.etcd.io/raft/v3"
)

// A group's preferred leader is the first of the peers AddGroup created it
// with (a partition's first replica, as Kafka's). Raft elects whoever's
// election timer runs out first, so without help a new topic's partitions
// are led by whichever replicas happened to start their groups first, often
// one node for all of them. Two things put leaders back on their preferred
// replicas: a fresh group's other replicas hold their first election back
// (firstElectionHold), and TransferLeader, which the node's rebalancer
// calls for a partition whose preferred replica is back and caught up
// (Kafka's auto.leader.rebalance.enable; internal/cluster/rebalance.go).

// firstElectionHold is how many ticks a replica of a fresh group, not its
// preferred leader, holds its raft clock back: one election timeout, so its
// randomized timeout (one to two election timeouts) starts after the
// preferred replica's has ended, even when that replica added the group
// somewhat later. If the preferred replica is down, the group's first
// election comes one election timeout later than it would have.
func firstElectionHold(self uint64, peers []uint64, electionTick int) int {
	if len(peers) < 2 || peers[0] == self {
		return 0
	}
	return electionTick
}

// firstCampaign reports whether this node, adding a fresh group, starts
// its first election at once: it is the group's preferred replica, and
// not its only voter (which raft elects at its first tick). Nodes create
// a new topic's groups one after another as they apply the metadata, so
// a preferred replica that comes to a partition last, up to a few tenths
// of a second after the others (a walk saw 0.6 s with 300 partitions),
// would otherwise find their hold nearly over.
func firstCampaign(self uint64, peers []uint64) bool {
	return len(peers) > 1 && peers[0] == self
}

// recampaignTicks is how often a fresh group's preferred replica campaigns
// again while it knows no leader, during its first election timeout. Its
// first campaign, at AddGroup, reaches replicas that have not added the
// group yet when it is the first to (they drop messages for groups they do
// not run); waiting for its own timer left a new partition without a
// leader for up to 1.7 s (a walk, 2026-12-06). A campaign is a pre-vote,
// which moves no term unless a majority would grant it.
const recampaignTicks = 2

// recampaign is recampaignTicks' tick: it campaigns again when due and
// the group still knows no leader.
func (g *group) recampaign() {
	if g.firstLeft <= 0 {
		return
	}
	g.firstLeft--
	st := g.rn.BasicStatus()
	if st.Lead != raft.None {
		g.firstLeft = 0
		return
	}
	if g.firstLeft%recampaignTicks == 0 {
		_ = g.rn.Campaign()
	}
}

// holding counts down g's first-election hold on a tick, and reports
// whether the tick is held back. The hold ends early once the group knows
// a leader: a replica that is following (or, told to campaign by a
// leadership transfer, leading) must tick like any other.
func (g *group) holding() bool {
	if g.hold <= 0 {
		return false
	}
	if g.lead.Load() != 0 || g.rn.BasicStatus().RaftState != raft.StateFollower {
		g.hold = 0
		return false
	}
	g.hold--
	return true
}

// TransferLeader starts moving group id's leadership from this node to
// voter to (raft's leadership transfer: to is brought up to date, then told
// to campaign at once), and returns without waiting for it, reporting
// whether it started one. Proposals meanwhile fail with
// ErrProposalDropped, for at most an election timeout, after which raft
// gives the transfer up. It is a *NotLeaderError on a node not leading the
// group; nothing is started when a transfer is already under way (a
// caller asking again each second would otherwise restart it, and log it,
// every time) or to leads already.
func (n *Node) TransferLeader(ctx context.Context, id, to uint64) (started bool, err error) {
	if derr := n.do(ctx, func() {
		g := n.groups[id]
		if g == nil {
			err = ErrGroupNotFound
			return
		}
		st := g.rn.BasicStatus()
		switch {
		case st.RaftState != raft.StateLeader:
			err = &NotLeaderError{Group: id, Leader: st.Lead}
		case !g.voters[to]:
			err = fmt.Errorf("multiraft: group %d: node %d is not one of its voters", id, to)
		case to == n.cfg.ID || st.LeadTransferee != 0 || g.fetching:
		default:
			g.rn.TransferLeader(to)
			n.mark(g)
			started = true
		}
	}); derr != nil {
		return false, derr
	}
	return started, err
}
