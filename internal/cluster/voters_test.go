package cluster

import (
	"errors"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestVotersChecked: a node restarted with voters other than the ones
// the cluster was first started with (a fourth voter added, or one left
// out, as a user's walk did) is refused with ErrVoters naming both sets,
// before the metadata group runs: its node directory and meta.properties
// are as they were, and its metadata holds the same bytes (opening and
// closing the metadata log, as every start does, rewrites the log's
// clean-shutdown marker, indexes and checkpoints with the bytes they
// held: only their times change). Started again with the voters it
// was created with, it rejoins. Without the check the node started and
// served: "node 3 of 4 voters", "node 3 of 2 voters", its metadata raft
// keeping the stored voters while the rest of the node followed the list.
func TestVotersChecked(t *testing.T) {
	c := newCluster(t, 3)
	c.controller()
	c.stop(3)
	tn := c.nodes[3]

	// A fourth voter's address: a port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	extra := ln.Addr().String()
	ln.Close()
	added := maps.Clone(c.voters)
	added[4] = extra
	without2 := maps.Clone(c.voters)
	delete(without2, 2)
	stored := "1@" + c.voters[1] + ",2@" + c.voters[2] + ",3@" + c.voters[3]

	metaDir, nodeDir := filepath.Join(tn.dir, meta.DirName), filepath.Join(tn.dir, nodeDirName)
	metaBefore := contents(vfstest.Snapshot(t, c.fs, metaDir))
	nodeBefore := vfstest.Snapshot(t, c.fs, nodeDir)
	propsBefore := vfstest.ReadFile(t, c.fs, filepath.Join(tn.dir, layout.MetaPropertiesFile))
	for _, tc := range []struct {
		what   string
		voters map[int32]string
		given  string
	}{
		{"a fourth voter added", added, "given voters 1,2,3,4"},
		{"node 2 left out", without2, "given voters 1,3"},
	} {
		c.configure = func(_ *tnode, cfg *Config) { cfg.Voters = tc.voters }
		err := c.startWith(tn, 3, nil)
		if err == nil {
			c.stop(3)
			t.Fatalf("restarted with %s: started, want ErrVoters", tc.what)
		}
		msg := err.Error()
		if !errors.Is(err, ErrVoters) || !strings.Contains(msg, tc.given) || !strings.Contains(msg, "holds voters "+stored) ||
			!strings.Contains(msg, "membership changes are not supported") || !strings.Contains(msg, "Start this node with --voters") {
			t.Errorf("restarted with %s: %v, want ErrVoters naming both sets and what to do", tc.what, err)
		}
	}
	vfstest.Unchanged(t, "the refused starts' metadata", metaBefore, contents(vfstest.Snapshot(t, c.fs, metaDir)))
	vfstest.Unchanged(t, "the refused starts' node directory", nodeBefore, vfstest.Snapshot(t, c.fs, nodeDir))
	if after := vfstest.ReadFile(t, c.fs, filepath.Join(tn.dir, layout.MetaPropertiesFile)); string(after) != string(propsBefore) {
		t.Errorf("the refused starts rewrote meta.properties:\n%s\nwas\n%s", after, propsBefore)
	}

	// The voters it was created with: it rejoins.
	c.configure = nil
	c.restart(3)
	if _, err := tn.node.ClusterID(ctxTimeout(t)); err != nil {
		t.Fatalf("restarted with its voters: %v", err)
	}
	c.controller()
}

// contents is a vfstest.Snapshot without the modification times: what
// each entry is and holds.
func contents(snap map[string]string) map[string]string {
	out := make(map[string]string, len(snap))
	for name, desc := range snap {
		f := strings.Fields(desc) // mode, size, time, and a file's hash
		out[name] = strings.Join(slices.Delete(f, 2, 3), " ")
	}
	return out
}

// TestVoterAddressMoves: a voter's raft address may change between
// starts (same id, another host or port) when every node is started
// with the new --voters: the metadata raft dials the address Voters
// gives, not the one its stored configuration has kept since the
// cluster's first start. Node 2 moves while the others run without it;
// restarted at its new address it catches up with the metadata the
// controller replicates to it, and is registered. Without that the
// controller kept dialing node 2's first address, and node 2, refused
// votes while the others had a controller, never caught up.
func TestVoterAddressMoves(t *testing.T) {
	c := newCluster(t, 3)
	c.controller()
	for _, tn := range c.running() {
		c.stop(tn.id)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	moved := maps.Clone(c.voters)
	moved[2] = ln.Addr().String()
	c.voters, c.nodes[2].addr = moved, moved[2]
	c.restart(1)
	c.restart(3)
	ctrl := c.controller()
	ctx := ctxTimeout(t)
	if err := ctrl.node.CreateTopic(ctx, "moved", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.startWith(c.nodes[2], 2, ln); err != nil {
		t.Fatal(err)
	}
	two := c.nodes[2]
	if _, err := two.node.ClusterID(ctx); err != nil {
		t.Fatalf("node 2 at its new address: %v", err)
	}
	testutil.WaitFor(t, "node 2 to apply the topic created while it was away", func() bool {
		_, ok := two.node.meta.State().Topic("moved")
		return ok
	})
}
