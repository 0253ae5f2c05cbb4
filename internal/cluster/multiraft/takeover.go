package multiraft

import (
	"errors"
	"syscall"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A leader whose process died (SIGKILL, a crash, the OOM killer) on a
// machine that still runs leaves its followers waiting out their election
// timers, 1 to 2 s with the default tick, before any of them campaigns:
// raft's only sign of a dead leader is silence. The port of a dead
// process says more, and sooner: a connection to it is refused. When the
// connection to a peer that was up breaks and the next dial is refused
// (peer.run), each group that peer led elects a new leader at once: one
// survivor, its successor, campaigns as a leadership transfer's target
// does (raft's MsgTimeoutNow), which its fellow followers grant though
// they heard from the old leader within the election timeout. One
// campaigns rather than all, or their votes would split and the election
// take an election timeout after all.
//
// Raft's safety does not rest on this: a vote still needs the candidate's
// log to be as complete as the voter's, and an old leader that was alive
// after all steps down at the higher term. A dial is refused only when
// nothing listens on the peer's port, so a live node that merely timed out a
// write (its connection redials at once) or a stopped one (SIGSTOP: the
// kernel still accepts its connections) is left to raft's timers. A
// firewall that rejects (rather than drops) this node's connections to a
// live leader looks the same: the successor then takes the leadership
// over once (a refusal counts only after a connection that was up broke),
// a leader change raft allows at any time.

// refused reports whether a dial failed because nothing listens on the
// peer's port.
func refused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// successor is the replica that campaigns at once for group g when its
// leader dead is gone: the first of g's peers, in the order the group was
// added with (the partition's replicas, preferred first), that is another
// voter. Every survivor computes the same one, and a partition's
// successors spread over the nodes as its preferred replicas do.
func (g *group) successor(dead uint64) uint64 {
	for _, id := range g.peers {
		if id != dead && g.voters[id] {
			return id
		}
	}
	return 0
}

// backupTicks is how many ticks a survivor that is not a dead leader's
// successor gives the successor's election before it campaigns itself
// (with a pre-vote, which disturbs no leader): the successor's vote is
// refused when its log is behind another survivor's (a write the leader
// had sent only to that one), or it may not have seen the port refuse.
const backupTicks = 3

// takeOver starts an election at once in every group this node follows
// peer dead in and is dead's successor of, and has its other survivors
// of dead's groups campaign backupTicks later if they still know no
// leader then (driver goroutine only).
func (n *Node) takeOver(dead uint64) {
	k := 0
	for _, g := range n.groups {
		if g.fetching || !g.voters[dead] {
			continue
		}
		st := g.rn.BasicStatus()
		if st.RaftState != raft.StateFollower || st.Lead != dead {
			continue
		}
		if g.successor(dead) != n.cfg.ID {
			g.orphan, g.orphanTicks = dead, backupTicks
			continue
		}
		m := &pb.Message{Type: pb.MessageType_MsgTimeoutNow.Enum(), From: new(dead), To: new(n.cfg.ID), Term: new(st.GetTerm())}
		if err := g.rn.Step(m); err != nil {
			continue
		}
		n.mark(g)
		k++
	}
	if k > 0 {
		n.cfg.Log.Info("multiraft: a leader's port refuses connections; campaigning at once where this node succeeds it", "leader", dead, "groups", k)
	}
}

// backup counts down a survivor's wait for a dead leader's successor
// (takeOver) on a tick, and campaigns when it ends with no leader known
// but the dead one.
func (g *group) backup() {
	if g.orphanTicks <= 0 {
		return
	}
	if g.orphanTicks--; g.orphanTicks > 0 {
		return
	}
	st := g.rn.BasicStatus()
	if st.RaftState == raft.StateFollower && (st.Lead == raft.None || st.Lead == g.orphan) {
		_ = g.rn.Campaign()
	}
}
