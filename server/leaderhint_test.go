package server

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
)

// TestClusterProduceLeaderHints: a Produce v10+ answered
// NOT_LEADER_OR_FOLLOWER names the leader this node knows and its epoch
// (KIP-951), and the response lists that leader's endpoint once, as
// Metadata advertises it, whichever path gave the error; v9 gets none;
// an unknown leader, or this node itself, waits for a change of leader
// and gives -1/-1 and no broker if none comes; a leader that is not live
// is named without an endpoint.
func TestClusterProduceLeaderHints(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "h", 3)
	c := dialRaw(t, ts.addr)
	b := func() []byte { return makeBatch(t, record.None, -1, 0, 0, 1, "x") }
	// req produces one batch to each of the partitions.
	req := func(version int16, partitions ...int32) *kmsg.ProduceRequest {
		r := produceReq(version, -1, "h", partitions[0], b())
		for _, p := range partitions[1:] {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, b()
			r.Topics[0].Partitions = append(r.Topics[0].Partitions, rp)
		}
		return r
	}
	type hint struct {
		code          int16
		leader, epoch int32
	}
	check := func(what string, resp *kmsg.ProduceResponse, want map[int32]hint, brokers ...kmsg.ProduceResponseBroker) {
		t.Helper()
		for _, rp := range resp.Topics[0].Partitions {
			got := hint{rp.ErrorCode, rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch}
			if got != want[rp.Partition] {
				t.Errorf("%s: partition %d answered %+v, want %+v", what, rp.Partition, got, want[rp.Partition])
			}
		}
		if got, want := endpoints(resp.Brokers), endpoints(brokers); got != want {
			t.Errorf("%s: brokers %s, want %s", what, got, want)
		}
	}
	notLeader := kerr.NotLeaderForPartition.Code
	node2 := kmsg.ProduceResponseBroker{NodeID: 2, Host: "h2", Port: 9002, Rack: kmsg.StringPtr("r2")}

	// Partitions 0 and 1 follow node 2, in epochs 1 and 2; 2 is led here.
	fc.setLeader("h", 0, false)
	fc.setLeader("h", 1, true)
	fc.setLeader("h", 1, false)
	for _, v := range []int16{10, 12} {
		resp := c.do(req(v, 0, 1, 2)).(*kmsg.ProduceResponse)
		check(fmt.Sprintf("v%d to a follower", v), resp,
			map[int32]hint{0: {notLeader, 2, 1}, 1: {notLeader, 2, 2}, 2: {0, -1, -1}}, node2)
	}
	// Before v10 the fields do not exist: nothing is looked up or set
	// (asked of the server itself, since v9's encoding would drop them).
	v9 := ts.srv.produce(req(9, 0))
	check("v9 to a follower", v9, map[int32]hint{0: {notLeader, -1, -1}})

	// The leadership lost during the write: the Cluster's Produce says
	// NOT_LEADER after this node's State said it led, and the leader it
	// knows by then is named. Node 1 has no rack: a null one.
	fc.set(func(fc *fakeCluster) {
		fc.produceErr = fmt.Errorf("fake: lost the leadership: %w", ErrNotLeader)
		fc.leaders[tp{"h", 2}] = 3
	})
	check("leadership lost mid-write", c.do(req(12, 2)).(*kmsg.ProduceResponse),
		map[int32]hint{2: {notLeader, 3, 0}}, kmsg.ProduceResponseBroker{NodeID: 3, Host: "h3", Port: 9003})
	// This node named as leader (a transfer under way), or none known:
	// the answer waits for a change of leader, here none until the
	// request's timeout, and then has no hint and no broker.
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"h", 2}] = 1 })
	quick := func(r *kmsg.ProduceRequest) *kmsg.ProduceRequest { r.TimeoutMillis = 50; return r }
	check("leader this node", c.do(quick(req(12, 2))).(*kmsg.ProduceResponse), map[int32]hint{2: {notLeader, -1, -1}})
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"h", 0}] = -1 })
	check("no leader known", c.do(quick(req(12, 0, 1))).(*kmsg.ProduceResponse),
		map[int32]hint{0: {notLeader, -1, -1}, 1: {notLeader, 2, 2}}, node2)
	// The leader known moves on while the answer waits: it is named.
	r := req(12, 2)
	var looked int
	fc.set(func(fc *fakeCluster) { looked = fc.looked })
	corr := c.send(r)
	awaitLooks(t, fc, "the server to look for partition 2's leader", looked)
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"h", 2}] = 3 })
	fc.wake()
	check("a new leader known while waiting", c.recv(r, corr).(*kmsg.ProduceResponse),
		map[int32]hint{2: {notLeader, 3, 0}}, kmsg.ProduceResponseBroker{NodeID: 3, Host: "h3", Port: 9003})
	fc.set(func(fc *fakeCluster) { fc.produceErr = nil })
	// A leader that is not a live broker is named, its endpoint is not.
	fc.set(func(fc *fakeCluster) { fc.brokers = fc.brokers[:1] })
	check("leader not live", c.do(req(12, 1)).(*kmsg.ProduceResponse), map[int32]hint{1: {notLeader, 2, 2}})
}

