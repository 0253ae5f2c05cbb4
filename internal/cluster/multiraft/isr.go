package multiraft

import (
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// DefaultReplicaLagMax is how long a live follower may go without
// catching up with its leader before it leaves the caught-up set (the
// ISR): Kafka's replica.lag.time.max.ms default.
const DefaultReplicaLagMax = 30 * time.Second

// catchUp is, on a group's leader, a follower's record for the caught-up
// set: Kafka's lastCaughtUpTime, sampled at each tick (sampleCatchUp). A
// follower catches up at a sample if it holds everything the leader held
// then; or at the previous sample, if it now holds what the leader held
// at that one. So a follower steadily a round behind a busy leader keeps
// catching up, and one that stopped taking entries does not. Without it
// the set was the followers whose log reached the commit index at the
// moment asked, which under a light load dropped a follower for the few
// milliseconds an entry was committed by the other one: a walk saw 291
// ISR changes in 42 s at 200 records a second.
type catchUp struct {
	at      time.Time // when it last caught up; zero: never, under this leadership
	prevEnd uint64    // the leader's last index at the previous sample
	prevAt  time.Time // that sample's time; zero: none yet
}

// observe records a sample taken at now: the follower holds up to match,
// the leader up to end, and the group has committed up to commit. The
// first sample of a leadership, which has no previous one to compare
// with, counts a follower holding every committed entry as caught up: a
// new leader's followers do not all leave the set for a tick.
func (c *catchUp) observe(now time.Time, match, end, commit uint64) {
	switch {
	case match >= end:
		c.at = now
	case c.prevAt.IsZero():
		if match >= commit {
			c.at = now
		}
	case match >= c.prevEnd:
		c.at = c.prevAt
	}
	c.prevEnd, c.prevAt = end, now
}

// since reports whether the follower caught up at or after t.
func (c *catchUp) since(t time.Time) bool {
	return c != nil && !c.at.IsZero() && !c.at.Before(t)
}

// sampleCatchUp takes a sample of each follower of a group this node
// leads (catchUp), and forgets them on a group it does not lead: a
// leadership won again starts afresh. Driver goroutine only, at each tick.
func (n *Node) sampleCatchUp(g *group, now time.Time) {
	st := g.rn.BasicStatus()
	if st.RaftState != raft.StateLeader {
		clear(g.caught)
		return
	}
	var end uint64
	g.rn.WithProgress(func(id uint64, _ raft.ProgressType, pr tracker.Progress) {
		if id == n.cfg.ID {
			end = pr.Match // the leader's own durable end
		}
	})
	if g.caught == nil {
		g.caught = make(map[uint64]*catchUp)
	}
	commit := st.GetCommit()
	recent := n.liveSince()
	g.rn.WithProgress(func(id uint64, typ raft.ProgressType, pr tracker.Progress) {
		if id == n.cfg.ID || typ != raft.ProgressTypePeer {
			return
		}
		c := g.caught[id]
		if c == nil {
			c = new(catchUp)
			g.caught[id] = c
		}
		if !pr.RecentActive && !g.heardSince(id, recent) {
			// Gone (out of the set already): back, it must catch up
			// again before it is in, as after a restart it is behind.
			*c = catchUp{}
			return
		}
		c.observe(now, pr.Match, end, commit)
	})
}
