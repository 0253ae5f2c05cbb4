package cluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
)

func TestPreferredMoves(t *testing.T) {
	live := map[int32]bool{1: true, 2: true, 3: true}
	parts := []placement{
		{topic: "a", partition: 0, replicas: []int32{2, 1, 3}, leader: 1, isr: []int32{1, 2, 3}}, // moves to 2
		{topic: "a", partition: 1, replicas: []int32{1, 2, 3}, leader: 1, isr: []int32{1, 2, 3}}, // on its preferred replica
		{topic: "a", partition: 2, replicas: []int32{3, 1, 2}, leader: 1, isr: []int32{1, 2}},    // 3 not in the ISR
		{topic: "b", partition: 0, replicas: []int32{4, 1, 2}, leader: 1, isr: []int32{1, 2, 4}}, // 4 not live
		{topic: "b", partition: 1, replicas: []int32{3, 2, 1}, leader: 2, isr: []int32{1, 2, 3}}, // led by another node
		{topic: "b", partition: 2, replicas: []int32{3, 2, 1}, leader: -1},                       // no leader known
		{topic: "b", partition: 3, replicas: []int32{3, 2, 1}, leader: 1, isr: []int32{3, 1}},    // moves to 3
	}
	got := preferredMoves(1, parts, live)
	want := []leaderMove{{topic: "a", partition: 0, to: 2}, {topic: "b", partition: 3, to: 3}}
	if !slices.Equal(got, want) {
		t.Fatalf("moves %+v, want %+v", got, want)
	}
}

// preferredOf returns the first replica of each of topic's partitions, as
// tn's metadata assigns them.
func preferredOf(t *testing.T, tn *tnode, topic string) []int32 {
	t.Helper()
	top, ok := tn.node.meta.State().Topic(topic)
	if !ok {
		t.Fatalf("no topic %s", topic)
	}
	var out []int32
	for _, r := range top.Replicas {
		out = append(out, r[0])
	}
	return out
}

// rebalanceCluster starts three real nodes checking every interval
// (negative: never) and creates topic with partitions partitions on all
// three; it returns the cluster, the controller and each partition's
// preferred replica.
func rebalanceCluster(t *testing.T, interval time.Duration, topic string, partitions int32) (*tcluster, *tnode, []int32) {
	t.Helper()
	c := newClusterConfigured(t, 3, true, func(_ *tnode, cfg *Config) {
		cfg.LeaderImbalanceCheckInterval = interval
	})
	ctrl := c.controller()
	if err := ctrl.node.CreateTopic(ctxTimeout(t), topic, partitions, 3, nil); err != nil {
		t.Fatal(err)
	}
	return c, ctrl, preferredOf(t, ctrl, topic)
}

// leadAway moves topic-p's leadership to node to by hand and waits until
// to leads it with node pref, its preferred replica, in its ISR.
func (c *tcluster) leadAway(topic string, p, to, pref int32) {
	c.t.Helper()
	if _, err := c.leaderOf(topic, p).node.parts.TransferLeader(ctxTimeout(c.t), topic, p, to); err != nil {
		c.t.Fatal(err)
	}
	testutil.WaitFor(c.t, fmt.Sprintf("%s-%d led by node %d", topic, p, to), func() bool { return c.leaderOf(topic, p).id == to })
	testutil.WaitFor(c.t, fmt.Sprintf("node %d in %s-%d's ISR", pref, topic, p), func() bool {
		infos, err := c.nodes[to].node.Partitions(topic)
		return err == nil && slices.Contains(infos[p].ISR, pref)
	})
}

