package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// recordLeaders returns tn's record of topic's leaders, or nil unless
// it lists every one of its parts partitions with its three replicas and
// a leader among them in the ISR.
func recordLeaders(c *tcluster, tn *tnode, topic string, parts int) []int32 {
	rec, err := ReadReplicaRecord(c.fs, tn.dir)
	if err != nil || len(rec.Topics[topic]) != parts || rec.Node != tn.id {
		return nil
	}
	var out []int32
	for p, info := range rec.Topics[topic] {
		if info.Partition != int32(p) || len(info.Replicas) != 3 || !slices.Contains(info.Replicas, info.Leader) ||
			!slices.Contains(info.ISR, info.Leader) || info.Epoch < 1 {
			return nil
		}
		out = append(out, info.Leader)
	}
	return out
}

// TestReplicaRecord: each node of a three-node cluster records every
// partition's replicas, leader, epoch and ISR in its DIR; a stopped
// node's record keeps what it last knew; when a leader dies, the running
// nodes' records name its successor.
func TestReplicaRecord(t *testing.T) {
	c := newClusterOf(t, 3, true)
	ctrl := c.controller()
	if err := ctrl.node.CreateTopic(ctxTimeout(t), "orders", 3, 3, nil); err != nil {
		t.Fatal(err)
	}
	var leaders []int32
	testutil.WaitFor(t, "every node to record the leaders it sees", func() bool {
		for _, tn := range c.running() {
			got := recordLeaders(c, tn, "orders", 3)
			parts, err := tn.node.Partitions("orders")
			if got == nil || err != nil {
				return false
			}
			for p, l := range got {
				if parts[p].Leader != l {
					return false
				}
			}
			leaders = got
		}
		return true
	})

	// The leader of orders-0 stops: its record keeps itself as leader,
	// and the others' records move to a new one.
	gone := leaders[0]
	c.stop(gone)
	stopped := vfstest.ReadFile(t, c.fs, filepath.Join(c.nodes[gone].dir, nodeDirName, ReplicasFile))
	if got := recordLeaders(c, c.nodes[gone], "orders", 3); got == nil || got[0] != gone {
		t.Fatalf("the stopped node's record lists leaders %v, want orders-0 led by itself (%d)", got, gone)
	}
	testutil.WaitFor(t, "the running nodes to record a new leader of orders-0", func() bool {
		for _, tn := range c.running() {
			got := recordLeaders(c, tn, "orders", 3)
			if got == nil || got[0] == gone {
				return false
			}
		}
		return true
	})
	if after := vfstest.ReadFile(t, c.fs, filepath.Join(c.nodes[gone].dir, nodeDirName, ReplicasFile)); string(after) != string(stopped) {
		t.Fatal("the stopped node's record changed")
	}

	// A restarted node replays the metadata from the start: no record
	// of a state before the one on disk is written.
	tn := c.running()[0]
	var last []byte
	if err := tn.node.updateRecord(tn.node.meta.State().Index()+1, &last); err != nil || last != nil {
		t.Errorf("a state before the record's floor: %v, wrote %q", err, last)
	}
	if err := tn.node.updateRecord(tn.node.meta.State().Index(), &last); err != nil || last == nil {
		t.Errorf("a state at the floor: %v, wrote nothing", err)
	}

	for dir, want := range map[string]bool{c.nodes[gone].dir: true, "/nowhere": false} {
		if got, err := IsClusterDir(c.fs, dir); err != nil || got != want {
			t.Errorf("IsClusterDir(%s) = %v, %v; want %v", dir, got, err, want)
		}
	}
}

