package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCoordinatorAPIKeys(t *testing.T) {
	h := newHarness(t)
	want := map[int16]int16{8: 9, 9: 9, 10: 4, 11: 9, 12: 4, 13: 5, 14: 5, 15: 5, 16: 5, 42: 2, 47: 0}
	keys := h.c.apiKeys()
	if len(keys) != len(want) {
		t.Fatalf("%d keys, want %d", len(keys), len(want))
	}
	for _, k := range keys {
		if max, ok := want[k.ApiKey]; !ok || k.MinVersion != 0 || k.MaxVersion != max {
			t.Errorf("key %d: %d-%d", k.ApiKey, k.MinVersion, k.MaxVersion)
		}
	}
	if _, ok := h.c.handle(context.Background(), kmsg.NewPtrProduceRequest()); ok {
		t.Error("handle answered Produce")
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version = 10 // topic ids, not spoken
	if _, ok := h.c.handle(context.Background(), oc); ok {
		t.Error("handle answered OffsetCommit v10")
	}
}

func TestCoordinatorFindCoordinator(t *testing.T) {
	h := newHarness(t)
	for v := int16(0); v <= 3; v++ {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version, r.CoordinatorKey = v, "g"
		resp := h.do(r).(*kmsg.FindCoordinatorResponse)
		if resp.ErrorCode != 0 || resp.NodeID != 7 || resp.Host != "h" || resp.Port != 9 {
			t.Errorf("v%d: %+v", v, resp)
		}
	}
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.Version, r.CoordinatorKeys = 4, []string{"a", "b"}
	resp := h.do(r).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 2 || resp.Coordinators[1].Key != "b" || resp.Coordinators[1].NodeID != 7 || resp.Coordinators[1].Port != 9 {
		t.Errorf("v4: %+v", resp.Coordinators)
	}
	r.CoordinatorType = 1 // a transactional id
	resp = h.do(r).(*kmsg.FindCoordinatorResponse)
	if resp.Coordinators[0].ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("transaction coordinator: %+v", resp.Coordinators[0])
	}
}

// Two members: the KIP-394 dance, one generation after the initial delay,
// the leader alone gets the member list, and SyncGroup hands each member
// what the leader assigned.
func TestCoordinatorTwoMembers(t *testing.T) {
	h := newHarness(t)
	a := h.memberID("g")
	joinA := h.joinAsync(joinReq("g", a))
	h.waitJoining("g", 1)
	h.clock.Advance(testDelay - time.Millisecond)
	b := h.memberID("g")
	joinB := h.joinAsync(joinReq("g", b))
	h.waitJoining("g", 2)
	// B arrived during the delay, so the delay is extended once.
	h.clock.Advance(testDelay)
	select {
	case <-joinA:
		t.Fatal("join phase ended before the extended initial delay")
	default:
	}
	h.clock.Advance(time.Millisecond)
	ra, rb := recv(t, joinA), recv(t, joinB)
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || ra.Generation != 1 || rb.Generation != 1 {
		t.Fatalf("joins: %+v %+v", ra, rb)
	}
	if ra.LeaderID != a || rb.LeaderID != a || *ra.Protocol != "range" || len(ra.Members) != 2 || len(rb.Members) != 0 {
		t.Fatalf("leader %q/%q protocol %q members %d/%d", ra.LeaderID, rb.LeaderID, *ra.Protocol, len(ra.Members), len(rb.Members))
	}
	if ra.Members[1].MemberID != b || string(ra.Members[1].ProtocolMetadata) != "meta-"+b {
		t.Errorf("leader's member list: %+v", ra.Members)
	}
	if h.heartbeat("g", b, 1) != 0 {
		t.Error("heartbeat while completing the rebalance refused")
	}
	syncB := h.syncAsync(syncReq("g", b, 1, nil))
	h.waitSyncing("g", b)
	sa := h.do(syncReq("g", a, 1, map[string]string{a: "A", b: "B"})).(*kmsg.SyncGroupResponse)
	sb := recv(t, syncB)
	if sa.ErrorCode != 0 || string(sa.MemberAssignment) != "A" || sb.ErrorCode != 0 || string(sb.MemberAssignment) != "B" {
		t.Fatalf("syncs: %+v %+v", sa, sb)
	}
	if h.heartbeat("g", a, 1) != 0 || h.heartbeat("g", b, 1) != 0 {
		t.Error("heartbeats of a stable group refused")
	}
	if code := h.heartbeat("g", b, 0); code != kerr.IllegalGeneration.Code {
		t.Errorf("heartbeat with an old generation: %d", code)
	}
	if code := h.heartbeat("g", "nobody", 1); code != kerr.UnknownMemberID.Code {
		t.Errorf("heartbeat of an unknown member: %d", code)
	}
	// A follower's sync after the group is stable gets its assignment.
	again := h.do(syncReq("g", b, 1, nil)).(*kmsg.SyncGroupResponse)
	if string(again.MemberAssignment) != "B" {
		t.Errorf("late sync: %+v", again)
	}
	d := h.describe("g")
	if d.State != "Stable" || d.Protocol != "range" || len(d.Members) != 2 || string(d.Members[1].MemberAssignment) != "B" ||
		d.Members[0].ClientID != "cl" || d.Members[0].ClientHost != "10.0.0.1" {
		t.Errorf("describe: %+v", d)
	}
}

