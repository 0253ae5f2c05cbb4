package server

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Groups on a cluster node, over the fake Cluster: the node's
// coordinator serves the groups of the offsets partitions it leads,
// writes through Produce, and follows the leadership.

func findCoordinator(t *testing.T, c *rawConn, group string) *kmsg.FindCoordinatorResponse {
	t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(3)
	fc.CoordinatorKey = group
	return c.do(fc).(*kmsg.FindCoordinatorResponse)
}

func commitOffset(t *testing.T, c *rawConn, group, topic string, part int32, off int64) int16 {
	t.Helper()
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.SetVersion(8)
	oc.Group, oc.Generation = group, -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: part, Offset: off}}}}
	return c.do(oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// fetchOffset returns the group's error code and committed offset.
func fetchOffset(t *testing.T, c *rawConn, group, topic string, part int32) (int16, int64) {
	t.Helper()
	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(7)
	of.Group = group
	of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{part}}}
	r := c.do(of).(*kmsg.OffsetFetchResponse)
	if r.ErrorCode != 0 {
		return r.ErrorCode, -1
	}
	return 0, r.Topics[0].Partitions[0].Offset
}

// groupLoaded starts a cluster node with topic g of n partitions (and
// topics of others' names, one partition each), commits offset 5 of
// group grp on g-0 once the node has loaded the group's offsets
// partition, and returns the node, its fake Cluster, a connection to it
// and that partition.
func groupLoaded(t *testing.T, n int, others ...string) (*testServer, *fakeCluster, *rawConn, int32) {
	t.Helper()
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "g", n)
	for _, name := range others {
		createTestTopic(t, ts.st, name, 1)
	}
	c := dialRaw(t, ts.addr)
	testutil.WaitFor(t, "the offsets partition is loaded", func() bool { return commitOffset(t, c, "grp", "g", 0, 5) == 0 })
	parts, _ := ts.st.Partitions(store.OffsetsTopic)
	return ts, fc, c, store.OffsetsPartitionFor("grp", parts)
}

// TestClusterGroupsCommitThroughProduce: the coordinator of a group is
// the leader of its offsets partition; a commit is written with Produce
// at acks -1 and read back from the coordinator's table; nothing reaches
// the offsets topic any other way.
func TestClusterGroupsCommitThroughProduce(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "g", 1)
	c := dialRaw(t, ts.addr)
	var r *kmsg.FindCoordinatorResponse
	testutil.WaitFor(t, "the coordinator is found", func() bool {
		r = findCoordinator(t, c, "grp")
		return r.ErrorCode == 0
	})
	if r.NodeID != 1 || r.Port != fc.brokers[0].Port {
		t.Fatalf("find coordinator: %+v, want node 1", r)
	}
	if fc.creates() != nil {
		t.Fatalf("the offsets topic exists, yet created again: %+v", fc.creates())
	}
	testutil.WaitFor(t, "the offsets partition is loaded", func() bool { return commitOffset(t, c, "grp", "g", 0, 7) == 0 })
	fc.mu.Lock()
	produced, acks := fc.produced, fc.acks
	fc.mu.Unlock()
	if produced != 1 || acks != -1 {
		t.Fatalf("Produce called %d times, last with acks %d; want once with acks -1", produced, acks)
	}
	if code, off := fetchOffset(t, c, "grp", "g", 0); code != 0 || off != 7 {
		t.Fatalf("fetch: code %d offset %d, want 7", code, off)
	}
	if c, ok := ts.st.CommittedOffset("grp", "g", 0); ok {
		t.Fatalf("the store's own table holds the commit (%+v): it is the replication's", c)
	}
	// The commit is in the group's partition, as the store encodes it.
	n, _ := ts.st.Partitions(store.OffsetsTopic)
	l, err := ts.st.Log(store.OffsetsTopic, store.OffsetsPartitionFor("grp", n))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for rec, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		g, topic, p, cm, ok, err := store.DecodeCommit(rec.Key, rec.Value)
		found = found || (err == nil && ok && g == "grp" && topic == "g" && p == 0 && cm != nil && cm.Offset == 7)
	}
	if !found {
		t.Fatal("the commit is not in the group's offsets partition")
	}
}