// TestReplicaRecordHandOver: a node stopped as serve stops it on SIGTERM,
// a controlled shutdown (HandOver) then Close, keeps a record of the
// leaders it handed its partitions to, each in its ISR; not the state
// the record was last written in during the transfer (itself as leader,
// or leader none beside every replica as the ISR).
func TestReplicaRecordHandOver(t *testing.T) {
	c := newClusterOf(t, 3, true)
	ctrl := c.controller()
	const parts = 6
	if err := ctrl.node.CreateTopic(ctxTimeout(t), "orders", parts, 3, nil); err != nil {
		t.Fatal(err)
	}
	var leaders []int32
	testutil.WaitFor(t, "every node to record the leaders it sees", func() bool {
		leaders = nil
		for _, tn := range c.running() {
			got := recordLeaders(c, tn, "orders", parts)
			if got == nil || (leaders != nil && !slices.Equal(got, leaders)) {
				return false
			}
			leaders = got
		}
		return true
	})
	gone := leaders[0]
	tn := c.nodes[gone]
	if err := tn.node.HandOver(ctxTimeout(t)); err != nil {
		t.Fatalf("node %d handing over: %v", gone, err)
	}
	c.stop(gone)
	rec, err := ReadReplicaRecord(c.fs, tn.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range rec.Topics["orders"] {
		if info.Leader < 0 || info.Leader == gone || !slices.Contains(info.ISR, info.Leader) {
			t.Errorf("node %d handed its leaderships over and stopped; its record of orders-%d: leader %d epoch %d ISR %v, want another leader, in its ISR",
				gone, info.Partition, info.Leader, info.Epoch, info.ISR)
		}
	}
}

// TestNoLeaderNoISR: a replica that knows no leader (its peers stopped,
// so no election can succeed) lists no ISR, in Metadata (Partitions) as
// in its record, whose epoch is -1 too: the ISR is the leader's view,
// and the assignment's replicas in its place read as every replica in
// sync beside leader none.
func TestNoLeaderNoISR(t *testing.T) {
	c := newClusterOf(t, 3, true)
	ctrl := c.controller()
	if err := ctrl.node.CreateTopic(ctxTimeout(t), "orders", 3, 3, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "every node to record the leaders", func() bool {
		for _, tn := range c.running() {
			if recordLeaders(c, tn, "orders", 3) == nil {
				return false
			}
		}
		return true
	})
	left := c.running()[0]
	for _, tn := range c.running()[1:] {
		c.stop(tn.id)
	}
	testutil.WaitFor(t, fmt.Sprintf("node %d, alone, to know no leader of any partition", left.id), func() bool {
		infos, err := left.node.Partitions("orders")
		if err != nil {
			return false
		}
		for _, info := range infos {
			if info.Leader >= 0 {
				return false
			}
		}
		for _, info := range infos {
			if len(info.ISR) != 0 {
				t.Errorf("Partitions: orders-%d has no leader and ISR %v, want none", info.Partition, info.ISR)
			}
		}
		return true
	})
	testutil.WaitFor(t, fmt.Sprintf("node %d's record to show no leader", left.id), func() bool {
		rec, err := ReadReplicaRecord(c.fs, left.dir)
		if err != nil || len(rec.Topics["orders"]) != 3 {
			return false
		}
		for _, info := range rec.Topics["orders"] {
			if info.Leader >= 0 {
				return false
			}
		}
		for _, info := range rec.Topics["orders"] {
			if len(info.ISR) != 0 || info.Epoch != -1 {
				t.Errorf("the record: orders-%d has no leader, epoch %d and ISR %v, want epoch -1 and no ISR", info.Partition, info.Epoch, info.ISR)
			}
		}
		return true
	})
}

// TestReplicaRecordDamaged: a record that does not parse is ErrDamaged
// naming the file and the byte; none at all is fs.ErrNotExist.
func TestReplicaRecordDamaged(t *testing.T) {
	m := vfs.NewMem()
	if _, err := ReadReplicaRecord(m, "/d"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no record: %v, want fs.ErrNotExist", err)
	}
	name := filepath.Join("/d", nodeDirName, ReplicasFile)
	for _, body := range []string{`{"node": 1, "topics": {"t": [{"partition": "x"}]}}`, `{"node": 1,`, "\x00\x01"} {
		vfstest.WriteFile(t, m, name, []byte(body))
		_, err := ReadReplicaRecord(m, "/d")
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), name+" byte ") {
			t.Errorf("record %q: %v, want ErrDamaged naming %s and a byte", body, err, name)
		}
	}
}

// TestNoRecordBeforeMetadata: a node that has applied no metadata yet (a
// restart with its record gone and no quorum to learn the commit index
// from) writes no record: the tools say "no replica record yet" rather
// than show a cluster of no topics, as the record's help promises.
func TestNoRecordBeforeMetadata(t *testing.T) {
	c := newClusterOf(t, 3, true)
	ctrl := c.controller()
	if err := ctrl.node.CreateTopic(ctxTimeout(t), "orders", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	for _, tn := range c.running() {
		c.stop(tn.id)
	}
	tn := c.nodes[1]
	if err := c.fs.Remove(filepath.Join(tn.dir, nodeDirName, ReplicasFile)); err != nil {
		t.Fatal(err)
	}
	c.restart(1)
	if idx := tn.node.meta.State().Index(); idx != 0 {
		t.Fatalf("node 1 alone applied metadata up to %d; the test needs a node that applied none", idx)
	}
	var last []byte
	if err := tn.node.updateRecord(0, &last); err != nil {
		t.Fatal(err)
	}
	if rec, err := ReadReplicaRecord(c.fs, tn.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a node that applied no metadata wrote a record: %+v, %v", rec, err)
	}
}