// A third member joining makes the others rejoin (their heartbeats say
// REBALANCE_IN_PROGRESS); the old generation's commits are refused.
func TestCoordinatorRebalanceOnJoin(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	c := h.memberID("g")
	if code := h.heartbeat("g", ids[0], gen); code != 0 {
		t.Fatalf("a handed-out member id alone rebalanced: heartbeat %d", code)
	}
	joinC := h.joinAsync(joinReq("g", c))
	h.waitJoining("g", 1)
	for _, id := range ids {
		if code := h.heartbeat("g", id, gen); code != kerr.RebalanceInProgress.Code {
			t.Fatalf("heartbeat during the rebalance: %d", code)
		}
	}
	if errs := h.commit("g", ids[0], gen, map[int32]int64{0: 3}); errs[0] != 0 {
		t.Fatalf("commit of the current generation during the join phase: %d", errs[0])
	}
	joinA := h.joinAsync(joinReq("g", ids[0]))
	joinB := h.joinAsync(joinReq("g", ids[1]))
	// No initial delay for a group that had members: the phase ends as
	// soon as everybody is in.
	ra, rb, rc := recv(t, joinA), recv(t, joinB), recv(t, joinC)
	if ra.Generation != gen+1 || rb.Generation != gen+1 || rc.Generation != gen+1 || len(ra.Members) != 3 || ra.LeaderID != ids[0] {
		t.Fatalf("rejoin: gen %d/%d/%d, leader %q, %d members", ra.Generation, rb.Generation, rc.Generation, ra.LeaderID, len(ra.Members))
	}
	if errs := h.commit("g", ids[1], gen+1, map[int32]int64{0: 4}); errs[0] != kerr.RebalanceInProgress.Code {
		t.Errorf("commit while awaiting the leader's sync: %d", errs[0])
	}
	if code := h.do(syncReq("g", ids[1], gen, nil)).(*kmsg.SyncGroupResponse).ErrorCode; code != kerr.IllegalGeneration.Code {
		t.Errorf("sync of the old generation: %d", code)
	}
	sync := h.syncAsync(syncReq("g", c, gen+1, nil))
	h.waitSyncing("g", c)
	h.do(syncReq("g", ids[0], gen+1, map[string]string{c: "C"}))
	if s := recv(t, sync); string(s.MemberAssignment) != "C" {
		t.Fatalf("new member's assignment %q", s.MemberAssignment)
	}
	if s := h.do(syncReq("g", ids[1], gen+1, nil)).(*kmsg.SyncGroupResponse); s.ErrorCode != 0 || len(s.MemberAssignment) != 0 {
		t.Errorf("a member the leader left out: %+v", s)
	}
	if errs := h.commit("g", ids[1], gen, map[int32]int64{0: 5}); errs[0] != kerr.IllegalGeneration.Code {
		t.Errorf("commit of the old generation: %d", errs[0])
	}
	if errs := h.commit("g", c, gen+1, map[int32]int64{0: 6}); errs[0] != 0 {
		t.Errorf("commit of the new generation: %d", errs[0])
	}
	if got := h.fetch("g"); got[0] != 6 {
		t.Errorf("committed %d", got[0])
	}
}

