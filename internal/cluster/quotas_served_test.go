package cluster

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
)

// TestClientQuotaThrottlesOnTheLeader: a producer quota altered with
// AlterClientQuotas through one node reaches the partition's leader, a
// different node, whose Produce answer then carries a throttle_time_ms
// for that client id (and none for another). No timing is asserted:
// only that the leader throttles at all.
func TestClientQuotaThrottlesOnTheLeader(t *testing.T) {
	s := newServedCluster(t, 3)
	ctx := ctxTimeout(t)
	const topic = "quoted"
	if err := s.controller().node.CreateTopic(ctx, topic, 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	leader := s.leaderOf(topic, 0)
	via := s.follower(leader)

	alter := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	entry.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: kmsg.StringPtr("slow")}}
	entry.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: server.QuotaProducerByteRate, Value: 1024}}
	alter.Entries = append(alter.Entries, entry)
	admin := s.client(t, kgo.RequestRetries(0))
	resp, err := admin.Broker(int(via.id)).Request(ctx, alter)
	if err != nil {
		t.Fatal(err)
	}
	if r := resp.(*kmsg.AlterClientQuotasResponse); len(r.Entries) != 1 || r.Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas through node %d: %+v", via.id, r)
	}
	testutil.WaitFor(t, "the leader to apply the quota", func() bool {
		for _, q := range leader.node.ClientQuotas() {
			if q.Entity.ClientID == "slow" && q.Values[server.QuotaProducerByteRate] == 1024 {
				return true
			}
		}
		return false
	})

	// One produce of well over a second's quota, straight to the leader.
	produce := func(clientID string) int32 {
		t.Helper()
		cl := s.client(t, kgo.ClientID(clientID), kgo.RequestRetries(0))
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = producerBatch(t, strings.Repeat("x", 64<<10))
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(int(leader.id)).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.ProduceResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("produce as %q to leader %d: %+v", clientID, leader.id, r)
		}
		return r.ThrottleMillis
	}
	if ms := produce("fast"); ms != 0 {
		t.Errorf("a client without a quota was throttled %d ms", ms)
	}
	if ms := produce("slow"); ms <= 0 {
		t.Errorf("the leader, node %d, answered throttle_time_ms %d to a client over the quota altered through node %d", leader.id, ms, via.id)
	}
}
