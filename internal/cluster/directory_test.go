package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestWipedDirRefused: a node started again with the same id over an
// empty DIR (a wiped or replaced disk) is refused by the controller
// before it starts a replica or writes a partition: its Failed closes
// with ErrDirectoryID, ClusterID answers it, the metadata keeps the old
// registration, and the node's old DIR rejoins afterwards and catches
// up. Without the refusal the blank replica is sent a commit index
// beyond its empty log and etcd raft panics, which ends this test's
// process.
func TestWipedDirRefused(t *testing.T) {
	c := newClusterOf(t, 3, true)
	ctrl := c.controller()
	ctx := ctxTimeout(t)
	if err := ctrl.node.CreateTopic(ctx, "w", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	l := c.leaderOf("w", 0)
	produce := func(l *tnode, n int) int64 {
		t.Helper()
		var last int64
		for i := range n {
			off, err := l.node.Produce(ctx, "w", 0, producerBatch(t, fmt.Sprint(i)), -1)
			if err != nil {
				t.Fatal(err)
			}
			last = off
		}
		return last
	}
	last := produce(l, 5)
	var victim *tnode
	for _, tn := range c.running() {
		if tn != ctrl && tn != l {
			victim = tn
		}
	}
	if victim == nil {
		victim = c.follower(ctrl) // the controller leads w-0: any other node
	}
	waitEnd := func(tn *tnode, end int64) {
		t.Helper()
		testutil.WaitFor(t, fmt.Sprintf("node %d to hold w-0 to offset %d", tn.id, end), func() bool {
			lg, err := tn.st.Log("w", 0)
			return err == nil && lg.EndOffset() >= end
		})
	}
	waitEnd(victim, last+1)
	before, _ := ctrl.node.meta.State().Broker(victim.id)
	if before.DirectoryID == "" {
		t.Fatalf("node %d registered without a directory id", victim.id)
	}
	old := *victim
	c.stop(victim.id)

	blank := &tnode{id: victim.id, dir: victim.dir + "-wiped", addr: victim.addr, kafka: victim.kafka}
	c.nodes[victim.id] = blank
	err := c.startWith(blank, blank.id, nil)
	if !errors.Is(err, ErrDirectoryID) || !strings.Contains(err.Error(), before.DirectoryID) {
		t.Errorf("node over a wiped DIR: %v, want ErrDirectoryID naming directory.id=%s", err, before.DirectoryID)
	}
	// Refused before it joined the metadata group: it cast no vote and
	// holds no raft state, and wrote no partition.
	if _, err := c.fs.Stat(blank.dir + "/" + meta.DirName + "/quorum-state"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused node wrote raft's state: %v", err)
	}
	if _, err := c.fs.Stat(blank.dir + "/w-0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused node made w-0: %v", err)
	}
	if after, _ := ctrl.node.meta.State().Broker(victim.id); after != before {
		t.Errorf("the refused registration changed broker %d: %+v, was %+v", victim.id, after, before)
	}
	// The survivors still take acks=all writes.
	last = produce(c.leaderOf("w", 0), 3)

	// Its own DIR with both files that keep the directory id lost: the
	// metadata is there, so the node joins the metadata group, and the
	// controller refuses its registration; the node fails before it
	// writes a partition.
	c.nodes[victim.id] = &old
	for _, p := range []string{old.dir + "/" + layout.MetaPropertiesFile, old.dir + "/" + nodeDirName + "/" + layout.MetaPropertiesFile} {
		if err := c.fs.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	c.restart(victim.id)
	if _, err := old.node.ClusterID(ctx); !errors.Is(err, ErrDirectoryID) || !errors.Is(err, meta.ErrDirectoryID) {
		t.Errorf("the node with its ids lost: %v, want ErrDirectoryID", err)
	}
	select {
	case <-old.node.Failed():
	default:
		t.Error("the refused node has not failed")
	}
	if lg, err := old.st.Log("w", 0); err != nil || lg.EndOffset() >= last+1 {
		t.Errorf("the refused node's w-0: %v; it must not have caught up", err)
	}
	if after, _ := ctrl.node.meta.State().Broker(victim.id); after.DirectoryID != before.DirectoryID {
		t.Errorf("the refusal changed broker %d's directory id to %s", victim.id, after.DirectoryID)
	}
	c.stop(victim.id)
	// The id the message names, written back, brings it back: it
	// rejoins and catches up.
	for _, dir := range []string{old.dir, old.dir + "/" + nodeDirName} {
		p, err := readProps(c.fs, dir)
		if err != nil || !p.exists {
			t.Fatalf("%s: %+v, %v", dir, p, err)
		}
		p.directoryID = before.DirectoryID
		if err := p.write(c.fs); err != nil {
			t.Fatal(err)
		}
	}
	c.restart(victim.id)
	if _, err := old.node.ClusterID(ctx); err != nil {
		t.Fatalf("the node over its own DIR: %v", err)
	}
	waitEnd(&old, last+1)
}

// TestDirectoryIDKept: a DIR gets its directory id at its first start,
// keeps it in meta.properties across restarts, and registers with it; a
// DIR a version without directory ids made (meta.properties without
// one) gets one at its next start, and the metadata takes it.
func TestDirectoryIDKept(t *testing.T) {
	mk := func() *tcluster { return oneVoter(t) }
	registeredWith := func(c *tcluster) string {
		t.Helper()
		c.restart(1)
		tn := c.nodes[1]
		if _, err := tn.node.ClusterID(ctxTimeout(t)); err != nil {
			t.Fatal(err)
		}
		b, _ := tn.node.meta.State().Broker(1)
		c.stop(1)
		p, err := readProps(c.fs, "/d")
		if err != nil || p.directoryID == "" || p.directoryID != b.DirectoryID {
			t.Fatalf("meta.properties %+v, %v; the metadata has directory id %q", p, err, b.DirectoryID)
		}
		return p.directoryID
	}
	c := mk()
	first := registeredWith(c)
	if again := registeredWith(c); again != first {
		t.Errorf("directory id %s after a restart, was %s", again, first)
	}

	old := mk()
	if err := old.fs.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	if err := (props{path: filepath.Join("/d", layout.MetaPropertiesFile), nodeID: 1, clusterID: "old-cluster-xxxxxxxxxx"}).write(old.fs); err != nil {
		t.Fatal(err)
	}
	id := registeredWith(old)
	if early, err := readProps(old.fs, filepath.Join("/d", nodeDirName)); err != nil || early.directoryID != id {
		t.Errorf("an old DIR's %s: %+v, %v; want directory id %s there too", nodeDirName, early, err, id)
	}
	// Losing one of the two files does not make the DIR look new.
	if err := old.fs.Remove(filepath.Join("/d", layout.MetaPropertiesFile)); err != nil {
		t.Fatal(err)
	}
	if again := registeredWith(old); again != id {
		t.Errorf("with meta.properties lost the DIR registered as %s, was %s", again, id)
	}
}

// oneVoter is a cluster of one voter, node 1 over /d, not started
// (restart starts it): its own controller, so it needs no peer.
func oneVoter(t *testing.T) *tcluster {
	c := &tcluster{t: t, fs: vfs.NewMem(), voters: map[int32]string{}, nodes: map[int32]*tnode{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.voters[1] = ln.Addr().String()
	c.nodes[1] = &tnode{id: 1, dir: "/d", addr: c.voters[1], kafka: "k:1"}
	t.Cleanup(func() {
		if c.nodes[1].node != nil {
			c.stop(1)
		}
	})
	ln.Close()
	return c
}

// TestNodeDirLostRefused: a node's DIR whose .cluster_node was deleted
// (to "resync" the node, as a user walking the docs did) or moved away,
// its meta.properties and metadata still there, is refused with
// ErrNodeStateLost naming the directory and the directory.id, before
// anything is written: CheckDir (what serve asks before it opens the
// store) changes nothing in the DIR, and Start makes no .cluster_node
// and touches neither meta.properties nor the metadata. Put back, the
// node starts and still holds its topic as the cluster's. Without the
// refusal the node started, took the cluster's topics for its store's
// own and replicated none of them.
//
// A DIR with a directory.id and neither directory (a Kafka broker's
// log.dir looks so too) is refused with the way out for the latter; a
// single node's store (meta.properties without directory.id) is not.
func TestNodeDirLostRefused(t *testing.T) {
	c := oneVoter(t)
	c.restart(1)
	tn := c.nodes[1]
	ctx := ctxTimeout(t)
	if _, err := tn.node.ClusterID(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tn.node.CreateTopic(ctx, "orders", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := tn.node.meta.State().Broker(1)
	c.stop(1)
	if b.DirectoryID == "" {
		t.Fatal("the node registered without a directory id")
	}

	nodeDir, aside := filepath.Join("/d", nodeDirName), "/cluster_node-aside"
	if err := c.fs.Rename(nodeDir, aside); err != nil {
		t.Fatal(err)
	}
	before := vfstest.Snapshot(t, c.fs, "/d")
	err := CheckDir(c.fs, "/d", 1)
	if !errors.Is(err, ErrNodeStateLost) || !strings.Contains(err.Error(), "directory.id="+b.DirectoryID) ||
		!strings.Contains(err.Error(), nodeDir+" is missing") || !strings.Contains(err.Error(), "Put "+nodeDirName+" back") {
		t.Errorf("CheckDir without %s: %v, want ErrNodeStateLost naming it, the directory.id and what to do", nodeDir, err)
	}
	vfstest.Unchanged(t, "CheckDir", before, vfstest.Snapshot(t, c.fs, "/d"))

	metaBefore := vfstest.Snapshot(t, c.fs, filepath.Join("/d", meta.DirName))
	propsBefore := vfstest.ReadFile(t, c.fs, filepath.Join("/d", layout.MetaPropertiesFile))
	if err := c.startWith(tn, 1, nil); !errors.Is(err, ErrNodeStateLost) {
		t.Errorf("Start without %s: %v, want ErrNodeStateLost", nodeDir, err)
	}
	if _, err := c.fs.Stat(nodeDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused Start made %s: %v", nodeDir, err)
	}
	vfstest.Unchanged(t, "the refused Start", metaBefore, vfstest.Snapshot(t, c.fs, filepath.Join("/d", meta.DirName)))
	if after := vfstest.ReadFile(t, c.fs, filepath.Join("/d", layout.MetaPropertiesFile)); string(after) != string(propsBefore) {
		t.Errorf("the refused Start rewrote meta.properties:\n%s\nwas\n%s", after, propsBefore)
	}

	// Put back, it starts, and the topic is still the cluster's here.
	if err := c.fs.Rename(aside, nodeDir); err != nil {
		t.Fatal(err)
	}
	c.restart(1)
	if _, err := tn.node.ClusterID(ctx); err != nil {
		t.Fatalf("with %s back: %v", nodeDir, err)
	}
	topic, _ := tn.node.meta.State().Topic("orders")
	tn.node.recMu.Lock()
	id, mine := tn.node.topics.ids["orders"]
	tn.node.recMu.Unlock()
	if !mine || id != topic.ID {
		t.Errorf("with %s back the node's record of orders is %x (%v), want the metadata's %x", nodeDir, id, mine, topic.ID)
	}

	// meta.properties lost with it: the metadata log is sign enough. (A
	// walk found the node then refused only at registration, after it
	// had made a new node directory under a new directory id.)
	c.stop(1)
	if err := c.fs.Rename(nodeDir, aside); err != nil {
		t.Fatal(err)
	}
	if err := c.fs.Remove(filepath.Join("/d", layout.MetaPropertiesFile)); err != nil {
		t.Fatal(err)
	}
	before = vfstest.Snapshot(t, c.fs, "/d")
	if err := CheckDir(c.fs, "/d", 1); !errors.Is(err, ErrNodeStateLost) || !strings.Contains(err.Error(), "holds the metadata log") {
		t.Errorf("CheckDir without %s and meta.properties: %v, want ErrNodeStateLost naming the metadata log", nodeDir, err)
	}
	vfstest.Unchanged(t, "CheckDir without meta.properties", before, vfstest.Snapshot(t, c.fs, "/d"))
	metaBefore = vfstest.Snapshot(t, c.fs, filepath.Join("/d", meta.DirName))
	if err := c.startWith(tn, 1, nil); !errors.Is(err, ErrNodeStateLost) {
		t.Errorf("Start without %s and meta.properties: %v, want ErrNodeStateLost", nodeDir, err)
	}
	for _, name := range []string{nodeDir, filepath.Join("/d", layout.MetaPropertiesFile)} {
		if _, err := c.fs.Stat(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the refused Start without meta.properties made %s: %v", name, err)
		}
	}
	vfstest.Unchanged(t, "the refused Start without meta.properties", metaBefore, vfstest.Snapshot(t, c.fs, filepath.Join("/d", meta.DirName)))

	// Neither directory: refused too, with the way out for a Kafka
	// broker's log.dir; without a directory.id (a single node's store,
	// or an older build's DIR) not refused.
	mem := vfs.NewMem()
	for dir, p := range map[string]props{
		"/kafka":  {nodeID: 1, clusterID: "kafka-cluster-xxxxxxxxx", directoryID: "dir-id-xxxxxxxxxxxxxxx"},
		"/single": {nodeID: 1, clusterID: "single-node-xxxxxxxxxxx"},
	} {
		if err := mem.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		p.path = filepath.Join(dir, layout.MetaPropertiesFile)
		if err := p.write(mem); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckDir(mem, "/kafka", 1); !errors.Is(err, ErrNodeStateLost) || !strings.Contains(err.Error(), "neither") ||
		!strings.Contains(err.Error(), "Kafka broker's log.dir") {
		t.Errorf("a DIR with a directory.id and neither directory: %v, want ErrNodeStateLost saying so", err)
	}
	if err := CheckDir(mem, "/single", 1); err != nil {
		t.Errorf("a single node's store: %v", err)
	}
}

// TestWhoisWhileOpening: a node still opening its metadata answers whois
// as fresh only if its DIR had none; one replaying the metadata it has
// cannot tell yet, so a wiped peer asking then is not taken for a new
// cluster's node.
func TestWhoisWhileOpening(t *testing.T) {
	var n Node
	if r := n.whois(request{Op: opWhois, Broker: 3}); r.Fresh || r.Named || r.Known {
		t.Errorf("a node opening existing metadata answered %+v, want neither fresh, named nor known", r)
	}
	n.blank.Store(true)
	if r := n.whois(request{Op: opWhois, Broker: 3}); !r.Fresh {
		t.Errorf("a node in its own checkBlank answered %+v, want fresh", r)
	}
}
