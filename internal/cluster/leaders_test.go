package cluster

import (
	"fmt"
	"slices"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadataNamesLeadersEverywhere: a topic of replication factor 1 on
// three nodes: Metadata from every node, those that do not replicate a
// partition included, names its leader (its one replica) in the same
// epoch, learnt from the liveness heartbeats; and kgo, seeded with any
// one node, produces to every partition.
func TestMetadataNamesLeadersEverywhere(t *testing.T) {
	s := newServedCluster(t, 3)
	ctrl := s.controller()
	ctx := ctxTimeout(t)
	const topic, parts = "solo", 3
	if err := ctrl.node.CreateTopic(ctx, topic, parts, 1, nil); err != nil {
		t.Fatal(err)
	}
	infos, err := ctrl.node.Partitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	replica := map[int32]int32{}
	for _, p := range infos {
		if len(p.Replicas) != 1 {
			t.Fatalf("partition %d has replicas %v, want one", p.Partition, p.Replicas)
		}
		replica[p.Partition] = p.Replicas[0]
	}

	type leader struct{ id, epoch int32 }
	// leaders asks node id's Metadata for the topic's leaders and
	// epochs, by partition.
	leaders := func(cl *kgo.Client, id int32) map[int32]leader {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = []kmsg.MetadataRequestTopic{rt}
		resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
		if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			return nil
		}
		out := map[int32]leader{}
		for _, p := range resp.Topics[0].Partitions {
			out[p.Partition] = leader{p.Leader, p.LeaderEpoch}
		}
		return out
	}
	clients := map[int32]*kgo.Client{}
	for _, tn := range s.running() {
		clients[tn.id] = s.client(t, kgo.SeedBrokers(tn.kafka))
	}
	// Each replica names itself, as its raft group knows it.
	want := map[int32]leader{}
	testutil.WaitFor(t, "the replicas to lead their partitions", func() bool {
		for p, id := range replica {
			l, ok := leaders(clients[id], id)[p]
			if !ok || l.id != id || l.epoch < 1 {
				return false
			}
			want[p] = l
		}
		return true
	})
	for _, tn := range s.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d's Metadata to name every leader", tn.id), func() bool {
			return fmt.Sprint(leaders(clients[tn.id], tn.id)) == fmt.Sprint(want)
		})
		prod := s.client(t, kgo.SeedBrokers(tn.kafka), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for p := range int32(parts) {
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("via %d", tn.id))}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("producing to partition %d seeded with node %d: %v", p, tn.id, err)
			}
		}
	}
}

// TestHandOverLeadership: a node's controlled shutdown (HandOver) leaves
// it leading no partition and not the controller, every partition it led
// led by another replica, while the node still runs: its clients move
// before it stops.
func TestHandOverLeadership(t *testing.T) {
	s := newServedCluster(t, 3)
	ctrl := s.controller()
	ctx := ctxTimeout(t)
	const topic, parts = "handed", 6
	if err := ctrl.node.CreateTopic(ctx, topic, parts, 3, nil); err != nil {
		t.Fatal(err)
	}
	led := func(tn *tnode) []int32 {
		var out []int32
		for p := range int32(parts) {
			if st, err := tn.node.State(topic, p); err == nil && st.Leader {
				out = append(out, p)
			}
		}
		return out
	}
	testutil.WaitFor(t, "every partition led", func() bool {
		n := 0
		for _, tn := range s.running() {
			n += len(led(tn))
		}
		return n == parts
	})
	if err := ctrl.node.HandOver(ctx); err != nil {
		t.Fatal(err)
	}
	if got := led(ctrl); len(got) != 0 {
		t.Fatalf("node %d still leads partitions %v after HandOver", ctrl.id, got)
	}
	if ctrl.node.meta.IsController() {
		t.Fatalf("node %d is still the controller after HandOver", ctrl.id)
	}
	testutil.WaitFor(t, "the other nodes lead every partition", func() bool {
		n := 0
		for _, tn := range s.running() {
			if tn.id != ctrl.id {
				n += len(led(tn))
			}
		}
		return n == parts
	})
}

// TestFollowerNamesLeadersISR: when a replica stops, Metadata from the
// partition's other follower drops it from the ISR as the leader does
// (from the leader's heartbeat report), instead of listing the
// assignment's replicas, the dead one included.
func TestFollowerNamesLeadersISR(t *testing.T) {
	c := newClusterOf(t, 3, true)
	ctrl := c.controller()
	if err := ctrl.node.CreateTopic(ctxTimeout(t), "orders", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	// isrOn is orders-0's leader and ISR as tn's Metadata gives them.
	isrOn := func(tn *tnode) (int32, []int32) {
		infos, err := tn.node.Partitions("orders")
		if err != nil || len(infos) != 1 {
			return -1, nil
		}
		return infos[0].Leader, slices.Sorted(slices.Values(infos[0].ISR))
	}
	var leader int32
	testutil.WaitFor(t, "every node to name one leader with all three replicas in sync", func() bool {
		leader = -1
		for _, tn := range c.running() {
			l, isr := isrOn(tn)
			if l < 0 || (leader >= 0 && l != leader) || !slices.Equal(isr, []int32{1, 2, 3}) {
				return false
			}
			leader = l
		}
		return true
	})
	// The stopped replica is neither the leader nor the controller, so
	// that neither moves; the other follower is the one asked.
	var gone, asked int32 = -1, -1
	for _, tn := range c.running() {
		switch {
		case tn.id == leader:
		case gone < 0 && tn.id != ctrl.id:
			gone = tn.id
		default:
			asked = tn.id
		}
	}
	if gone < 0 || asked < 0 {
		t.Fatalf("leader %d, controller %d: no follower to stop and another to ask", leader, ctrl.id)
	}
	c.stop(gone)
	want := slices.DeleteFunc([]int32{1, 2, 3}, func(id int32) bool { return id == gone })
	testutil.WaitFor(t, fmt.Sprintf("node %d (a follower) to drop stopped node %d from the ISR", asked, gone), func() bool {
		l, isr := isrOn(c.nodes[asked])
		ll, lisr := isrOn(c.nodes[leader])
		return l == leader && ll == leader && slices.Equal(isr, want) && slices.Equal(lisr, want)
	})
}

// TestHandOverAlone: a one-voter cluster has nobody to hand its
// leaderships to, and its controlled shutdown says nothing of it (it
// once logged raft's "cannot find peer" at every stop).
func TestHandOverAlone(t *testing.T) {
	c := newCluster(t, 1)
	tn := c.nodes[1]
	testutil.WaitFor(t, "the only node to be the controller", tn.node.meta.IsController)
	if err := tn.node.HandOver(ctxTimeout(t)); err != nil {
		t.Fatalf("HandOver with no other voter: %v", err)
	}
}

func TestFollowerISRWithoutReport(t *testing.T) {
	live := map[int32]bool{1: true, 2: true}
	if got := followerISR([]int32{3, 1, 2}, 1, live); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("replicas 3,1,2, leader 1, live 1,2: ISR %v", got)
	}
	// Alone (no controller answers: only itself is known live), a
	// follower names itself and the leader it follows.
	if got := followerISR([]int32{1, 2, 3}, 3, map[int32]bool{2: true}); !slices.Equal(got, []int32{2, 3}) {
		t.Errorf("replicas 1,2,3, leader 3, live 2: ISR %v", got)
	}
}