// A rolling restart leaves a node leading nothing; the rebalancer hands
// its preferred partitions back once it is caught up.
func TestLeadersBackOnPreferredReplicas(t *testing.T) {
	c, _, pref := rebalanceCluster(t, 200*time.Millisecond, "bal", 3)
	if len(slices.Compact(slices.Sorted(slices.Values(pref)))) != 3 {
		t.Fatalf("preferred leaders %v: the assignment does not spread them", pref)
	}
	for p := range pref {
		if l := c.leaderOf("bal", int32(p)); l.id != pref[p] {
			t.Fatalf("bal-%d led by node %d, not its preferred node %d", p, l.id, pref[p])
		}
	}
	// Restart each node in turn, as a rolling restart does.
	for p, id := range pref {
		c.stop(id)
		testutil.WaitFor(t, fmt.Sprintf("bal-%d led by another node than %d", p, id), func() bool {
			return c.leaderOf("bal", int32(p)).id != id
		})
		c.restart(id)
		testutil.WaitFor(t, fmt.Sprintf("bal-%d led by node %d again", p, id), func() bool {
			return c.leaderOf("bal", int32(p)).id == id
		})
	}
	for p := range pref {
		if l := c.leaderOf("bal", int32(p)); l.id != pref[p] {
			t.Errorf("after the restarts bal-%d is led by node %d, not its preferred node %d", p, l.id, pref[p])
		}
	}
}

// With the periodic check off, rebalance itself still moves what is led
// away from its preferred replica, and only that.
func TestRebalanceMovesOnlyImbalanced(t *testing.T) {
	c, _, pref := rebalanceCluster(t, -1, "man", 3)
	for _, tn := range c.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d leads its preferred partition", tn.id), func() bool {
			p := slices.Index(pref, tn.id)
			return c.leaderOf("man", int32(p)).id == tn.id
		})
		if k := tn.node.rebalance(); k != 0 {
			t.Fatalf("node %d, balanced, started %d moves", tn.id, k)
		}
	}
	// Move partition 0 away from its preferred replica by hand.
	to := pref[1]
	c.leadAway("man", 0, to, pref[0])
	if k := c.nodes[to].node.rebalance(); k != 1 {
		t.Fatalf("node %d started %d moves, want 1", to, k)
	}
	testutil.WaitFor(t, "man-0 back on its preferred replica", func() bool { return c.leaderOf("man", 0).id == pref[0] })
}

// ElectLeaders' path: asked on any node, the partition's leader hands it
// to the preferred replica and the call returns once that replica leads.
func TestElectPreferredLeader(t *testing.T) {
	c, ctrl, pref := rebalanceCluster(t, -1, "el", 2)
	ctx := ctxTimeout(t)
	testutil.WaitFor(t, "el-0 led by its preferred replica", func() bool { return c.leaderOf("el", 0).id == pref[0] })
	if err := c.nodes[pref[0]].node.ElectPreferredLeader(ctx, "el", 0); !errors.Is(err, server.ErrElectionNotNeeded) {
		t.Fatalf("election on a partition its preferred replica leads: %v", err)
	}
	if err := ctrl.node.ElectPreferredLeader(ctx, "el", 7); !errors.Is(err, store.ErrUnknownPartition) {
		t.Fatalf("election of el-7: %v", err)
	}
	if err := ctrl.node.ElectPreferredLeader(ctx, "nope", 0); !errors.Is(err, store.ErrUnknownTopic) {
		t.Fatalf("election of an unknown topic: %v", err)
	}

	// Led away, then elected back through each node in turn: the
	// leader itself, and a node that forwards to it.
	top, _ := ctrl.node.meta.State().Topic("el")
	replicas := top.Replicas[0]
	away := replicas[1]
	for _, via := range []int32{away, replicas[2]} {
		c.leadAway("el", 0, away, pref[0])
		if err := c.nodes[via].node.ElectPreferredLeader(ctx, "el", 0); err != nil {
			t.Fatalf("election through node %d: %v", via, err)
		}
		if l, _, _, _ := c.nodes[pref[0]].node.parts.Leader("el", 0); l != pref[0] {
			t.Fatalf("after the election through node %d, node %d knows leader %d", via, pref[0], l)
		}
	}

	// The preferred replica gone: not available, and nothing moves.
	c.stop(pref[1])
	testutil.WaitFor(t, fmt.Sprintf("el-1 led by a node other than %d", pref[1]), func() bool { return c.leaderOf("el", 1).id != pref[1] })
	l := c.leaderOf("el", 1)
	testutil.WaitFor(t, fmt.Sprintf("node %d not live", pref[1]), func() bool { return !l.node.liveSet(l.node.meta.State())[pref[1]] })
	if err := l.node.ElectPreferredLeader(ctx, "el", 1); !errors.Is(err, server.ErrPreferredLeaderNotAvailable) {
		t.Fatalf("election with the preferred replica stopped: %v", err)
	}
	if got := c.leaderOf("el", 1); got != l {
		t.Fatalf("el-1 moved from node %d to %d", l.id, got.id)
	}
}