// endpoints renders a Produce response's brokers, racks by value.
func endpoints(bs []kmsg.ProduceResponseBroker) string {
	out := "["
	for _, b := range bs {
		rack := "null"
		if b.Rack != nil {
			rack = *b.Rack
		}
		out += fmt.Sprintf(" %d@%s:%d/%s", b.NodeID, b.Host, b.Port, rack)
	}
	return out + " ]"
}

// TestClusterFetchWaitsForLeader: a cluster's Fetch answered
// NOT_LEADER_OR_FOLLOWER for a partition whose leader this node does not
// know (a handover or an election under way) is held until it knows one,
// so the Metadata the client asks for next names it; one whose leader it
// knows elsewhere is answered at once. Fetch up to v12 carries no hint:
// answered before, the client's Metadata said LEADER_NOT_AVAILABLE and
// kgo waited 5 s to ask again.
func TestClusterFetchWaitsForLeader(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "h", 2)
	c := dialRaw(t, ts.addr)
	fc.setLeader("h", 0, false) // node 2 leads it, as this node knows
	fc.setLeader("h", 1, false)
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"h", 1}] = -1 })
	code := func(resp *kmsg.FetchResponse, p int32) int16 {
		for _, rp := range resp.Topics[0].Partitions {
			if rp.Partition == p {
				return rp.ErrorCode
			}
		}
		t.Fatalf("partition %d not answered", p)
		return 0
	}
	notLeader := kerr.NotLeaderForPartition.Code
	if got := code(c.do(fetchReq(12, 0, "h", map[int32]int64{0: 0})).(*kmsg.FetchResponse), 0); got != notLeader {
		t.Fatalf("a follower whose leader is known: %d, want NOT_LEADER_OR_FOLLOWER", got)
	}
	var looked int
	fc.set(func(fc *fakeCluster) { looked = fc.looked })
	r := fetchReq(12, 0, "h", map[int32]int64{0: 0, 1: 0})
	corr := c.send(r)
	awaitLooks(t, fc, "the server to look for partition 1's leader while it holds the answer", looked+1) // one look before the wait, one at least while it waits
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"h", 1}] = 3 })
	fc.wake()
	resp := c.recv(r, corr).(*kmsg.FetchResponse)
	if code(resp, 0) != notLeader || code(resp, 1) != notLeader {
		t.Errorf("after the leader became known: codes %d and %d, want NOT_LEADER_OR_FOLLOWER", code(resp, 0), code(resp, 1))
	}
}

// awaitLooks waits until the fake Cluster has been asked for partitions
// more than n times in all.
func awaitLooks(t *testing.T, fc *fakeCluster, what string, n int) {
	t.Helper()
	testutil.WaitFor(t, what, func() bool {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		return fc.looked > n
	})
}

// metadataFor is a Metadata v12 request naming topic.
func metadataFor(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestClusterMetadataWaitsForElection: a cluster's Metadata naming a
// partition with no leader, or a leader that is not live, while most of
// its replicas are live (an election under way) waits until this node
// knows a live leader, and names it; without a live majority it answers
// at once, LEADER_NOT_AVAILABLE. Answered during the election, kgo with
// its default MetadataMinAge asked again only 5 s later.
func TestClusterMetadataWaitsForElection(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "m", 2)
	c := dialRaw(t, ts.addr)
	req := metadataFor("m")
	leaders := func(resp *kmsg.MetadataResponse) map[int32]string {
		out := map[int32]string{}
		for _, p := range resp.Topics[0].Partitions {
			out[p.Partition] = fmt.Sprintf("%d/%d", p.Leader, p.ErrorCode)
		}
		return out
	}
	lna := fmt.Sprintf("-1/%d", kerr.LeaderNotAvailable.Code)
	for _, tc := range []struct {
		name string
		lead int32 // partition 1's leader while the answer waits, then 2
	}{{"no leader", -1}, {"leader not live", 3}} {
		var looked int
		fc.set(func(fc *fakeCluster) { fc.leaders[tp{"m", 1}] = tc.lead; looked = fc.looked })
		corr := c.send(req)
		awaitLooks(t, fc, "the server to look at the partitions", looked)
		fc.set(func(fc *fakeCluster) { fc.leaders[tp{"m", 1}] = 2 })
		fc.wake()
		got := leaders(c.recv(req, corr).(*kmsg.MetadataResponse))
		if want := map[int32]string{0: "1/0", 1: "2/0"}; !maps.Equal(got, want) {
			t.Errorf("%s: leaders %v, want %v", tc.name, got, want)
		}
	}
	// A listing of every topic does not wait.
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"m", 1}] = -1 })
	all := kmsg.NewPtrMetadataRequest()
	all.Version = 12
	var was, is int
	fc.set(func(fc *fakeCluster) { was = fc.looked })
	listed := c.do(all).(*kmsg.MetadataResponse)
	fc.set(func(fc *fakeCluster) { is = fc.looked })
	if k := slices.IndexFunc(listed.Topics, func(t kmsg.MetadataResponseTopic) bool { return t.Topic != nil && *t.Topic == "m" }); k < 0 {
		t.Errorf("listing of every topic: no topic m in %v", listed.Topics)
	} else if got := leaders(&kmsg.MetadataResponse{Topics: listed.Topics[k : k+1]}); got[1] != lna {
		t.Errorf("listing of every topic: partition 1 %s, want %s", got[1], lna)
	}
	if is-was != len(listed.Topics) {
		t.Errorf("listing of every topic: %d topics' partitions looked at %d times, want once each (no wait)", len(listed.Topics), is-was)
	}
	// Two of three replicas not live: no election can end.
	fc.set(func(fc *fakeCluster) {
		fc.leaders[tp{"m", 1}] = -1
		fc.brokers = fc.brokers[:1]
		fc.offline = []int32{2, 3}
	})
	var before, after int
	fc.set(func(fc *fakeCluster) { before = fc.looked })
	got := leaders(c.do(req).(*kmsg.MetadataResponse))
	fc.set(func(fc *fakeCluster) { after = fc.looked })
	if want := map[int32]string{0: "1/0", 1: lna}; !maps.Equal(got, want) {
		t.Errorf("no live majority: leaders %v, want %v", got, want)
	}
	if after-before != 1 {
		t.Errorf("no live majority: the partitions were looked at %d times, want once (no wait)", after-before)
	}
}

