package cluster

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
)

// TestMinInsyncReplicas: a topic's min.insync.replicas in a cluster. At 3
// on three replicas an acks=all write is answered once every replica's
// log holds it; with a follower stopped it is refused unwritten
// (NOT_ENOUGH_REPLICAS), or, when the follower went while the write
// waited, stored and answered NOT_ENOUGH_REPLICAS_AFTER_APPEND, while a
// topic at the default still takes writes on the two replicas left (the
// majority raft needs); with the follower back, writes go on.
func TestMinInsyncReplicas(t *testing.T) {
	c := newClusterOf(t, 3, true)
	ctrl := c.controller()
	ctx := ctxTimeout(t)
	if rf := ctrl.node.DefaultReplicationFactor(); rf != 3 {
		// What serve reports as default.replication.factor.
		t.Errorf("three voters' default replication factor: %d, want 3", rf)
	}
	if err := ctrl.node.CreateTopic(ctx, "all3", 1, 3, map[string]string{"min.insync.replicas": "3"}); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.node.CreateTopic(ctx, "dflt", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	l := c.leaderOf("all3", 0)
	off, err := l.node.Produce(ctx, "all3", 0, producerBatch(t, "a"), -1)
	if err != nil {
		t.Fatal(err)
	}
	// Answered, so in every replica's log now: no wait.
	for _, tn := range c.running() {
		if got := values(t, tn, "all3", 0); !slices.Equal(got, []string{"a"}) {
			t.Errorf("node %d holds %q when the write at %d was answered", tn.id, got, off)
		}
	}

	var f *tnode
	for _, tn := range c.running() {
		if tn != l {
			f = tn
			break
		}
	}
	c.stop(f.id)
	if c.leaderOf("all3", 0) != l {
		t.Fatalf("all3's leadership moved when follower %d stopped", f.id)
	}
	_, err = l.node.Produce(ctx, "all3", 0, producerBatch(t, "b"), -1)
	stored := []string{"a"}
	switch {
	case errors.Is(err, server.ErrNotEnoughReplicasAfterAppend):
		// Proposed while the follower still counted as live: committed
		// by the two left, and said so.
		stored = append(stored, "b")
	case errors.Is(err, server.ErrNotEnoughReplicas):
	default:
		t.Fatalf("acks=all write with a follower down: %v, want NOT_ENOUGH_REPLICAS(_AFTER_APPEND)", err)
	}
	// By now the follower is known gone: refused before it is proposed.
	if _, err := l.node.Produce(ctx, "all3", 0, producerBatch(t, "c"), -1); !errors.Is(err, server.ErrNotEnoughReplicas) {
		t.Fatalf("acks=all write with a follower known down: %v, want ErrNotEnoughReplicas", err)
	}
	if _, err := l.node.Produce(ctx, "all3", 0, producerBatch(t, "d"), 1); err != nil {
		t.Fatalf("acks=1 write with a follower down: %v", err)
	}
	stored = append(stored, "d")
	for _, tn := range c.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d to hold %q", tn.id, stored), func() bool {
			return slices.Equal(values(t, tn, "all3", 0), stored)
		})
	}
	dl := c.leaderOf("dflt", 0)
	if _, err := dl.node.Produce(ctx, "dflt", 0, producerBatch(t, "e"), -1); err != nil {
		t.Fatalf("acks=all write to a topic at the default min.insync.replicas, two of three up: %v", err)
	}

	c.restart(f.id)
	testutil.WaitFor(t, "acks=all writes to all3 again", func() bool {
		l = c.leaderOf("all3", 0)
		_, err := l.node.Produce(ctx, "all3", 0, producerBatch(t, "f"), -1)
		if err != nil && !errors.Is(err, server.ErrNotEnoughReplicas) && !errors.Is(err, server.ErrNotEnoughReplicasAfterAppend) {
			t.Fatalf("acks=all write after the restart: %v", err)
		}
		return err == nil
	})
}