// A node handing its partitions over (SIGTERM) is not given them back by
// the others' rebalancers, though it is live and in sync: a walk saw
// hand-backs stall a producer 2.5 and 6 s, and a node stop still leading
// one. The controller stopping hands its role over first and then says it
// is stopping to the new controller, which knows it when HandOver
// returns (a walk saw a stopping controller given 433 partitions back
// when it handed the role over last and nobody was told).
func TestRebalanceSparesStoppingNode(t *testing.T) {
	for _, role := range []string{"follower", "controller"} {
		t.Run(role, func(t *testing.T) {
			c, ctrl, pref := rebalanceCluster(t, -1, "stop", 3)
			ctx := ctxTimeout(t)
			x := ctrl.id
			if role == "follower" {
				x = pref[slices.IndexFunc(pref, func(id int32) bool { return id != ctrl.id })]
			}
			p := int32(slices.Index(pref, x))
			testutil.WaitFor(t, fmt.Sprintf("stop-%d led by node %d", p, x), func() bool { return c.leaderOf("stop", p).id == x })
			if err := c.nodes[x].node.HandOver(ctx); err != nil {
				t.Fatal(err)
			}
			now := c.controller()
			if now.id == x {
				t.Fatalf("node %d is still the controller after its HandOver", x)
			}
			if !now.node.stoppingSet()[x] {
				t.Fatalf("the controller, node %d, does not know node %d is stopping when its HandOver returns", now.id, x)
			}
			l := c.leaderOf("stop", p)
			if l.id == x {
				t.Fatalf("stop-%d still led by node %d after its HandOver", p, x)
			}
			// Asked to move a partition, the stopping node leaves it to
			// its handover, and the asker looks again.
			if err := c.nodes[x].node.electHere(ctx, "stop", p); !errors.Is(err, errOnTheMove) {
				t.Fatalf("election on the stopping node: %v", err)
			}
			testutil.WaitFor(t, fmt.Sprintf("node %d to know node %d is stopping", l.id, x), func() bool { return l.node.stoppingSet()[x] })
			testutil.WaitFor(t, fmt.Sprintf("node %d in stop-%d's ISR", x, p), func() bool {
				infos, err := l.node.Partitions("stop")
				return err == nil && slices.Contains(infos[p].ISR, x)
			})
			if k := l.node.rebalance(); k != 0 {
				t.Fatalf("node %d started %d moves with the preferred replica stopping", l.id, k)
			}
			if err := l.node.ElectPreferredLeader(ctx, "stop", p); !errors.Is(err, server.ErrPreferredLeaderNotAvailable) {
				t.Fatalf("election to a stopping node: %v", err)
			}
			// Restarted, it is a taker again.
			c.stop(x)
			c.restart(x)
			testutil.WaitFor(t, fmt.Sprintf("node %d no longer stopping to node %d", x, l.id), func() bool {
				return !l.node.stoppingSet()[x] && l.node.takers(l.node.meta.State())[x]
			})
		})
	}
}