// A member that leaves, and one whose session expires, make the rest
// rebalance without it.
func TestCoordinatorRebalanceOnLeaveAndExpiry(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 3)
	if r := h.leave("g", ids[0], "nobody"); r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 || r.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", r)
	}
	if code := h.heartbeat("g", ids[1], gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat after a leave: %d", code)
	}
	j1, j2 := h.joinAsync(joinReq("g", ids[1])), h.joinAsync(joinReq("g", ids[2]))
	r1, r2 := recv(t, j1), recv(t, j2)
	if r1.Generation != gen+1 || len(r1.Members)+len(r2.Members) != 2 || r1.LeaderID != ids[1] {
		t.Fatalf("after the leave: gen %d leader %q members %d+%d", r1.Generation, r1.LeaderID, len(r1.Members), len(r2.Members))
	}
	gen++
	h.do(syncReq("g", ids[1], gen, map[string]string{ids[1]: "x", ids[2]: "y"}))
	h.do(syncReq("g", ids[2], gen, nil))
	// ids[1] heartbeats every 4 s; ids[2] never does again.
	for i := 0; i < 2; i++ {
		h.clock.Advance(4 * time.Second)
		if code := h.heartbeat("g", ids[1], gen); code != 0 {
			t.Fatalf("heartbeat %d: %d", i, code)
		}
	}
	h.clock.Advance(testSession - 8*time.Second + time.Millisecond)
	if code := h.heartbeat("g", ids[2], gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member's heartbeat: %d", code)
	}
	if code := h.heartbeat("g", ids[1], gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("survivor's heartbeat after the expiry: %d", code)
	}
	r := recv(t, h.joinAsync(joinReq("g", ids[1])))
	if r.Generation != gen+1 || len(r.Members) != 1 {
		t.Fatalf("alone: %+v", r)
	}
}

// A member that does not rejoin within the rebalance timeout is dropped
// and the others go on; one that joins but never syncs is dropped after
// another rebalance timeout.
func TestCoordinatorRebalanceTimeout(t *testing.T) {
	h := newHarness(t)
	ids, gen := h.stableGroup("g", 2)
	if r := h.leave("g", "nobody"); r.Members[0].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatal(r)
	}
	c := h.memberID("g")
	joinC := h.joinAsync(joinReq("g", c))
	h.waitJoining("g", 1)
	joinA := h.joinAsync(joinReq("g", ids[0]))
	h.waitJoining("g", 2)
	// ids[1] keeps heartbeating but never rejoins.
	for i := 0; i < 4; i++ {
		h.clock.Advance(testRebalance / 5)
		h.heartbeat("g", ids[1], gen)
	}
	select {
	case <-joinA:
		t.Fatal("join phase ended before the rebalance timeout")
	default:
	}
	h.clock.Advance(testRebalance / 5)
	ra, rc := recv(t, joinA), recv(t, joinC)
	if ra.Generation != gen+1 || len(ra.Members) != 2 || rc.ErrorCode != 0 {
		t.Fatalf("after the timeout: %+v", ra)
	}
	if code := h.heartbeat("g", ids[1], gen); code != kerr.UnknownMemberID.Code {
		t.Fatalf("member that never rejoined: %d", code)
	}
	gen++
	h.do(syncReq("g", ids[0], gen, map[string]string{ids[0]: "a", c: "c"}))
	// Both keep their sessions alive; c just never syncs.
	for i := 0; i < 5; i++ {
		if h.heartbeat("g", ids[0], gen) != 0 || h.heartbeat("g", c, gen) != 0 {
			t.Fatal("heartbeat refused before the sync timeout")
		}
		h.clock.Advance(testRebalance / 5)
	}
	// c never sent SyncGroup; it is gone and ids[0] must rejoin.
	if code := h.heartbeat("g", ids[0], gen); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("after the sync timeout: %d", code)
	}
	if d := h.describe("g"); len(d.Members) != 1 {
		t.Fatalf("members after the sync timeout: %d", len(d.Members))
	}
}

