package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/server"
)

// producerBatch is a producer's batch of one record holding value.
func producerBatch(t *testing.T, value string) []byte {
	t.Helper()
	bld := record.NewBuilder(record.None)
	if err := bld.Add(record.Record{Timestamp: 1_700_000_000_000, Value: []byte(value)}); err != nil {
		t.Fatal(err)
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(b)
}

// leaderOf waits until every running node names the same leader of
// topic's partition p, a running node, and returns it.
func (c *tcluster) leaderOf(topic string, p int32) *tnode {
	c.t.Helper()
	var l *tnode
	testutil.WaitFor(c.t, fmt.Sprintf("the running nodes to agree on %s-%d's leader", topic, p), func() bool {
		l = nil
		for _, tn := range c.running() {
			infos, err := tn.node.Partitions(topic)
			if err != nil || len(infos) <= int(p) || infos[p].Leader < 0 {
				return false
			}
			cand := c.nodes[infos[p].Leader]
			if cand.node == nil || (l != nil && l != cand) {
				return false
			}
			l = cand
		}
		st, err := l.node.State(topic, p)
		return err == nil && st.Leader
	})
	return l
}

// values returns the record values of tn's partition, in offset order.
func values(t *testing.T, tn *tnode, topic string, p int32) []string {
	t.Helper()
	v, err := tn.st.Log(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for r, err := range v.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Value) > 0 {
			out = append(out, string(r.Value))
		}
	}
	return out
}

// The node with the real partition manager: a topic created through the
// cluster is replicated, a produce through its leader reaches every
// replica's store, and after the leader's node closes another leads.
func TestProduceThroughPartitionManager(t *testing.T) {
	c := newClusterOf(t, 3, true)
	ctrl := c.controller()
	var wakes atomic.Int64
	for _, tn := range c.running() {
		tn.node.SetNotify(func() { wakes.Add(1) })
	}
	ctx := ctxTimeout(t)
	if err := c.follower(ctrl).node.CreateTopic(ctx, "e2e", 1, -1, nil); err != nil {
		t.Fatal(err)
	}
	l := c.leaderOf("e2e", 0)
	for _, tn := range c.running() {
		if tn == l {
			continue
		}
		if _, err := tn.node.Produce(ctx, "e2e", 0, producerBatch(t, "x"), -1); !errors.Is(err, server.ErrNotLeader) {
			t.Errorf("produce on follower %d: %v, want ErrNotLeader", tn.id, err)
		}
	}
	before := wakes.Load()
	off, err := l.node.Produce(ctx, "e2e", 0, producerBatch(t, "first"), -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range c.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d's high watermark past offset %d", tn.id, off), func() bool {
			st, err := tn.node.State("e2e", 0)
			return err == nil && st.HighWatermark > off
		})
		if got := values(t, tn, "e2e", 0); len(got) != 1 || got[0] != "first" {
			t.Errorf("node %d holds %q", tn.id, got)
		}
	}
	if wakes.Load() == before {
		t.Error("no notification as the high watermark advanced")
	}

	c.stop(l.id)
	nl := c.leaderOf("e2e", 0)
	off2, err := nl.node.Produce(ctx, "e2e", 0, producerBatch(t, "second"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if off2 <= off {
		t.Errorf("offset %d after %d", off2, off)
	}
	for _, tn := range c.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d to hold both records", tn.id), func() bool {
			got := values(t, tn, "e2e", 0)
			return len(got) == 2 && got[1] == "second"
		})
	}
}