// TestClusterGroupsLeaderFlip: a node that stops leading the group's
// partition answers NOT_COORDINATOR and points FindCoordinator at the new
// leader; when it leads again, in a new epoch, it answers
// COORDINATOR_LOAD_IN_PROGRESS until the high watermark reaches the log's
// end, then serves what the log holds, the other leader's commits
// included.
func TestClusterGroupsLeaderFlip(t *testing.T) {
	ts, fc, c, p := groupLoaded(t, 1)

	fc.setLeader(store.OffsetsTopic, p, false)
	if code := commitOffset(t, c, "grp", "g", 0, 6); code != kerr.NotCoordinator.Code {
		t.Fatalf("commit on a follower: code %d, want NOT_COORDINATOR", code)
	}
	if code, _ := fetchOffset(t, c, "grp", "g", 0); code != kerr.NotCoordinator.Code {
		t.Fatalf("fetch on a follower: code %d, want NOT_COORDINATOR", code)
	}
	if r := findCoordinator(t, c, "grp"); r.ErrorCode != 0 || r.NodeID != 2 {
		t.Fatalf("find coordinator after the flip: %+v, want node 2", r)
	}

	// The other leader commits 9 (appended as its replication would).
	w, err := ts.st.Writer(store.OffsetsTopic, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(store.EncodeCommit("grp", "g", 0, &store.Committed{Offset: 9, Timestamp: 1})); err != nil {
		t.Fatal(err)
	}
	end := fc.endLocked(store.OffsetsTopic, p)
	fc.holdHW(store.OffsetsTopic, p, end-1)
	fc.setLeader(store.OffsetsTopic, p, true)
	if code, _ := fetchOffset(t, c, "grp", "g", 0); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("fetch before the high watermark reaches the end: code %d, want COORDINATOR_LOAD_IN_PROGRESS", code)
	}
	if code := commitOffset(t, c, "grp", "g", 0, 6); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("commit while loading: code %d, want COORDINATOR_LOAD_IN_PROGRESS", code)
	}
	fc.holdHW(store.OffsetsTopic, p, -1)
	testutil.WaitFor(t, "the partition is loaded again", func() bool {
		code, _ := fetchOffset(t, c, "grp", "g", 0)
		return code == 0
	})
	if _, off := fetchOffset(t, c, "grp", "g", 0); off != 9 {
		t.Fatalf("after the reload the group's offset is %d, want the other leader's 9", off)
	}
}

// TestClusterGroupsMembersDropped: a member waiting in JoinGroup on a
// coordinator that loses the lead is answered NOT_COORDINATOR, and the
// group's last stable generation is reloaded from the log when the lead
// comes back: its member heartbeats on in it.
func TestClusterGroupsMembersDropped(t *testing.T) {
	ts, fc := startCluster(t, Options{GroupInitialRebalanceDelay: -1})
	createTestTopic(t, ts.st, "g", 1)
	c := dialRaw(t, ts.addr)
	n, _ := ts.st.Partitions(store.OffsetsTopic)
	p := store.OffsetsPartitionFor("grp", n)
	join := func() *kmsg.JoinGroupResponse {
		j := kmsg.NewPtrJoinGroupRequest()
		j.SetVersion(3)
		j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = "grp", 30000, 30000, "consumer"
		j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
		return c.do(j).(*kmsg.JoinGroupResponse)
	}
	var jr *kmsg.JoinGroupResponse
	testutil.WaitFor(t, "the join is served", func() bool {
		jr = join()
		return jr.ErrorCode == 0
	})
	s := kmsg.NewPtrSyncGroupRequest()
	s.SetVersion(3)
	s.Group, s.Generation, s.MemberID = "grp", jr.Generation, jr.MemberID
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: []byte{1}}}
	if r := c.do(s).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 {
		t.Fatalf("sync: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	hb := func() int16 {
		h := kmsg.NewPtrHeartbeatRequest()
		h.SetVersion(3)
		h.Group, h.Generation, h.MemberID = "grp", jr.Generation, jr.MemberID
		return c.do(h).(*kmsg.HeartbeatResponse).ErrorCode
	}
	// A second member joins: its JoinGroup waits for the first to
	// rejoin, which it will not do before the lead is lost.
	c2 := dialRaw(t, ts.addr)
	j2 := kmsg.NewPtrJoinGroupRequest()
	j2.SetVersion(3)
	j2.Group, j2.SessionTimeoutMillis, j2.RebalanceTimeoutMillis, j2.ProtocolType = "grp", 30000, 30000, "consumer"
	j2.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	corr := c2.send(j2)
	testutil.WaitFor(t, "the second member's join to start a rebalance", func() bool { return hb() == kerr.RebalanceInProgress.Code })
	fc.setLeader(store.OffsetsTopic, p, false)
	if r := c2.recv(j2, corr).(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("a JoinGroup waiting when the lead is lost: %v, want NOT_COORDINATOR", kerr.ErrorForCode(r.ErrorCode))
	}
	if code := hb(); code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat on a follower: %d, want NOT_COORDINATOR", code)
	}
	fc.setLeader(store.OffsetsTopic, p, true)
	// The stable generation was written at SyncGroup: the member goes
	// on in it with the new coordinator.
	testutil.WaitFor(t, "the member heartbeats in its generation again", func() bool { return hb() == 0 })
}

