package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A follower rejoining a stable group with nothing changed gets the
// current generation back without a rebalance; the leader rejoining, or a
// follower with new metadata, starts one.
func TestCoordinatorRejoinStable(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	r := recv(t, h.joinAsync(joinReq("g", ids[1])))
	if r.ErrorCode != 0 || r.Generation != gen || len(r.Members) != 0 {
		t.Fatalf("unchanged follower's rejoin: %+v", r)
	}
	if code := h.heartbeat("g", ids[0], gen); code != 0 {
		t.Fatalf("an unchanged rejoin started a rebalance: %d", code)
	}
	changed := joinReq("g", ids[1])
	changed.Protocols[0].Metadata = []byte("new subscription")
	joinB := h.joinAsync(changed)
	h.waitJoining("g", 1)
	if code := h.heartbeat("g", ids[0], gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("changed metadata did not rebalance: %d", code)
	}
	ra := recv(t, h.joinAsync(joinReq("g", ids[0])))
	rb := recv(t, joinB)
	if ra.Generation != gen+1 || rb.Generation != gen+1 || string(ra.Members[1].ProtocolMetadata) != "new subscription" {
		t.Fatalf("after the change: %+v", ra)
	}
	// The leader missed its join answer and asks again while the group
	// waits for its assignment: it gets the same answer.
	again := recv(t, h.joinAsync(joinReq("g", ids[0])))
	if again.Generation != gen+1 || len(again.Members) != 2 {
		t.Fatalf("repeated join while completing: %+v", again)
	}
}

// A member id handed out with MEMBER_ID_REQUIRED holds a rebalance back
// until its session timeout, when it is forgotten.
func TestCoordinatorPendingMemberExpires(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 1)
	pending := h.memberID("g")
	joinA := h.joinAsync(changedJoin("g", ids[0]))
	h.waitJoining("g", 1)
	h.clock.Advance(testSession - 1)
	select {
	case r := <-joinA:
		t.Fatalf("join phase ended with a member id still unused: %+v", r)
	default:
	}
	h.clock.Advance(1)
	if r := recv(t, joinA); r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("after the pending id expired: %+v", r)
	}
	if code := h.do(joinReq("g", pending)).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.UnknownMemberID.Code {
		t.Errorf("join with the expired id: %d", code)
	}
}

func changedJoin(group, member string) *kmsg.JoinGroupRequest {
	r := joinReq(group, member)
	r.Protocols[0].Metadata = []byte("changed")
	return r
}

// Static members (group.instance.id): a new member id for the same
// instance fences the old one; LeaveGroup can name the instance alone.
func TestCoordinatorStaticMembers(t *testing.T) {
	h := newHarness(t)
	static := func(member string) *kmsg.JoinGroupRequest {
		r := joinReq("g", member)
		r.InstanceID = kmsg.StringPtr("pod-1")
		return r
	}
	// A static member gets its id at once, without MEMBER_ID_REQUIRED.
	first := h.joinAsync(static(""))
	h.waitJoining("g", 1)
	h.clock.Advance(testDelay)
	old := recv(t, first)
	if old.ErrorCode != 0 || old.MemberID == "" {
		t.Fatalf("static join: %+v", old)
	}
	h.do(syncReq("g", old.MemberID, old.Generation, nil))
	// The instance restarts and joins without its member id.
	renewed := recv(t, h.joinAsync(static("")))
	if renewed.ErrorCode != 0 || renewed.MemberID == old.MemberID || renewed.Generation != old.Generation+1 {
		t.Fatalf("restarted static member: %+v", renewed)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version = 4
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", old.MemberID, renewed.Generation, kmsg.StringPtr("pod-1")
	if code := h.do(hb).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.FencedInstanceID.Code {
		t.Errorf("old member id of the instance: %d", code)
	}
	if code := h.do(static(old.MemberID)).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.FencedInstanceID.Code {
		t.Errorf("join with the old member id of the instance: %d", code)
	}
	oldSync := syncReq("g", old.MemberID, renewed.Generation, nil)
	oldSync.InstanceID = kmsg.StringPtr("pod-1")
	if code := h.do(oldSync).(*kmsg.SyncGroupResponse).ErrorCode; code != kerr.FencedInstanceID.Code {
		t.Errorf("sync with the old member id of the instance: %d", code)
	}
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 4
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: kmsg.StringPtr("pod-1")}, {InstanceID: kmsg.StringPtr("pod-2")}}
	resp := h.do(lr).(*kmsg.LeaveGroupResponse)
	if resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave by instance id: %+v", resp.Members)
	}
	if d := h.describe("g"); d.State != "Dead" {
		t.Errorf("group after its only member left: %+v", d)
	}
}

// The oldest versions: JoinGroup v0 (no rebalance timeout, no
// MEMBER_ID_REQUIRED), SyncGroup v0, Heartbeat v0, OffsetCommit v2,
// OffsetFetch v0 and LeaveGroup v0 (one member, error at the top).
func TestCoordinatorOldVersions(t *testing.T) {
	h := newHarness(t)
	j := joinReq("g", "")
	j.Version = 0
	ch := h.joinAsync(j)
	h.waitJoining("g", 1)
	h.clock.Advance(testDelay)
	jr := recv(t, ch)
	if jr.ErrorCode != 0 || jr.MemberID == "" || jr.LeaderID != jr.MemberID {
		t.Fatalf("join v0: %+v", jr)
	}
	s := syncReq("g", jr.MemberID, jr.Generation, map[string]string{jr.MemberID: "all"})
	s.Version, s.ProtocolType, s.Protocol = 0, nil, nil
	if sr := h.do(s).(*kmsg.SyncGroupResponse); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "all" {
		t.Fatalf("sync v0: %+v", sr)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", jr.MemberID, jr.Generation
	if code := h.do(hb).(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("heartbeat v0: %d", code)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version = 2
	oc.Group, oc.MemberID, oc.Generation = "g", jr.MemberID, jr.Generation
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 2, Offset: 8}}}}
	if code := h.do(oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("commit v2: %d", code)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{2}}}
	if p := h.do(of).(*kmsg.OffsetFetchResponse).Topics[0].Partitions[0]; p.Offset != 8 {
		t.Fatalf("fetch v0: %+v", p)
	}
	lv := kmsg.NewPtrLeaveGroupRequest()
	lv.Group, lv.MemberID = "g", jr.MemberID
	if r := h.do(lv).(*kmsg.LeaveGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("leave v0: %+v", r)
	}
	if r := h.do(lv).(*kmsg.LeaveGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("second leave v0: %+v", r)
	}
}