// TestClusterMetadataStuckElection: a partition whose replicas are live
// but whose election outlasts a Metadata's wait (two of three stopped by
// full disks) costs one wait; the next Metadata naming its topic answers
// at once, LEADER_NOT_AVAILABLE. Once seen with a leader it is forgotten:
// its next election is waited for again.
func TestClusterMetadataStuckElection(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "s", 2)
	c := dialRaw(t, ts.addr)
	req := metadataFor("s")
	// ask answers req and says partition 1's leader and error, and how
	// many times the partitions were looked at.
	ask := func() (string, int) {
		var before, after int
		fc.set(func(fc *fakeCluster) { before = fc.looked })
		resp := c.do(req).(*kmsg.MetadataResponse)
		fc.set(func(fc *fakeCluster) { after = fc.looked })
		p := resp.Topics[0].Partitions[1]
		return fmt.Sprintf("%d/%d", p.Leader, p.ErrorCode), after - before
	}
	lna := fmt.Sprintf("-1/%d", kerr.LeaderNotAvailable.Code)

	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"s", 1}] = -1 })
	if got, looks := ask(); got != lna || looks < 2 {
		t.Fatalf("an election under way: %s after %d looks, want %s after a wait", got, looks, lna)
	}
	if got, looks := ask(); got != lna || looks != 1 {
		t.Fatalf("after a wait in vain: %s after %d looks, want %s at once", got, looks, lna)
	}
	// Beside a partition electing, the stuck one is not waited for: the
	// answer comes at the other's election.
	var looked0 int
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"s", 0}] = -1; looked0 = fc.looked })
	corr0 := c.send(req)
	awaitLooks(t, fc, "the server to wait for partition 0's election", looked0+1)
	var atWake, atAnswer int
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"s", 0}] = 1; atWake = fc.looked })
	fc.wake()
	resp0 := c.recv(req, corr0).(*kmsg.MetadataResponse)
	fc.set(func(fc *fakeCluster) { atAnswer = fc.looked })
	if p := resp0.Topics[0].Partitions; p[0].Leader != 1 || p[1].Leader != -1 || atAnswer-atWake > 3 {
		t.Fatalf("partition 0 elected beside a stuck partition 1: leaders %d and %d after %d more looks, want 1 and -1 at the election", p[0].Leader, p[1].Leader, atAnswer-atWake)
	}
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"s", 1}] = 2 })
	if got, looks := ask(); got != "2/0" || looks != 1 {
		t.Fatalf("once elected: %s after %d looks, want 2/0 at once", got, looks)
	}
	// Forgotten: the next election is waited for, and its leader named.
	var looked int
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"s", 1}] = -1; looked = fc.looked })
	corr := c.send(req)
	awaitLooks(t, fc, "the server to look at the partitions again", looked+1)
	fc.set(func(fc *fakeCluster) { fc.leaders[tp{"s", 1}] = 1 })
	fc.wake()
	if p := c.recv(req, corr).(*kmsg.MetadataResponse).Topics[0].Partitions[1]; p.Leader != 1 || p.ErrorCode != 0 {
		t.Fatalf("the next election: leader %d error %d, want 1 and none", p.Leader, p.ErrorCode)
	}
}