// TestClusterGroupsCreateOffsetsTopic: a cluster without the offsets
// topic creates it at the first FindCoordinator, through the controller,
// with the store's partition count and offsets config, and answers
// COORDINATOR_NOT_AVAILABLE until it exists.
func TestClusterGroupsCreateOffsetsTopic(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	fc.set(func(fc *fakeCluster) { fc.offsetsMissing = true })
	c := dialRaw(t, ts.addr)
	if r := findCoordinator(t, c, "grp"); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("find coordinator without an offsets topic: %+v", r)
	}
	testutil.WaitFor(t, "the offsets topic is created", func() bool { return len(fc.creates()) > 0 })
	cc := fc.creates()[0]
	n, _ := ts.st.Partitions(store.OffsetsTopic)
	if cc.name != store.OffsetsTopic || cc.partitions != int32(n) || cc.rf != -1 || cc.configs["cleanup.policy"] != "compact" || cc.configs["flush.messages"] != "1" {
		t.Fatalf("created %+v", cc)
	}
	testutil.WaitFor(t, "the coordinator is found", func() bool { return findCoordinator(t, c, "grp").ErrorCode == 0 })
}

// TestClusterGroupsOffsetsTopicWaitsForBrokers: while fewer brokers are
// live than the offsets topic's replication factor, its creation fails
// and every group waits; the log says why, at Warn, once for a burst of
// retries, and the group is served once the brokers are there.
func TestClusterGroupsOffsetsTopicWaitsForBrokers(t *testing.T) {
	var logs testutil.LockedBuffer
	ts, fc := startCluster(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	fc.set(func(fc *fakeCluster) {
		fc.offsetsMissing = true
		fc.createErr = fmt.Errorf("fake: 3 with 2 live brokers: %w", ErrInvalidReplicationFactor)
	})
	c := dialRaw(t, ts.addr)
	testutil.WaitFor(t, "a creation of the offsets topic refused for want of brokers", func() bool {
		if r := findCoordinator(t, c, "grp"); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("find coordinator while the offsets topic cannot be made: %+v", r)
		}
		return len(fc.creates()) >= 2
	})
	got := logs.String()
	if n := strings.Count(got, "the offsets topic waits for enough live brokers"); n != 1 || !strings.Contains(got, "level=WARN") || !strings.Contains(got, "2 live brokers") {
		t.Fatalf("the log after %d refused creations says it %d times: %q", len(fc.creates()), n, got)
	}
	fc.set(func(fc *fakeCluster) { fc.createErr = nil })
	testutil.WaitFor(t, "the coordinator is found", func() bool { return findCoordinator(t, c, "grp").ErrorCode == 0 })
}

// TestClusterGroupsOffsetsTopicReadOnly: clients cannot produce to the
// offsets topic of a cluster node either; its records are the
// coordinator's.
func TestClusterGroupsOffsetsTopicReadOnly(t *testing.T) {
	ts, _ := startCluster(t, Options{})
	c := dialRaw(t, ts.addr)
	b := record.NewBuilder(record.None)
	if err := b.Add(record.Record{Key: []byte("k"), Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	batch, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	pr := kmsg.NewPtrProduceRequest()
	pr.SetVersion(7)
	pr.Acks, pr.TimeoutMillis = -1, 5000
	pr.Topics = []kmsg.ProduceRequestTopic{{Topic: store.OffsetsTopic, Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0, Records: batch}}}}
	r := c.do(pr).(*kmsg.ProduceResponse)
	if code := r.Topics[0].Partitions[0].ErrorCode; code == 0 {
		t.Fatal("a client produced to the offsets topic")
	}
}

