package multiraft

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/tracker"
)

// ErrTooFewLive is WaitReplicated's answer when fewer voters than it waits
// for are live (heard from within the last election timeout): the entry is
// not in enough logs, and waiting longer is waiting for a replica that is
// gone.
var ErrTooFewLive = errors.New("multiraft: too few replicas live")

// liveSince is the oldest time a peer may have last been heard from and
// still count as live: one election timeout ago, the span after which
// CheckQuorum makes a leader that heard from no majority step down.
func (n *Node) liveSince() time.Time {
	return time.Now().Add(-time.Duration(n.cfg.ElectionTick) * n.cfg.Tick)
}

// heardSince reports whether peer id sent g a message at or after t.
func (g *group) heardSince(id uint64, t time.Time) bool {
	h := g.heard[id]
	return h != nil && h.Load() >= t.UnixNano()
}

// live counts g's voters heard from since t, self included (as a
// leader's own replica is always there).
func (g *group) live(self uint64, t time.Time) (live, voters int) {
	ids := *g.voterIDs.Load()
	for _, id := range ids {
		if id == self || g.heardSince(id, t) {
			live++
		}
	}
	return live, len(ids)
}

// Live returns how many of group id's voters this node, as the group's
// leader, counts as live: itself and each voter heard from within the
// last election timeout; and how many voters the group has. live is 0
// when this node does not lead the group. It takes no turn of the
// driver goroutine (the partition manager asks before every acks=all
// write, for Kafka's min.insync.replicas check), so a leadership lost a
// moment ago may still count: the proposal that follows finds out.
func (n *Node) Live(id uint64) (live, voters int, err error) {
	g := n.group(id)
	if g == nil {
		return 0, 0, ErrGroupNotFound
	}
	live, voters = g.live(n.cfg.ID, n.liveSince())
	if g.lead.Load() != n.cfg.ID {
		live = 0
	}
	return live, voters, nil
}

// replWait is one WaitReplicated call: done gets its answer once (it is
// buffered); gone is set when the caller stopped waiting, so the driver
// drops it at the next look.
type replWait struct {
	index uint64
	k     int
	done  chan error
	gone  atomic.Bool
}

// WaitReplicated returns once at least k of group id's voters, this node
// included, hold its log up to index: raft's match index on this node,
// which must lead the group. Raft commits an entry once a majority holds
// it; this is for a caller that promised more (a topic's
// min.insync.replicas above the majority). It fails with a
// *NotLeaderError when this node does not lead the group or stops
// leading it, ErrTooFewLive once fewer than k voters are live (Live),
// ErrGroupRemoved or ErrClosed, or ctx's error.
func (n *Node) WaitReplicated(ctx context.Context, id, index uint64, k int) error {
	w := &replWait{index: index, k: k, done: make(chan error, 1)}
	var err error
	if derr := n.do(ctx, func() {
		g := n.groups[id]
		if g == nil {
			err = ErrGroupNotFound
			return
		}
		if st := g.rn.BasicStatus(); st.RaftState != raft.StateLeader {
			err = &NotLeaderError{Group: id, Leader: st.Lead}
			return
		}
		g.replWaits = append(g.replWaits, w)
		n.checkReplWaits(g)
	}); derr != nil {
		return derr
	}
	if err != nil {
		return err
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		w.gone.Store(true)
		return ctx.Err()
	}
}

// checkReplWaits answers g's WaitReplicated callers whose entry enough
// voters now hold, or fails them when too few voters are live to ever
// hold it; it drops the ones whose callers left. Driver goroutine only:
// after a MsgAppResp (a match index may have moved) and at each tick.
func (n *Node) checkReplWaits(g *group) {
	var match []uint64
	g.rn.WithProgress(func(id uint64, typ raft.ProgressType, pr tracker.Progress) {
		if typ == raft.ProgressTypePeer {
			match = append(match, pr.Match)
		}
	})
	live, _ := g.live(n.cfg.ID, n.liveSince())
	keep := g.replWaits[:0]
	for _, w := range g.replWaits {
		held := 0
		for _, m := range match {
			if m >= w.index {
				held++
			}
		}
		switch {
		case w.gone.Load():
		case held >= w.k:
			w.done <- nil
		case live < w.k:
			w.done <- ErrTooFewLive
		default:
			keep = append(keep, w)
		}
	}
	clear(g.replWaits[len(keep):])
	g.replWaits = keep
}

// endReplWaits fails every WaitReplicated caller of g with err (a lost
// leadership, the group dropped). Driver goroutine only.
func (g *group) endReplWaits(err error) {
	for _, w := range g.replWaits {
		w.done <- err
	}
	g.replWaits = nil
}
