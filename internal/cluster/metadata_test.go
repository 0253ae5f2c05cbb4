package cluster

import (
	"fmt"
	"maps"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataAllListsOffsetsTopic: Metadata for all topics, asked of
// each node, lists __consumer_offsets marked internal once the cluster
// has it, beside the other topics, which are not; before the first
// FindCoordinator creates it, there is none to list, as in Kafka. (A
// user comparing with a single node, whose store has it from the start,
// took its absence from a fresh cluster's list for a bug.)
func TestMetadataAllListsOffsetsTopic(t *testing.T) {
	s := newServedCluster(t, 3)
	ctx := ctxTimeout(t)
	cl := s.client(t)
	if err := s.controller().node.CreateTopic(ctx, "orders", 2, 3, nil); err != nil {
		t.Fatal(err)
	}
	// listed asks node id for all topics: each listed topic's internal
	// mark and partition count.
	type listed struct {
		internal bool
		parts    int
	}
	all := func(id int32) map[string]listed {
		t.Helper()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.Broker(int(id)))
		if err != nil {
			t.Fatalf("Metadata from node %d: %v", id, err)
		}
		out := map[string]listed{}
		for _, tp := range resp.Topics {
			if tp.Topic == nil || tp.ErrorCode != 0 {
				t.Fatalf("Metadata from node %d: topic %v, error %d", id, tp.Topic, tp.ErrorCode)
			}
			out[*tp.Topic] = listed{tp.IsInternal, len(tp.Partitions)}
		}
		return out
	}
	for _, tn := range s.running() {
		// CreateTopic returned once the controller's store held orders;
		// the others apply it a moment later.
		testutil.WaitFor(t, fmt.Sprintf("node %d to list orders", tn.id), func() bool {
			_, ok := all(tn.id)["orders"]
			return ok
		})
		if got, want := all(tn.id), map[string]listed{"orders": {false, 2}}; !maps.Equal(got, want) {
			t.Fatalf("node %d before any group: %v, want %v (no offsets topic yet)", tn.id, got, want)
		}
	}

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	testutil.WaitFor(t, "FindCoordinator to create the offsets topic and name a coordinator", func() bool {
		r, err := fc.RequestWith(ctx, cl)
		return err == nil && r.ErrorCode == 0
	})
	want := map[string]listed{"orders": {false, 2}, store.OffsetsTopic: {true, 3}}
	for _, tn := range s.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d to apply the offsets topic", tn.id), func() bool {
			_, ok := tn.node.meta.State().Topic(store.OffsetsTopic)
			return ok
		})
		if got := all(tn.id); !maps.Equal(got, want) {
			t.Errorf("node %d: %v, want %v", tn.id, got, want)
		}
	}
}

// TestMetadataWaitsForElection: once a partition's leader has stopped, a
// survivor's Metadata never answers LEADER_NOT_AVAILABLE while the two
// survivors, a majority, elect a new leader: the answer waits for the
// election, and the first one that stops naming the old leader names the
// new one. Answered at once, a kgo client with its default
// MetadataMinAge would ask again only 5 s later.
func TestMetadataWaitsForElection(t *testing.T) {
	s := newServedCluster(t, 3)
	ctx := ctxTimeout(t)
	const topic = "orders"
	if err := s.controller().node.CreateTopic(ctx, topic, 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	old := s.leaderOf(topic, 0)
	var ask *tnode
	for _, tn := range s.running() {
		if tn != old {
			ask = tn
			break
		}
	}
	cl := s.client(t, kgo.SeedBrokers(ask.kafka))
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	leaderOn := func() int32 {
		t.Helper()
		resp, err := req.RequestWith(ctx, cl.Broker(int(ask.id)))
		if err != nil {
			t.Fatalf("Metadata from node %d: %v", ask.id, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("Metadata from node %d: %+v", ask.id, resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("Metadata from node %d during the election: %v (leader %d)", ask.id, kerr.ErrorForCode(p.ErrorCode), p.Leader)
		}
		return p.Leader
	}
	if got := leaderOn(); got != old.id {
		t.Fatalf("node %d names leader %d before the stop, want %d", ask.id, got, old.id)
	}
	s.stopNode(old.id)
	var now int32
	testutil.WaitFor(t, "the survivor to stop naming the stopped leader", func() bool {
		now = leaderOn()
		return now != old.id
	})
	if tn := s.nodes[now]; tn == nil || tn.node == nil {
		t.Fatalf("node %d names leader %d after the stop, not a running node", ask.id, now)
	}
}