// TestClusterGroupsCommitManyPartitions: a commit of several partitions
// is one batch of several records, every one read back.
func TestClusterGroupsCommitManyPartitions(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "g", 3)
	c := dialRaw(t, ts.addr)
	testutil.WaitFor(t, "the offsets partition is loaded", func() bool {
		code, _ := fetchOffset(t, c, "grp", "g", 0)
		return code == 0
	})
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.SetVersion(8)
	oc.Group, oc.Generation = "grp", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "g", Partitions: []kmsg.OffsetCommitRequestTopicPartition{
		{Partition: 0, Offset: 10}, {Partition: 1, Offset: 11}, {Partition: 2, Offset: 12}}}}
	for _, p := range c.do(oc).(*kmsg.OffsetCommitResponse).Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	fc.mu.Lock()
	produced := fc.produced
	fc.mu.Unlock()
	if produced != 1 {
		t.Fatalf("%d Produce calls, want one batch", produced)
	}
	for p := range int32(3) {
		if code, off := fetchOffset(t, c, "grp", "g", p); code != 0 || off != int64(10+p) {
			t.Fatalf("partition %d: code %d offset %d, want %d", p, code, off, 10+p)
		}
	}
	// Deleting the group writes one batch of three tombstones.
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"grp"}
	if r := c.do(dg).(*kmsg.DeleteGroupsResponse); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete group: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	for p := range int32(3) {
		if code, off := fetchOffset(t, c, "grp", "g", p); code != 0 || off != -1 {
			t.Fatalf("partition %d after the delete: code %d offset %d, want -1", p, code, off)
		}
	}
}

// joinAlone joins a member to group on c, once the group's partition is
// loaded, and returns the answer: with the initial rebalance delay off,
// a lone member's join ends the join phase at once, writing nothing.
func joinAlone(t *testing.T, c *rawConn, group string) *kmsg.JoinGroupResponse {
	t.Helper()
	var jr *kmsg.JoinGroupResponse
	testutil.WaitFor(t, "the join of "+group+" is served", func() bool {
		j := kmsg.NewPtrJoinGroupRequest()
		j.SetVersion(3)
		j.Group, j.SessionTimeoutMillis, j.RebalanceTimeoutMillis, j.ProtocolType = group, 30000, 30000, "consumer"
		j.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
		jr = c.do(j).(*kmsg.JoinGroupResponse)
		return jr.ErrorCode == 0
	})
	return jr
}

// leaderSync is the SyncGroup of a lone member, which leads its group,
// assigning itself assignment.
func leaderSync(group string, jr *kmsg.JoinGroupResponse, assignment []byte) *kmsg.SyncGroupRequest {
	s := kmsg.NewPtrSyncGroupRequest()
	s.SetVersion(3)
	s.Group, s.Generation, s.MemberID = group, jr.Generation, jr.MemberID
	s.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jr.MemberID, MemberAssignment: assignment}}
	return s
}

func describedState(t *testing.T, c *rawConn, group string) string {
	t.Helper()
	d := kmsg.NewPtrDescribeGroupsRequest()
	d.SetVersion(3)
	d.Groups = []string{group}
	return c.do(d).(*kmsg.DescribeGroupsResponse).Groups[0].State
}

// memberships returns the GroupMetadata records of group in its offsets
// partition, in log order, each as its member count (-1 for a
// tombstone).
func memberships(t *testing.T, st *store.Store, group string) []int {
	t.Helper()
	n, _ := st.Partitions(store.OffsetsTopic)
	l, err := st.Log(store.OffsetsTopic, store.OffsetsPartitionFor(group, n))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for r, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		var k kmsg.GroupMetadataKey
		if !isMembership(r.Key) || k.ReadFrom(r.Key) != nil || k.Group != group {
			continue
		}
		if r.Value == nil {
			out = append(out, -1)
			continue
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(r.Value); err != nil {
			t.Fatal(err)
		}
		out = append(out, len(v.Members))
	}
	return out
}

