package server

import (
	"context"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeClock is the shared fake clock, which runs AfterFunc's calls only
// when the test advances it, synchronously and in deadline order, so a
// test states exactly how much time passed; it returns the coordinator's
// timer.
type fakeClock struct{ *testutil.Clock }

func newFakeClock() *fakeClock { return &fakeClock{testutil.NewClock(time.Unix(1_700_000_000, 0))} }

func (c *fakeClock) AfterFunc(d time.Duration, f func()) timer { return c.Clock.AfterFunc(d, f) }

const (
	testSession   = 10 * time.Second
	testRebalance = 20 * time.Second
	testDelay     = 3 * time.Second
)

type harness struct {
	t     *testing.T
	dir   string
	st    *store.Store
	c     *coordinator
	clock *fakeClock
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clock: newFakeClock()}
	h.open()
	if err := h.st.CreateTopic("orders", 4, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		var recs []record.Record
		for i := 0; i < 10; i++ {
			recs = append(recs, record.Record{Value: []byte("v")})
		}
		if _, err := h.st.ProduceTo("orders", p, recs...); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		h.c.close()
		h.st.Close()
	})
	return h
}

func (h *harness) open() {
	h.t.Helper()
	st, err := store.Open(h.dir, store.Options{OffsetsPartitions: 3})
	if err != nil {
		h.t.Fatal(err)
	}
	h.st = st
	h.c = newCoordinator(st, coordinatorConfig{NodeID: 7, Host: "h", Port: 9, InitialRebalanceDelay: testDelay, clock: h.clock})
}

// restart closes the coordinator and the store and opens both again on
// the same directory, as a server restart does.
func (h *harness) restart() {
	h.t.Helper()
	h.c.close()
	if err := h.st.Close(); err != nil {
		h.t.Fatal(err)
	}
	h.open()
}

func (h *harness) do(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	resp, ok := h.c.handle(withClientInfo(context.Background(), "cl", "10.0.0.1"), req)
	if !ok {
		h.t.Fatalf("handle refused key %d v%d", req.Key(), req.GetVersion())
	}
	if resp.GetVersion() != req.GetVersion() {
		h.t.Fatalf("response version %d, request %d", resp.GetVersion(), req.GetVersion())
	}
	return resp
}

func joinReq(group, memberID string, protocols ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group, r.MemberID = group, memberID
	r.SessionTimeoutMillis = int32(testSession / time.Millisecond)
	r.RebalanceTimeoutMillis = int32(testRebalance / time.Millisecond)
	r.ProtocolType = "consumer"
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		jp := kmsg.NewJoinGroupRequestProtocol()
		jp.Name, jp.Metadata = p, []byte("meta-"+memberID)
		r.Protocols = append(r.Protocols, jp)
	}
	return r
}

// joinAsync sends a JoinGroup that may wait for the rebalance, and returns
// where its answer will arrive.
func (h *harness) joinAsync(r *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp, _ := h.c.handle(withClientInfo(context.Background(), "cl", "10.0.0.1"), r)
		ch <- resp.(*kmsg.JoinGroupResponse)
	}()
	return ch
}

// newMemberID runs the KIP-394 dance's first step and returns the id.
func (h *harness) memberID(group string) string {
	h.t.Helper()
	resp := h.do(joinReq(group, "")).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
		h.t.Fatalf("first join: error %d, member %q; want MEMBER_ID_REQUIRED with an id", resp.ErrorCode, resp.MemberID)
	}
	return resp.MemberID
}

// waitJoining blocks until n members of the group wait in JoinGroup, so
// that the test advances the clock only once the joins have arrived.
func (h *harness) waitJoining(group string, n int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		h.c.mu.Lock()
		k := 0
		if g := h.c.groups[group]; g != nil {
			for _, m := range g.members {
				if m.join != nil {
					k++
				}
			}
		}
		h.c.mu.Unlock()
		if k >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	h.t.Fatalf("%d members never waited in JoinGroup of %s", n, group)
}

func (h *harness) waitSyncing(group, member string) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		h.c.mu.Lock()
		ok := false
		if g := h.c.groups[group]; g != nil && g.members[member] != nil {
			ok = g.members[member].sync != nil
		}
		h.c.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
	h.t.Fatalf("member %s never waited in SyncGroup", member)
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
		panic("unreachable")
	}
}

