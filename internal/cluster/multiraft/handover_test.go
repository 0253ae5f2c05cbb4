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
	if err := c.members[old].node.HandOver(ctx); err != nil {
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