// TestClusterGroupsWriteOutsideLock: while one group's membership waits
// for the replicas, the coordinator answers another group's requests
// (and the waiting group's own that need no write); the waiting leader's
// SyncGroup is answered only once its generation is written, and the
// group is not Stable before.
func TestClusterGroupsWriteOutsideLock(t *testing.T) {
	ts, fc := startCluster(t, Options{GroupInitialRebalanceDelay: -1})
	createTestTopic(t, ts.st, "g", 1)
	c1, c2 := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	ja := joinAlone(t, c1, "a")
	gate := make(chan struct{})
	fc.set(func(fc *fakeCluster) { fc.gate = gate })
	released := false
	defer func() {
		if !released {
			close(gate)
		}
	}()
	sa := leaderSync("a", ja, []byte{7})
	corr := c1.send(sa)
	testutil.WaitBlocked(t, "group a's generation waits for the replicas", "(*fakeCluster).Produce(", 1)

	// Another group joins, and a's member heartbeats, meanwhile.
	if jb := joinAlone(t, c2, "b"); jb.Generation != 1 {
		t.Fatalf("group b joined in generation %d, want 1", jb.Generation)
	}
	h := kmsg.NewPtrHeartbeatRequest()
	h.SetVersion(3)
	h.Group, h.Generation, h.MemberID = "a", ja.Generation, ja.MemberID
	if code := c2.do(h).(*kmsg.HeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("group a's heartbeat while its generation is written: %v", kerr.ErrorForCode(code))
	}
	if got := describedState(t, c2, "a"); got != "CompletingRebalance" {
		t.Fatalf("group a while its generation is written: %s, want CompletingRebalance (no assignment handed out)", got)
	}

	close(gate)
	released = true
	r := c1.recv(sa, corr).(*kmsg.SyncGroupResponse)
	if r.ErrorCode != 0 || string(r.MemberAssignment) != "\x07" {
		t.Fatalf("group a's sync: %v, assignment %x", kerr.ErrorForCode(r.ErrorCode), r.MemberAssignment)
	}
	if got := memberships(t, ts.st, "a"); len(got) != 1 || got[0] != 1 {
		t.Fatalf("group a's membership records: %v, want its generation with one member", got)
	}
	if got := describedState(t, c2, "a"); got != "Stable" {
		t.Fatalf("group a once written: %s, want Stable", got)
	}
}

// TestClusterGroupsWritesInOrder: a group's records reach its partition
// in the order the coordinator made them, though written outside its
// lock: the member that leaves while its generation is being written
// leaves the group Empty after it, not before.
func TestClusterGroupsWritesInOrder(t *testing.T) {
	ts, fc := startCluster(t, Options{GroupInitialRebalanceDelay: -1})
	createTestTopic(t, ts.st, "g", 1)
	c1, c2 := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	ja := joinAlone(t, c1, "a")
	gate := make(chan struct{})
	fc.set(func(fc *fakeCluster) { fc.gate = gate })
	sa := leaderSync("a", ja, []byte{7})
	corr := c1.send(sa)
	testutil.WaitBlocked(t, "group a's generation waits for the replicas", "(*fakeCluster).Produce(", 1)

	l := kmsg.NewPtrLeaveGroupRequest()
	l.SetVersion(3)
	l.Group = "a"
	l.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ja.MemberID}}
	if r := c2.do(l).(*kmsg.LeaveGroupResponse); r.ErrorCode != 0 || r.Members[0].ErrorCode != 0 {
		t.Fatalf("leave while the generation is written: %+v", r)
	}
	// The leader's SyncGroup is answered as its member leaves.
	if r := c1.recv(sa, corr).(*kmsg.SyncGroupResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("the sync of a member that left: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(r.ErrorCode))
	}
	// The Empty record waits for the generation's write, not in Produce.
	testutil.WaitBlocked(t, "the Empty record waits for the write before it", "(*coordinator).queueWrite.func", 2)
	if n := testutil.Blocked("(*fakeCluster).Produce("); n != 1 {
		t.Fatalf("%d writes in Produce, want the generation's alone", n)
	}
	close(gate)
	testutil.WaitFor(t, "both records are written", func() bool { return len(memberships(t, ts.st, "a")) == 2 })
	if got := memberships(t, ts.st, "a"); got[0] != 1 || got[1] != 0 {
		t.Fatalf("group a's membership records: %v, want its generation, then Empty", got)
	}
}

