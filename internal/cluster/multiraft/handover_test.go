package multiraft

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
)

// TestHandOver: a node handing over (a controlled shutdown) leaves no
// group led by it: by the time HandOver returns it knows another leader
// of each group it led, which knows itself so, so nothing waits for an
// election timeout once the node stops; the groups commit through their new
// leaders with the node gone, the entries committed before all kept.
func TestHandOver(t *testing.T) {
	c := newCluster(t, 3, 6, Config{})
	c.waitLeaders()
	for _, g := range c.groups {
		c.propose(g, fmt.Sprintf("before %d", g))
	}
	// The node leading the most groups hands over.
	count := map[uint64]int{}
	for _, g := range c.groups {
		count[c.leader(g)]++
	}
	var old uint64
	for id, k := range count {
		if old == 0 || k > count[old] {
			old = id
		}
	}
	var led []uint64
	for _, g := range c.groups {
		if c.leader(g) == old {
			led = append(led, g)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()
	if err := c.members[old].node.HandOver(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, g := range led {
		next, _, _ := c.members[old].node.Leader(g)
		if next == old || next == 0 {
			t.Fatalf("group %d: node %d knows leader %d after HandOver", g, old, next)
		}
		if l, _, err := c.members[next].node.Leader(g); err != nil || l != next {
			t.Fatalf("group %d: node %d, named the leader, knows leader %d (%v)", g, next, l, err)
		}
	}
	c.stop(c.members[old])
	for _, g := range led {
		i := c.propose(g, fmt.Sprintf("after %d", g))
		for id, m := range c.members {
			if id == old {
				continue
			}
			testutil.WaitFor(t, fmt.Sprintf("node %d applies group %d to %d", id, g, i), func() bool {
				got := m.rec[g].get()
				return applied(got, fmt.Sprintf("before %d", g)) && applied(got, fmt.Sprintf("after %d", g))
			})
		}
	}
}

// applied reports whether a recorder's entries hold data.
func applied(ents []string, data string) bool {
	for _, e := range ents {
		if strings.HasSuffix(e, ":"+data) {
			return true
		}
	}
	return false
}

// TestHandOverToSuccessor: a node handing over gives each group to its
// successor, the first other replica in the group's order, when that one
// is replicating, as Kafka's controlled shutdown picks the first in-sync
// replica of the assignment: here node 1's eight groups go four to node 2
// and four to node 3, as their replica lists alternate.
func TestHandOverToSuccessor(t *testing.T) {
	want := map[uint64]uint64{}
	c := newClusterWith(t, 3, 8, Config{}, nil, func(c *cluster) {
		for _, g := range c.groups {
			next := 2 + g%2
			c.voters[g] = []uint64{1, next, 5 - next}
			want[g] = next
		}
	})
	c.waitLeaders()
	for _, g := range c.groups {
		if l := c.leader(g); l != 1 {
			t.Fatalf("group %d led by %d, want its preferred replica 1", g, l)
		}
		c.propose(g, fmt.Sprintf("before %d", g))
	}
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()
	if err := c.members[1].node.HandOver(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for _, g := range c.groups {
		if l, _, _ := c.members[1].node.Leader(g); l != want[g] {
			t.Errorf("group %d handed to node %d, want its successor %d", g, l, want[g])
		}
	}
}

// TestHandOverAvoids: a handover gives nothing to a peer it is told to
// avoid (a node stopping too): with node 2 avoided, node 1's groups go to
// node 3 whatever their successor; with both avoided, node 1 keeps them.
func TestHandOverAvoids(t *testing.T) {
	c := newClusterWith(t, 3, 4, Config{}, nil, func(c *cluster) {
		for _, g := range c.groups {
			c.voters[g] = []uint64{1, 2, 3}
		}
	})
	c.waitLeaders()
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()
	if err := c.members[1].node.HandOver(ctx, func(id uint64) bool { return id == 2 || id == 3 }); err != nil {
		t.Fatal(err)
	}
	for _, g := range c.groups {
		if l := c.leader(g); l != 1 {
			t.Errorf("group %d led by %d after a handover avoiding nodes 2 and 3, want 1", g, l)
		}
	}
	if err := c.members[1].node.HandOver(ctx, func(id uint64) bool { return id == 2 }); err != nil {
		t.Fatal(err)
	}
	for _, g := range c.groups {
		if l, _, _ := c.members[1].node.Leader(g); l != 3 {
			t.Errorf("group %d handed to %d with node 2 avoided, want node 3", g, l)
		}
	}
}
