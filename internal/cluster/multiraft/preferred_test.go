package multiraft

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
)

// rotated gives group g of c the voters 1..size starting at node
// (g mod size)+1: each node is the first voter, the preferred leader, of
// some groups.
func rotated(size int) func(*cluster) {
	return func(c *cluster) {
		for _, g := range c.groups {
			var vs []uint64
			for i := range size {
				vs = append(vs, uint64((int(g)+i)%size+1))
			}
			c.voters[g] = vs
		}
	}
}

// TestFirstLeaderIsPreferred: a fresh group's first leader is its first
// voter. Without the other replicas' hold, the winner of each first
// election is whichever timer ran out first. The tick is longer than other
// tests' so that the hold (one election timeout, 0.5 s) covers the
// members' staggered starts on a loaded machine.
func TestFirstLeaderIsPreferred(t *testing.T) {
	c := newClusterWith(t, 3, 9, Config{Tick: 50 * time.Millisecond}, nil, rotated(3))
	c.waitLeaders()
	for _, g := range c.groups {
		if l, want := c.leader(g), c.voters[g][0]; l != want {
			t.Errorf("group %d (voters %v): first leader is node %d, not its preferred node %d", g, c.voters[g], l, want)
		}
	}
}

// TestFirstElectionWithoutPreferred: a group whose preferred replica never
// starts still elects a leader among the others once their hold ends.
func TestFirstElectionWithoutPreferred(t *testing.T) {
	c := newClusterWith(t, 3, 2, Config{}, nil, func(c *cluster) {
		for _, g := range c.groups {
			c.voters[g] = []uint64{4, 1, 2} // node 4 is no member
		}
	})
	for _, g := range c.groups {
		c.propose(g, fmt.Sprintf("without 4: %d", g))
		if l := c.leader(g); l != 1 && l != 2 {
			t.Fatalf("group %d led by node %d", g, l)
		}
	}
}

func TestTransferLeader(t *testing.T) {
	c := newCluster(t, 3, 3, Config{})
	c.waitLeaders()
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()
	for _, g := range c.groups {
		old := c.leader(g)
		to := old%3 + 1
		var nl *NotLeaderError
		if _, err := c.members[to].node.TransferLeader(ctx, g, old); !errors.As(err, &nl) || nl.Leader != old {
			t.Fatalf("group %d: TransferLeader on follower %d: %v, want a NotLeaderError naming node %d", g, to, err, old)
		}
		if _, err := c.members[old].node.TransferLeader(ctx, g, 7); err == nil {
			t.Fatalf("group %d: TransferLeader to node 7, no voter: no error", g)
		}
		if started, err := c.members[old].node.TransferLeader(ctx, g, to); err != nil || !started {
			t.Fatalf("group %d: TransferLeader %d -> %d: started %v, %v", g, old, to, started, err)
		}
		// Asked again while it is under way: nothing new is started.
		if started, err := c.members[old].node.TransferLeader(ctx, g, to); err == nil && started {
			t.Fatalf("group %d: a second TransferLeader %d -> %d started another transfer", g, old, to)
		}
		testutil.WaitFor(t, fmt.Sprintf("group %d led by node %d", g, to), func() bool { return c.leader(g) == to })
		c.propose(g, fmt.Sprintf("after transfer %d", g))
		if l := c.leader(g); l != to {
			t.Fatalf("group %d: led by %d after the transfer to %d", g, l, to)
		}
	}
	if _, err := c.members[1].node.TransferLeader(ctx, 99, 2); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("TransferLeader of an unknown group: %v", err)
	}
}

// addGroupOn adds group g with voters to member m, as start does.
func (c *cluster) addGroupOn(m *member, g uint64, voters []uint64) {
	c.t.Helper()
	st := NewMemoryStorage()
	m.storage[g] = st
	m.rec[g] = &recorder{}
	if err := m.node.AddGroup(g, voters, st, m.rec[g].apply); err != nil {
		c.t.Fatal(err)
	}
}

// TestPreferredComesLate: the preferred replica of a fresh group that
// reaches the group well after the others (a walk saw 0.6 s, a node
// applying the creation of 300 partitions one after another) still wins
// the first election: it campaigns at once, while the others hold.
// Without that, its timer (0.5 to 1 s after it comes) ran out after
// theirs (1 to 1.5 s after they came) in most cases.
func TestPreferredComesLate(t *testing.T) {
	c := newClusterWith(t, 3, 0, Config{Tick: 50 * time.Millisecond}, nil, nil)
	const groups = 4
	for g := uint64(1); g <= groups; g++ {
		c.groups = append(c.groups, g)
		c.voters[g] = []uint64{1, 2, 3}
		c.addGroupOn(c.members[2], g, c.voters[g])
		c.addGroupOn(c.members[3], g, c.voters[g])
	}
	// The skew a node behind the others gives: not a wait for anything.
	time.Sleep(600 * time.Millisecond)
	for g := uint64(1); g <= groups; g++ {
		c.addGroupOn(c.members[1], g, c.voters[g])
	}
	c.waitLeaders()
	for _, g := range c.groups {
		if l := c.leader(g); l != 1 {
			t.Errorf("group %d: first leader node %d, not its preferred node 1", g, l)
		}
	}
}

// TestPreferredComesFirst: a fresh group's preferred replica that adds the
// group before the others, whose first campaign they drop, campaigns
// again while it knows no leader, and is elected once they add the group.
// The election timers here are far longer than the test: only those
// campaigns can elect it. Waiting for its own timer, a new partition had
// no leader for up to 1.7 s.
func TestPreferredComesFirst(t *testing.T) {
	c := newClusterWith(t, 3, 0, Config{ElectionTick: 1 << 20}, nil, nil)
	c.groups = []uint64{1}
	c.voters[1] = []uint64{1, 2, 3}
	c.addGroupOn(c.members[1], 1, c.voters[1])
	testutil.WaitFor(t, "nodes 2 and 3 to drop node 1's first campaign", func() bool {
		return c.members[2].node.Stats().UnknownGroup > 0 && c.members[3].node.Stats().UnknownGroup > 0
	})
	c.addGroupOn(c.members[2], 1, c.voters[1])
	c.addGroupOn(c.members[3], 1, c.voters[1])
	c.waitLeaders()
	if l := c.leader(1); l != 1 {
		t.Errorf("first leader node %d, not its preferred node 1", l)
	}
}