// TestClusterGroupsTombstoneGone: the tombstones for a deleted topic's
// commits delete each commit only as it was when the topic went: a
// commit made since (to a topic created again under the name) stays.
func TestClusterGroupsTombstoneGone(t *testing.T) {
	ts, _ := startCluster(t, Options{})
	createTestTopic(t, ts.st, "g", 1)
	c := dialRaw(t, ts.addr)
	testutil.WaitFor(t, "the offsets partition is loaded", func() bool { return commitOffset(t, c, "grp", "g", 0, 7) == 0 })
	g := ts.srv.clusterGroups.Load()
	note := func() map[string]map[tp]store.Committed {
		g.mu.Lock()
		defer g.mu.Unlock()
		m := map[string]map[tp]store.Committed{"grp": {}}
		for k, v := range g.table("grp").m["grp"] {
			m["grp"][k] = v
		}
		return m
	}
	noted := note() // as topicDeleted notes it, without its kick
	if code := commitOffset(t, c, "grp", "g", 0, 9); code != 0 {
		t.Fatalf("commit: %d", code)
	}
	g.mu.Lock()
	g.gone = noted
	g.mu.Unlock()
	g.tombstoneGone()
	if code, off := fetchOffset(t, c, "grp", "g", 0); code != 0 || off != 9 {
		t.Fatalf("a commit made after the note: code %d offset %d, want 9 kept", code, off)
	}
	noted = note()
	g.mu.Lock()
	g.gone = noted
	g.mu.Unlock()
	g.tombstoneGone()
	if code, off := fetchOffset(t, c, "grp", "g", 0); code != 0 || off != -1 {
		t.Fatalf("the commit noted: code %d offset %d, want -1 (tombstoned)", code, off)
	}
}

// TestClusterGroupsTombstonesAfterTakeover: a node that did not lead a
// group's offsets partition when a topic went reads the topic's commits
// from its own replica, up to where it ended then, and tombstones them
// once it leads the partition (the leader of the time may have died
// before writing them: a walk saw it in 2 of 4 SIGKILLs). A commit
// appended after the deletion (to a topic created again) stays, and so
// does another topic's.
func TestClusterGroupsTombstonesAfterTakeover(t *testing.T) {
	ts, fc, c, p := groupLoaded(t, 2, "h")
	fc.setLeader(store.OffsetsTopic, p, false)
	// The other leader's commits, appended as its replication would.
	w, err := ts.st.Writer(store.OffsetsTopic, p)
	if err != nil {
		t.Fatal(err)
	}
	appendCommit := func(topic string, part int32, off int64) {
		t.Helper()
		if _, err := w.Append(store.EncodeCommit("grp", topic, part, &store.Committed{Offset: off, Timestamp: off})); err != nil {
			t.Fatal(err)
		}
	}
	appendCommit("g", 0, 9)
	appendCommit("g", 1, 4)
	appendCommit("h", 0, 3)
	// The cluster deletes g: the store drops it, the node tells the
	// observer; the leader of the time writes no tombstone.
	if err := ts.st.DeleteTopic("g"); err != nil {
		t.Fatal(err)
	}
	observer{ts.srv}.TopicDeleted("g")
	createTestTopic(t, ts.st, "g", 2) // created again
	appendCommit("g", 1, 12)          // to the new g, after the deletion
	fc.setLeader(store.OffsetsTopic, p, true)
	want := map[tp]int64{{"g", 0}: -1, {"g", 1}: 12, {"h", 0}: 3}
	testutil.WaitFor(t, fmt.Sprintf("the commits %v", want), func() bool {
		for k, off := range want {
			if code, got := fetchOffset(t, c, "grp", k.topic, k.partition); code != 0 || got != off {
				return false
			}
		}
		return true
	})
}

// TestClusterGroupsScanOfLoadedPartition: a deleted topic's commits read
// from a replica that this node has loaded meanwhile (a check under way
// when the topic went loaded it) are tombstoned at once: no later load
// would hand them over.
func TestClusterGroupsScanOfLoadedPartition(t *testing.T) {
	ts, fc, c, p := groupLoaded(t, 1)
	g := ts.srv.clusterGroups.Load()
	g.mu.Lock()
	g.scans = append(g.scans, goneScan{"g", map[int32]int64{p: fc.endLocked(store.OffsetsTopic, p)}})
	g.mu.Unlock()
	// run's check may take the scan first: either writes the tombstone.
	g.scanGone()
	g.tombstoneGone()
	testutil.WaitFor(t, "the commit read by the scan tombstoned", func() bool {
		code, off := fetchOffset(t, c, "grp", "g", 0)
		return code == 0 && off == -1
	})
}
