package cluster

import (
	"fmt"
	"maps"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/store"
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
