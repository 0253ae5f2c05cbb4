package multiraft

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
)

// TestTakeOverFromDeadLeader: when a group's leader dies, its node and
// its port closing as a killed process's do, the group's successor (the
// first other replica in the order the group was added with) campaigns at
// once. The election timers here are far longer than the test, so only
// that campaign can elect the new leaders; each group gets its own
// successor as leader, and commits again.
func TestTakeOverFromDeadLeader(t *testing.T) {
	c := newClusterWith(t, 3, 0, Config{}, nil, func(c *cluster) {
		c.groups = []uint64{1, 2}
		c.voters[1] = []uint64{1, 2, 3}
		c.voters[2] = []uint64{1, 3, 2}
	})
	c.waitLeaders() // node 1, the preferred replica, campaigns at once
	for _, g := range c.groups {
		if l := c.leader(g); l != 1 {
			t.Fatalf("group %d led by %d, want its preferred replica 1", g, l)
		}
		c.propose(g, fmt.Sprintf("before-%d", g))
	}
	// The followers come back, one at a time, with election timers that
	// never run out within the test.
	c.cfg.ElectionTick = 1 << 20
	events := &testutil.LogRecords{}
	c.cfg.Log = slog.New(events)
	for _, id := range []uint64{2, 3} {
		c.stop(c.members[id])
		c.start(c.members[id])
		c.waitLeaders()
	}
	c.stop(c.members[1])
	c.waitLeaders()
	for g, want := range map[uint64]uint64{1: 2, 2: 3} {
		if l := c.leader(g); l != want {
			t.Errorf("group %d led by %d after node 1 died, want its successor %d", g, l, want)
		}
		c.propose(g, fmt.Sprintf("after-%d", g))
		c.waitAgree(g, 2)
	}
	// Each successor said so in its log, once, for its one group.
	var got []string
	for _, l := range events.Take() {
		if _, attrs, ok := strings.Cut(l, "refuses connections; campaigning at once where this node succeeds it "); ok {
			got = append(got, attrs)
		}
	}
	if !slices.Equal(got, []string{"leader=1 groups=1", "leader=1 groups=1"}) {
		t.Errorf("takeover log lines %q, want one from each successor", got)
	}
}

// TestTakeOverBackup: when a dead leader's successor does not take over
// (here it has just restarted, never connected to the leader, and knows no
// leader), the other survivor, which saw the leader's port refuse,
// campaigns itself a few ticks later. The election timers are again far
// longer than the test.
func TestTakeOverBackup(t *testing.T) {
	c := newClusterWith(t, 3, 0, Config{}, nil, func(c *cluster) {
		c.groups = []uint64{1}
		c.voters[1] = []uint64{1, 2, 3}
	})
	c.waitLeaders()
	if l := c.leader(1); l != 1 {
		t.Fatalf("group 1 led by %d, want its preferred replica 1", l)
	}
	c.cfg.ElectionTick = 1 << 20
	c.stop(c.members[3])
	c.start(c.members[3])
	c.waitLeaders()
	c.propose(1, "before")
	c.waitAgree(1, 1)
	// The successor, node 2, goes down and comes back just as the leader
	// dies: it never hears of node 1 again.
	c.stop(c.members[2])
	c.stop(c.members[1])
	c.start(c.members[2])
	c.waitLeaders()
	if l := c.leader(1); l != 3 {
		t.Errorf("group 1 led by %d after node 1 died, want node 3", l)
	}
	c.propose(1, "after")
	c.waitAgree(1, 2)
}
