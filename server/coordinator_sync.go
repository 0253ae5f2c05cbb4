package server

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func syncError(code int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = code
	return resp
}

// syncGroup is Kafka's classic SyncGroup: the leader's request carries
// every member's assignment and ends the rebalance; the other members wait
// for it (or get their assignment at once once the group is stable).
func (c *coordinator) syncGroup(ctx context.Context, r *kmsg.SyncGroupRequest) kmsg.Response {
	ch, resp := c.sync(r)
	if resp != nil {
		return resp
	}
	select {
	case resp := <-ch:
		return resp
	case <-ctx.Done():
		return syncError(kerr.NotCoordinator.Code)
	}
}

func (c *coordinator) sync(r *kmsg.SyncGroupRequest) (chan *kmsg.SyncGroupResponse, *kmsg.SyncGroupResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if code := c.refusedLocked(r.Group); code != 0 {
		return nil, syncError(code)
	}
	g := c.groups[r.Group]
	if g == nil {
		return nil, syncError(kerr.UnknownMemberID.Code)
	}
	m, code := g.memberAt(r.MemberID, r.InstanceID, r.Generation)
	if m == nil {
		return nil, syncError(code)
	}
	if (r.ProtocolType != nil && *r.ProtocolType != g.protocolType) || (r.Protocol != nil && *r.Protocol != g.protocol) {
		return nil, syncError(kerr.InconsistentGroupProtocol.Code)
	}
	switch g.state {
	case statePreparingRebalance:
		return nil, syncError(kerr.RebalanceInProgress.Code)
	case stateCompletingRebalance:
		if m.sync != nil {
			m.sync <- syncError(kerr.RebalanceInProgress.Code)
		}
		ch := make(chan *kmsg.SyncGroupResponse, 1)
		m.sync = ch
		delete(g.pendingSync, m.id)
		g.heartbeat(m)
		if m.id == g.leader && !g.assigning {
			g.assign(r.GroupAssignment)
		}
		return ch, nil
	case stateStable:
		delete(g.pendingSync, m.id)
		g.heartbeat(m)
		return nil, g.syncResponse(m)
	default:
		return nil, syncError(kerr.UnknownMemberID.Code)
	}
}

// assign stores the leader's assignments (an empty one for a member the
// leader left out, as Kafka does) and writes the generation to the
// offsets topic, outside the coordinator's mutex (queueWrite). Once it
// is durable, the group becomes stable and every member waiting in
// SyncGroup gets its assignment: none is handed out before (Kafka's
// GroupCoordinator does the same in storeGroup's callback). Meanwhile
// the group stays CompletingRebalance, and members that sync wait.
func (g *group) assign(as []kmsg.SyncGroupRequestGroupAssignment) {
	for _, m := range g.members {
		m.assignment = []byte{}
	}
	for _, a := range as {
		if m := g.members[a.MemberID]; m != nil {
			m.assignment = a.MemberAssignment
		}
	}
	g.assigning = true
	gen := g.generation
	g.persist(func(err error) {
		// A member that left, a rejoin, a deletion or the end of this
		// node's coordination moved the group on meanwhile: what was
		// written is a generation nobody is answered with.
		if !g.live() || g.generation != gen || g.state != stateCompletingRebalance {
			return
		}
		g.assigning = false
		if err != nil {
			// As in Kafka: a generation that could not be stored is
			// not handed out; the members learn it from SyncGroup and
			// rejoin.
			g.failSync(kerr.CoordinatorNotAvailable.Code)
			g.prepareRebalance()
			return
		}
		g.state = stateStable
		for _, m := range g.members {
			if m.sync != nil {
				m.sync <- g.syncResponse(m)
				m.sync = nil
			}
		}
	})
}

func (g *group) syncResponse(m *member) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.MemberAssignment = m.assignment
	return resp
}

// heartbeat keeps a member's session alive and tells it, with
// REBALANCE_IN_PROGRESS, when it must rejoin.
func (c *coordinator) heartbeat(r *kmsg.HeartbeatRequest) kmsg.Response {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = c.heartbeatCode(r)
	return resp
}

func (c *coordinator) heartbeatCode(r *kmsg.HeartbeatRequest) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if code := c.refusedLocked(r.Group); code != 0 {
		return code
	}
	g := c.groups[r.Group]
	if g == nil || g.state == stateEmpty {
		return kerr.UnknownMemberID.Code
	}
	m, code := g.memberAt(r.MemberID, r.InstanceID, r.Generation)
	if m == nil {
		return code
	}
	g.heartbeat(m)
	if g.state == statePreparingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// leaveGroup removes members (one before v3, a batch from v3 on, where a
// static member may be named by its instance id alone) and rebalances the
// rest.
func (c *coordinator) leaveGroup(r *kmsg.LeaveGroupRequest) kmsg.Response {
	resp := kmsg.NewPtrLeaveGroupResponse()
	leaving := r.Members
	if r.Version < 3 {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = r.MemberID
		leaving = []kmsg.LeaveGroupRequestMember{lm}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if code := c.refusedLocked(r.Group); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	g := c.groups[r.Group]
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	for _, lm := range leaving {
		out := kmsg.NewLeaveGroupResponseMember()
		out.MemberID, out.InstanceID = lm.MemberID, lm.InstanceID
		out.ErrorCode = g.leave(lm.MemberID, lm.InstanceID)
		resp.Members = append(resp.Members, out)
	}
	g.maybeDrop()
	if r.Version < 3 {
		resp.ErrorCode = resp.Members[0].ErrorCode
		resp.Members = nil
	}
	return resp
}

func (g *group) leave(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		id, ok := g.static[*instanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case memberID != "" && id != memberID:
			return kerr.FencedInstanceID.Code
		}
		memberID = id
	}
	if p, ok := g.pending[memberID]; ok {
		p.t.Stop()
		delete(g.pending, memberID)
		g.tryCompleteJoin()
		return 0
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	g.memberGone(m, kerr.UnknownMemberID.Code)
	return 0
}
