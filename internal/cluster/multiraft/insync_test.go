package multiraft

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
)

// TestLiveAndWaitReplicated: the leader counts a replica live while it
// hears from it and stops an election timeout after it stops; a wait for
// every replica to hold an entry returns once they do, fails with
// ErrTooFewLive once one is gone (while a wait for a majority returns),
// and succeeds again once the replica is back and has caught up. A
// follower answers neither.
func TestLiveAndWaitReplicated(t *testing.T) {
	c := newCluster(t, 3, 1, Config{Tick: 20 * time.Millisecond})
	c.waitLeaders()
	g := c.groups[0]
	first := c.propose(g, "x")
	lead := c.leader(g)
	ln := c.members[lead].node
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testutil.WaitFor(t, "all three replicas live", func() bool {
		live, voters, err := ln.Live(g)
		return err == nil && live == 3 && voters == 3
	})
	if err := ln.WaitReplicated(ctx, g, first, 3); err != nil {
		t.Fatalf("wait for three replicas of %d: %v", first, err)
	}
	var f *member
	for id, m := range c.members {
		if id != lead {
			f = m
			break
		}
	}
	if live, _, err := f.node.Live(g); err != nil || live != 0 {
		t.Errorf("Live on a follower: %d, %v; want 0", live, err)
	}
	var nle *NotLeaderError
	if err := f.node.WaitReplicated(ctx, g, first, 1); !errors.As(err, &nle) || nle.Leader != lead {
		t.Errorf("WaitReplicated on a follower: %v, want NotLeaderError naming %d", err, lead)
	}

	c.stop(f)
	second := c.propose(g, "y")
	if now := c.leader(g); now != lead {
		// Two of three still hear each other: nothing should depose it.
		t.Fatalf("the leadership moved from %d to %d when a follower stopped", lead, now)
	}
	if err := ln.WaitReplicated(ctx, g, second, 2); err != nil {
		t.Fatalf("wait for a majority of %d with a follower down: %v", second, err)
	}
	if err := ln.WaitReplicated(ctx, g, second, 3); !errors.Is(err, ErrTooFewLive) {
		t.Fatalf("wait for three replicas of %d with one down: %v, want ErrTooFewLive", second, err)
	}
	if live, voters, err := ln.Live(g); err != nil || live != 2 || voters != 3 {
		t.Errorf("Live with a follower down: %d of %d, %v; want 2 of 3", live, voters, err)
	}

	c.start(f)
	testutil.WaitFor(t, "the restarted follower to hold the entry it missed", func() bool {
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		defer wcancel()
		err := ln.WaitReplicated(wctx, g, second, 3)
		if err != nil && !errors.Is(err, ErrTooFewLive) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("wait after the restart: %v", err)
		}
		return err == nil
	})
}