func syncReq(group, member string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.Generation = group, member, gen
	r.ProtocolType, r.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for m, a := range assign {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	return r
}

func (h *harness) syncAsync(r *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() {
		resp, _ := h.c.handle(context.Background(), r)
		ch <- resp.(*kmsg.SyncGroupResponse)
	}()
	return ch
}

func (h *harness) heartbeat(group, member string, gen int32) int16 {
	h.t.Helper()
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation = group, member, gen
	return h.do(r).(*kmsg.HeartbeatResponse).ErrorCode
}

func (h *harness) leave(group string, members ...string) *kmsg.LeaveGroupResponse {
	h.t.Helper()
	r := kmsg.NewPtrLeaveGroupRequest()
	r.Version = 5
	r.Group = group
	for _, m := range members {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = m
		r.Members = append(r.Members, lm)
	}
	return h.do(r).(*kmsg.LeaveGroupResponse)
}

// commit commits offsets to partitions of "orders" and returns each
// partition's error code.
func (h *harness) commit(group, member string, gen int32, offsets map[int32]int64) map[int32]int16 {
	h.t.Helper()
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 9
	r.Group, r.MemberID, r.Generation = group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = "orders"
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		t.Partitions = append(t.Partitions, rp)
	}
	r.Topics = append(r.Topics, t)
	resp := h.do(r).(*kmsg.OffsetCommitResponse)
	out := make(map[int32]int16)
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			out[p.Partition] = p.ErrorCode
		}
	}
	return out
}

// fetch returns the group's committed offsets on partitions 0-3 of
// "orders", through OffsetFetch v9 (the batched form).
func (h *harness) fetch(group string) [4]int64 {
	h.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 9
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{0, 1, 2, 3}}}
	r.Groups = append(r.Groups, rg)
	resp := h.do(r).(*kmsg.OffsetFetchResponse)
	var out [4]int64
	for _, p := range resp.Groups[0].Topics[0].Partitions {
		if p.ErrorCode != 0 {
			h.t.Fatalf("fetch partition %d: error %d", p.Partition, p.ErrorCode)
		}
		out[p.Partition] = p.Offset
	}
	return out
}

// stableGroup brings members into a stable group through the whole
// dance and returns their ids (the first is the leader) and the
// generation.
func (h *harness) stableGroup(group string, n int) ([]string, int32) {
	h.t.Helper()
	var ids []string
	var chs []<-chan *kmsg.JoinGroupResponse
	for i := 0; i < n; i++ {
		id := h.memberID(group)
		ids = append(ids, id)
		chs = append(chs, h.joinAsync(joinReq(group, id)))
		h.waitJoining(group, i+1)
	}
	h.clock.Advance(testDelay)
	if n > 1 {
		h.clock.Advance(testDelay) // the delay is extended for members that came during it
	}
	var gen int32
	for i, ch := range chs {
		resp := recv(h.t, ch)
		if resp.ErrorCode != 0 {
			h.t.Fatalf("join of member %d: error %d", i, resp.ErrorCode)
		}
		gen = resp.Generation
	}
	assign := make(map[string]string)
	for _, id := range ids {
		assign[id] = "assignment-of-" + id
	}
	var syncs []<-chan *kmsg.SyncGroupResponse
	for _, id := range ids[1:] {
		syncs = append(syncs, h.syncAsync(syncReq(group, id, gen, nil)))
		h.waitSyncing(group, id)
	}
	leader := h.do(syncReq(group, ids[0], gen, assign)).(*kmsg.SyncGroupResponse)
	if leader.ErrorCode != 0 || string(leader.MemberAssignment) != assign[ids[0]] {
		h.t.Fatalf("leader's sync: error %d, assignment %q", leader.ErrorCode, leader.MemberAssignment)
	}
	for i, ch := range syncs {
		resp := recv(h.t, ch)
		if resp.ErrorCode != 0 || string(resp.MemberAssignment) != assign[ids[i+1]] {
			h.t.Fatalf("member %d's sync: error %d, assignment %q", i+1, resp.ErrorCode, resp.MemberAssignment)
		}
	}
	return ids, gen
}
