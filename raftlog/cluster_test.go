package raftlog

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/vfs"
)

// hashFSM folds every command into a running hash, so equal state on every
// node means the same commands in the same order.
type hashFSM struct {
	mu       sync.Mutex
	count    uint64
	hash     uint64
	restores int
}

func (f *hashFSM) Apply(l *raft.Log) any {
	h := fnv.New64a()
	h.Write(l.Data)
	f.mu.Lock()
	f.count++
	f.hash = (f.hash ^ h.Sum64()) * 1099511628211
	f.mu.Unlock()
	return nil
}

func (f *hashFSM) state() (uint64, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count, f.hash
}

func (f *hashFSM) Snapshot() (raft.FSMSnapshot, error) {
	c, h := f.state()
	return hashSnap{c, h}, nil
}

func (f *hashFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [16]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	f.mu.Lock()
	f.count, f.hash = binary.BigEndian.Uint64(b[:]), binary.BigEndian.Uint64(b[8:])
	f.restores++
	f.mu.Unlock()
	return nil
}

type hashSnap struct{ count, hash uint64 }

func (s hashSnap) Persist(sink raft.SnapshotSink) error {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], s.count)
	binary.BigEndian.PutUint64(b[8:], s.hash)
	if _, err := sink.Write(b[:]); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (hashSnap) Release() {}

// node is one cluster member: its Store, FSM, transport and raft.
type node struct {
	id    raft.ServerID
	addr  raft.ServerAddress
	dir   string
	store *Store
	fsm   *hashFSM
	trans *raft.InmemTransport
	raft  *raft.Raft
}

type cluster struct {
	t     *testing.T
	nodes []*node
}

func clusterConfig(id raft.ServerID) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = id
	c.LogOutput = io.Discard
	// Short enough for a quick failover, long enough that a loaded
	// machine's fsync stalls do not depose leaders all the time.
	c.HeartbeatTimeout = 300 * time.Millisecond
	c.ElectionTimeout = 300 * time.Millisecond
	c.LeaderLeaseTimeout = 300 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	// Snapshots only when the test asks, and little kept after one, so a
	// follower that was down needs the snapshot installed.
	c.SnapshotThreshold = 1 << 40
	c.SnapshotInterval = time.Hour
	c.TrailingLogs = 256
	return c
}