func TestCoordinatorJoinErrors(t *testing.T) {
	h := newHarness(t)
	r := joinReq("g", "")
	r.SessionTimeoutMillis = 1000
	if code := h.do(r).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InvalidSessionTimeout.Code {
		t.Errorf("short session: %d", code)
	}
	r = joinReq("", "")
	if code := h.do(r).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InvalidGroupID.Code {
		t.Errorf("empty group id: %d", code)
	}
	r = joinReq("g", "")
	r.Protocols = nil
	if code := h.do(r).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("no protocols: %d", code)
	}
	if code := h.do(joinReq("g", "made-up")).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.UnknownMemberID.Code {
		t.Errorf("made-up member id: %d", code)
	}
	h.stableGroup("g", 1)
	r = joinReq("g", "", "roundrobin")
	r.Version = 3 // before KIP-394: no MEMBER_ID_REQUIRED
	if code := h.do(r).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("a protocol no member speaks: %d", code)
	}
	r = joinReq("g", "")
	r.ProtocolType = "connect"
	if code := h.do(r).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("another protocol type: %d", code)
	}
}

// Before v4 a join without a member id enters the group at once; the most
// voted protocol that every member speaks wins.
func TestCoordinatorJoinV3ChoosesProtocol(t *testing.T) {
	h := newHarness(t)
	r1 := joinReq("g", "", "roundrobin", "range")
	r1.Version = 3
	r2 := joinReq("g", "", "range", "roundrobin")
	r2.Version = 3
	r3 := joinReq("g", "", "sticky", "range", "roundrobin")
	r3.Version = 3
	j1 := h.joinAsync(r1)
	h.waitJoining("g", 1)
	j2 := h.joinAsync(r2)
	j3 := h.joinAsync(r3)
	h.waitJoining("g", 3)
	h.clock.Advance(2 * testDelay) // once more for the members that came during the delay
	a, b, c := recv(t, j1), recv(t, j2), recv(t, j3)
	if a.ErrorCode != 0 || a.MemberID == "" || a.MemberID == b.MemberID || b.MemberID == c.MemberID {
		t.Fatalf("v3 joins: %+v %+v", a, b)
	}
	if *a.Protocol != "range" || *c.Protocol != "range" {
		t.Errorf("protocol %q, want range (two votes of three)", *a.Protocol)
	}
}

// close answers a JoinGroup still waiting, and a waiting JoinGroup whose
// connection ends returns.
func TestCoordinatorCloseAndCancel(t *testing.T) {
	h := newHarness(t)
	id := h.memberID("g")
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan kmsg.Response, 1)
	go func() {
		resp, _ := h.c.handle(ctx, joinReq("g", id))
		ch <- resp
	}()
	h.waitJoining("g", 1)
	cancel()
	if code := recv(t, ch).(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("cancelled join: %d", code)
	}
	b := h.memberID("g")
	join := h.joinAsync(joinReq("g", b))
	h.waitJoining("g", 2)
	h.c.close()
	if code := recv(t, join).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Errorf("join at close: %d", code)
	}
	if code := h.heartbeat("g", b, 0); code != kerr.NotCoordinator.Code {
		t.Errorf("heartbeat after close: %d", code)
	}
}

func (h *harness) describe(group string) kmsg.DescribeGroupsResponseGroup {
	h.t.Helper()
	r := kmsg.NewPtrDescribeGroupsRequest()
	r.Version = 5
	r.Groups = []string{group}
	return h.do(r).(*kmsg.DescribeGroupsResponse).Groups[0]
}