// start opens n's Store from its directory and starts raft on it, with a
// fresh transport connected to every other running node.
func (c *cluster) start(n *node, bootstrap bool) {
	t := c.t
	st, err := Open(n.dir, Options{Logger: quiet, SegmentBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := raft.NewFileSnapshotStore(n.dir+"-snap", 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport(n.addr)
	n.store, n.trans, n.fsm = st, trans, &hashFSM{}
	for _, o := range c.nodes {
		if o != n && o.raft != nil {
			o.trans.Disconnect(n.addr)
			o.trans.Connect(n.addr, trans)
			trans.Connect(o.addr, o.trans)
		}
	}
	conf := clusterConfig(n.id)
	if bootstrap {
		var servers []raft.Server
		for _, o := range c.nodes {
			servers = append(servers, raft.Server{ID: o.id, Address: o.addr})
		}
		if err := raft.BootstrapCluster(conf, st, st, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
	}
	n.raft, err = raft.NewRaft(conf, n.fsm, st, st, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) stop(n *node) {
	if err := n.raft.Shutdown().Error(); err != nil {
		c.t.Fatal(err)
	}
	n.raft = nil
	for _, o := range c.nodes {
		if o != n && o.raft != nil {
			o.trans.Disconnect(n.addr)
		}
	}
	if err := n.store.Close(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) leader() *node {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range c.nodes {
			if n.raft != nil && n.raft.State() == raft.Leader {
				return n
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader within 30s")
	return nil
}

// apply applies count commands through the leader, keeping a window of
// them in flight so raft batches them, as a busy client would. Commands
// that fail because leadership moved (a loaded machine can miss a lease)
// are applied again: the FSMs are compared with each other, and a
// duplicate only adds to the count.
func (c *cluster) apply(from, count int) {
	const window = 512
	type inflight struct {
		cmd []byte
		f   raft.ApplyFuture
	}
	var pending []inflight
	flush := func() {
		for len(pending) > 0 {
			var retry []inflight
			for _, p := range pending {
				if err := p.f.Error(); err != nil {
					if err != raft.ErrLeadershipLost && err != raft.ErrNotLeader && err != raft.ErrEnqueueTimeout { //nolint:errorlint // raft's sentinels
						c.t.Fatalf("apply: %v", err)
					}
					retry = append(retry, p)
				}
			}
			pending = pending[:0]
			for _, p := range retry {
				pending = append(pending, inflight{p.cmd, c.leader().raft.Apply(p.cmd, 10*time.Second)})
			}
		}
	}
	for i := from; i < from+count; i++ {
		cmd := []byte("command-" + strconv.Itoa(i))
		pending = append(pending, inflight{cmd, c.leader().raft.Apply(cmd, 10*time.Second)})
		if len(pending) == window {
			flush()
		}
	}
	flush()
}

// converge waits until every running node has applied the leader's last
// index and holds the same FSM state.
func (c *cluster) converge() (uint64, uint64) {
	l := c.leader()
	if err := l.raft.Barrier(30 * time.Second).Error(); err != nil {
		c.t.Fatal(err)
	}
	want := l.raft.AppliedIndex()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok := true
		for _, n := range c.nodes {
			if n.raft != nil && n.raft.AppliedIndex() < want {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("followers did not reach applied index %d", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// raft sets a node's applied index when it hands a batch to the FSM
	// goroutine, not when the FSM has applied it (raft.go, processLogs),
	// so a follower's FSM may still be one batch behind: give it until the
	// deadline to hold the leader's state. The Barrier made the leader's
	// own FSM current.
	count, hash := l.fsm.state()
	for _, n := range c.nodes {
		if n.raft == nil {
			continue
		}
		for {
			gc, gh := n.fsm.state()
			if gc == count && gh == hash {
				break
			}
			if time.Now().After(deadline) {
				c.t.Fatalf("%s: FSM %d commands, hash %x; leader %s: %d, %x", n.id, gc, gh, l.id, count, hash)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return count, hash
}

// clusterCommands is how many commands TestCluster applies: the issue's
// 100,000 (90 s on a 2-core machine at a load average of 20), 10,000
// with -short, or SEGLOG_RAFT_COMMANDS.
func clusterCommands(t *testing.T) int {
	if v := os.Getenv("SEGLOG_RAFT_COMMANDS"); v != "" {
		n, err := strconv.Atoi(v)
		// A quarter of them must outnumber TrailingLogs, so the leader
		// compacts past the stopped follower.
		if err != nil || n < 2000 {
			t.Fatalf("SEGLOG_RAFT_COMMANDS=%q: want a count of at least 2000", v)
		}
		return n
	}
	if testing.Short() {
		return 10_000
	}
	return 100_000
}

// TestCluster runs three raft nodes on Stores: many commands, a follower
// stopped and restarted from its directory after the leader compacted
// past it (so it gets the snapshot installed), then the leader stopped and
// a new one elected. Every node's FSM ends equal, and every partition is
// clean for fsck and decodes as Kafka batches holding the entries the
// Store returns.
func TestCluster(t *testing.T) {
	total := clusterCommands(t)
	root := t.TempDir()
	c := &cluster{t: t}
	for i := range 3 {
		id := raft.ServerID(fmt.Sprintf("n%d", i))
		c.nodes = append(c.nodes, &node{id: id, addr: raft.ServerAddress(id), dir: filepath.Join(root, string(id))})
	}
	for _, n := range c.nodes {
		c.start(n, true)
	}
	defer func() {
		for _, n := range c.nodes {
			if n.raft != nil {
				c.stop(n)
			}
		}
	}()
	applied := 0
	step := func(n int) { c.apply(applied, n); applied += n }

	step(total / 2)
	c.converge()

	// A follower goes down; the leader moves on and compacts past it.
	l := c.leader()
	var f *node
	for _, n := range c.nodes {
		if n != l {
			f = n
			break
		}
	}
	c.stop(f)
	step(total / 4)
	// Both running nodes snapshot and compact: leadership may move between
	// them (a loaded machine misses leases), and a leader holding the
	// whole log would catch the follower up without an install.
	c.converge()
	fLast := lastIndexOnDisk(t, f.dir)
	for _, n := range c.nodes {
		if n.raft == nil {
			continue
		}
		if err := n.raft.Snapshot().Error(); err != nil {
			t.Fatalf("%s: snapshot: %v", n.id, err)
		}
		if first, _ := n.store.FirstIndex(); first <= fLast {
			t.Fatalf("%s's log starts at %d, not past the stopped follower's last index %d", n.id, first, fLast)
		}
	}
	step(100)
	c.start(f, false)
	c.converge()
	f.fsm.mu.Lock()
	restores := f.fsm.restores
	f.fsm.mu.Unlock()
	if restores == 0 {
		t.Fatalf("%s caught up without a snapshot install", f.id)
	}

	// The leader goes down; another takes over.
	old := c.leader()
	c.stop(old)
	if nl := c.leader(); nl == old {
		t.Fatal("the stopped leader is still leader")
	}
	step(total - applied)
	c.start(old, false)
	count, _ := c.converge()
	if count < uint64(total) {
		t.Fatalf("FSM holds %d commands, applied %d", count, total)
	}

	for _, n := range c.nodes {
		c.stop(n)
	}
	for _, n := range c.nodes {
		checkFsck(t, vfs.Default, n.dir)
		checkKafkaDecode(t, n.dir)
	}
}

// lastIndexOnDisk opens a stopped node's Store to read its last index.
func lastIndexOnDisk(t *testing.T, dir string) uint64 {
	s, err := Open(dir, Options{Logger: quiet, SegmentBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	last, _ := s.LastIndex()
	return last
}
