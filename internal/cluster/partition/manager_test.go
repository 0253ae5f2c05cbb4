package partition

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/internal/cluster/raftmux"
	"github.com/seglog/seglog/internal/cluster/replica"
	"github.com/seglog/seglog/internal/seglogtest"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
)

const (
	topic   = "t"
	dataDir = "/data"
	// testTick is short so tests elect quickly; nothing asserts a duration.
	testTick = 10 * time.Millisecond
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// assignments are the test's partitions: two, each on all three nodes.
var assignments = []Assignment{
	{Topic: topic, Partition: 0, Group: 1, Replicas: []int32{1, 2, 3}},
	{Topic: topic, Partition: 1, Group: 2, Replicas: []int32{1, 2, 3}},
}

// node is one member of the test cluster; fs survives its restarts.
type node struct {
	id   int32
	addr string
	fs   *vfs.MemFS
	mux  *raftmux.Mux
	raft *multiraft.Node
	st   *store.Store
	m    *Manager
	// notified counts the Manager's Notify calls.
	notified atomic.Int64
}

type cluster struct {
	t     *testing.T
	nodes map[int32]*node
	peers map[uint64]string
}

func topicConfig() store.TopicConfig {
	c := store.DefaultTopicConfig()
	c.SegmentBytes = 4 << 10
	c.MaxMessageBytes = 2 << 10
	c.SegmentIndexBytes = 4096
	return c
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, nodes: map[int32]*node{}, peers: map[uint64]string{}}
	for id := int32(1); id <= 3; id++ {
		mux, err := raftmux.Listen("127.0.0.1:0", raftmux.Config{})
		if err != nil {
			t.Fatal(err)
		}
		c.nodes[id] = &node{id: id, addr: mux.Addr().String(), fs: vfs.NewMem(), mux: mux}
		c.peers[uint64(id)] = mux.Addr().String()
	}
	for _, n := range c.nodes {
		c.start(n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.stop(n)
		}
	})
	return c
}

// start runs n over its kept filesystem: the store (creating the topic the
// first time, as the node does before Sync), the driver and the Manager.
func (c *cluster) start(n *node) {
	t := c.t
	t.Helper()
	if n.mux == nil {
		mux, err := raftmux.Listen(n.addr, raftmux.Config{})
		if err != nil {
			t.Fatal(err)
		}
		n.mux = mux
	}
	st, err := store.Open(dataDir, store.Options{FS: n.fs})
	if err != nil {
		t.Fatal(err)
	}
	n.st = st
	if !slices.Contains(st.Topics(), topic) {
		if err := st.CreateTopic(topic, len(assignments), topicConfig()); err != nil {
			t.Fatal(err)
		}
	}
	n.raft, err = multiraft.New(multiraft.Config{ID: uint64(n.id), Mux: n.mux, Peers: c.peers, Tick: testTick})
	if err != nil {
		t.Fatal(err)
	}
	n.m, err = New(Config{NodeID: n.id, Raft: n.raft, Store: st, Logger: quiet, Notify: func() { n.notified.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.m.Sync(assignments); err != nil {
		t.Fatal(err)
	}
}

// stop shuts n down in the node's order: the Manager, the driver, the
// raft port, the store.
func (c *cluster) stop(n *node) {
	if n.m == nil {
		return
	}
	for _, err := range []error{n.m.Close(), n.raft.Close(), n.mux.Close(), n.st.Close()} {
		if err != nil {
			c.t.Error(err)
		}
	}
	n.m, n.raft, n.mux, n.st = nil, nil, nil, nil
}

// leader is the node that leads partition p as every live node sees it,
// nil until they agree.
func (c *cluster) leader(p int32) *node {
	var lead int32
	for _, n := range c.nodes {
		if n.m == nil {
			continue
		}
		l, _, _, ok := n.m.Leader(topic, p)
		if !ok || l < 0 || (lead != 0 && l != lead) {
			return nil
		}
		lead = l
	}
	if lead == 0 || c.nodes[lead].m == nil {
		return nil
	}
	if st, err := c.nodes[lead].m.State(topic, p); err != nil || !st.Leader {
		return nil
	}
	return c.nodes[lead]
}

func (c *cluster) waitLeader(p int32) *node {
	c.t.Helper()
	var l *node
	testutil.WaitFor(c.t, fmt.Sprintf("partition %d has a leader every live node agrees on", p), func() bool {
		l = c.leader(p)
		return l != nil
	})
	return l
}

// batch is a producer's batch of n records naming i.
func batch(t *testing.T, i, n int) []byte {
	t.Helper()
	bld := record.NewBuilder(record.None)
	for j := range n {
		if err := bld.Add(record.Record{Offset: int64(j), Timestamp: 1_700_000_000_000, Value: fmt.Appendf(nil, "batch %d record %d", i, j)}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(b)
}

// view is n's partition p as the server reads it.
func (n *node) view(t *testing.T, p int32) seglog.View {
	t.Helper()
	v, err := n.st.Log(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// batches reads every batch of n's partition p, whole.
func (n *node) batches(t *testing.T, p int32) [][]byte {
	t.Helper()
	return seglogtest.Batches(t, n.view(t, p))
}

// logFiles reads n's segment files of partition p.
func (n *node) logFiles(t *testing.T, p int32) map[string][]byte {
	t.Helper()
	dir := filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p))
	names, err := n.fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			data, err := vfs.ReadFileLimit(n.fs, filepath.Join(dir, name), 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = data
		}
	}
	return out
}

// sender returns a function that sends the next n batches to
// partition p (c.produce), numbered from 0 on across its calls.
func (c *cluster) sender(p int32) func(n int) {
	i := 0
	return func(n int) {
		for range n {
			c.produce(p, i)
			i++
		}
	}
}

// produce sends batch i to p's leader with acks -1, going again to
// whichever node leads on "not leader", as a Kafka client does, and checks
// the high watermark never passes what a majority of the replicas hold.
func (c *cluster) produce(p int32, i int) int64 {
	c.t.Helper()
	var base int64
	testutil.WaitFor(c.t, fmt.Sprintf("batch %d is committed to partition %d", i, p), func() bool {
		l := c.leader(p)
		if l == nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		off, err := l.m.Produce(ctx, topic, p, batch(c.t, i, 1+i%3), -1)
		if errors.Is(err, server.ErrNotLeader) || errors.Is(err, context.DeadlineExceeded) {
			return false
		}
		if err != nil {
			c.t.Fatal(err)
		}
		base = off
		c.checkMajority(l, p)
		return true
	})
	return base
}

// checkMajority: the leader's high watermark is at most the end of a
// majority of the replicas' logs (read after it: a log's committed part
// never shrinks).
func (c *cluster) checkMajority(l *node, p int32) {
	c.t.Helper()
	st, err := l.m.State(topic, p)
	if err != nil {
		c.t.Fatal(err)
	}
	holding := 0
	for _, n := range c.nodes {
		if n.m != nil && n.view(c.t, p).EndOffset() >= st.HighWatermark {
			holding++
		}
	}
	if holding < 2 {
		c.t.Fatalf("partition %d: high watermark %d, held by %d replicas", p, st.HighWatermark, holding)
	}
}

// agree waits until every live replica of p has the leader's high
// watermark and log end, then compares their batches and segment files.
func (c *cluster) agree(p int32) {
	c.t.Helper()
	c.compare(c.caughtUp(p), p)
}

// caughtUp waits until every live replica of p has the leader's high
// watermark and log end, and returns the leader.
func (c *cluster) caughtUp(p int32) *node {
	c.t.Helper()
	l := c.waitLeader(p)
	testutil.WaitFor(c.t, fmt.Sprintf("every replica of partition %d has the leader's log and high watermark", p), func() bool {
		lst, err := l.m.State(topic, p)
		if err != nil {
			return false
		}
		end := l.view(c.t, p).EndOffset()
		if lst.HighWatermark != end {
			return false
		}
		for _, n := range c.nodes {
			if n.m == nil {
				continue
			}
			st, err := n.m.State(topic, p)
			if err != nil || st.HighWatermark != lst.HighWatermark || n.view(c.t, p).EndOffset() != end {
				return false
			}
		}
		return true
	})
	return l
}

// compare compares the batches and segment files of every live replica
// of p with the leader l's.
func (c *cluster) compare(l *node, p int32) {
	c.t.Helper()
	want, wantFiles := l.batches(c.t, p), l.logFiles(c.t, p)
	for _, n := range c.nodes {
		if n.m == nil || n == l {
			continue
		}
		got := n.batches(c.t, p)
		if len(got) != len(want) {
			c.t.Fatalf("partition %d: node %d holds %d batches from %d, the leader %d holds %d from %d", p, n.id, len(got), n.view(c.t, p).StartOffset(), l.id, len(want), l.view(c.t, p).StartOffset())
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				c.t.Fatalf("partition %d: batch %d differs between node %d and the leader %d", p, i, n.id, l.id)
			}
		}
		files := n.logFiles(c.t, p)
		if len(files) != len(wantFiles) {
			c.t.Fatalf("partition %d: node %d has %d segment files, the leader %d", p, n.id, len(files), len(wantFiles))
		}
		for name, data := range wantFiles {
			if !bytes.Equal(files[name], data) {
				c.t.Fatalf("partition %d: %s differs between node %d and the leader %d", p, name, n.id, l.id)
			}
		}
	}
}

// TestReplicatedPartitions: three nodes replicate two partitions: what
// the leader commits every replica holds at the same offsets, byte for
// byte; the leader's failure elects another which takes produces; the
// failed node, restarted over its store, catches up and agrees; a follower
// refuses a produce.
func TestReplicatedPartitions(t *testing.T) {
	c := newCluster(t)
	next := map[int32]int64{}
	i := 0
	produceSome := func(n int) {
		for range n {
			for p := range int32(len(assignments)) {
				base := c.produce(p, i)
				if base < next[p] {
					t.Fatalf("partition %d: batch %d at offset %d, below the end %d of the last", p, i, base, next[p])
				}
				next[p] = base + int64(1+i%3)
				i++
			}
		}
	}
	produceSome(30)
	for p := range int32(len(assignments)) {
		c.agree(p)
	}
	// The high watermarks moved on every replica: each was notified.
	for _, n := range c.nodes {
		if n.notified.Load() == 0 {
			t.Fatalf("node %d was never notified", n.id)
		}
	}

	old := c.waitLeader(0)
	oldState, _ := old.m.State(topic, 0)
	c.stop(old)
	l := c.waitLeader(0)
	if st, _ := l.m.State(topic, 0); st.LeaderEpoch <= oldState.LeaderEpoch {
		t.Fatalf("the new leader's epoch %d is not above the old one's %d", st.LeaderEpoch, oldState.LeaderEpoch)
	}
	produceSome(20)
	c.agree(0)

	c.start(old)
	produceSome(5)
	for p := range int32(len(assignments)) {
		c.agree(p)
	}

	// A follower refuses, with ErrNotLeader.
	l = c.waitLeader(0)
	for _, n := range c.nodes {
		if n == l {
			continue
		}
		if _, err := n.m.Produce(context.Background(), topic, 0, batch(t, 0, 1), -1); !errors.Is(err, server.ErrNotLeader) {
			t.Fatalf("produce on follower %d: %v, want ErrNotLeader", n.id, err)
		}
	}

	// Every replica's partition directory, the followers' too, is a clean
	// Kafka partition directory; the raft files are strays to fsck.
	for _, n := range c.nodes {
		c.stop(n)
		for p := range int32(len(assignments)) {
			dir := filepath.Join(dataDir, fmt.Sprintf("%s-%d", topic, p))
			rep, err := fsck.Check(n.fs, dir, fsck.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Clean() {
				t.Fatalf("node %d %s: fsck: %+v", n.id, dir, rep.Problems)
			}
			for _, f := range []string{layout.RaftIndexFile, layout.RaftStateFile} {
				if !slices.Contains(rep.Stats.Strays, f) {
					t.Fatalf("node %d %s: strays %v, want %s among them", n.id, dir, rep.Stats.Strays, f)
				}
			}
		}
	}
}

// TestProduceAcksOne: with acks 1 the base offset comes once the leader's
// log holds the batch, and it is the offset every replica gives it.
func TestProduceAcksOne(t *testing.T) {
	c := newCluster(t)
	l := c.waitLeader(0)
	var bases []int64
	for i := range 10 {
		off, err := l.m.Produce(context.Background(), topic, 0, batch(t, i, 2), 1)
		if err != nil {
			t.Fatal(err)
		}
		bases = append(bases, off)
	}
	c.agree(0)
	got := l.batches(t, 0)
	var producer []int64
	for _, b := range got {
		if !record.Batch(b).IsControl() {
			producer = append(producer, record.Batch(b).BaseOffset())
		}
	}
	if !slices.Equal(producer, bases) {
		t.Fatalf("acks 1 returned offsets %v, the batches are at %v", bases, producer)
	}
}

// TestAcksOneMatch: the Storage wrapper answers an acks-1 producer when
// an entry of its term with its bytes is appended, and not for the same
// bytes in another term (another leader's entry).
func TestAcksOneMatch(t *testing.T) {
	fs := vfs.NewMem()
	l, err := seglog.Open("/d/t-0", seglog.Options{FS: fs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := replica.Open(l, replica.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	p := &part{st: st, waiting: map[uint32][]*waiter{}}
	s := storage{st, p}
	b := batch(t, 1, 2)
	w := p.wait(b, 3)
	other := p.wait(batch(t, 2, 1), 3)
	ent := func(i, term uint64, data []byte) *pb.Entry {
		return &pb.Entry{Index: new(i), Term: new(term), Data: bytes.Clone(data)}
	}
	if err := s.Append([]*pb.Entry{ent(1, 2, b)}); err != nil {
		t.Fatal(err)
	}
	select {
	case i := <-w.c:
		t.Fatalf("answered with entry %d of another term", i)
	default:
	}
	if err := s.Append([]*pb.Entry{ent(2, 3, nil), ent(3, 3, b)}); err != nil {
		t.Fatal(err)
	}
	select {
	case i := <-w.c:
		if i != 3 {
			t.Fatalf("answered with entry %d, want 3", i)
		}
	default:
		t.Fatal("not answered by its own entry")
	}
	p.unwait(w)
	p.unwait(other)
	if n := p.nwait.Load(); n != 0 || len(p.waiting) != 0 {
		t.Fatalf("%d waiters left (%d keys)", n, len(p.waiting))
	}
}

// TestNoMajority: with both followers down, an acks -1 produce is not
// acknowledged: it ends with its context's deadline (or ErrNotLeader,
// once the leader has noticed it lost its quorum), never
// ErrNotEnoughReplicas, which would tell the client its batch was not
// written (it was proposed, and commits if a majority comes back), and
// the high watermark does not move.
func TestNoMajority(t *testing.T) {
	c := newCluster(t)
	c.produce(0, 0)
	c.agree(0)
	l := c.waitLeader(0)
	before, _ := l.m.State(topic, 0)
	for _, n := range c.nodes {
		if n != l {
			c.stop(n)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := l.m.Produce(ctx, topic, 0, batch(t, 1, 1), -1)
	if errors.Is(err, server.ErrNotEnoughReplicas) || (!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, server.ErrNotLeader)) {
		t.Fatalf("produce without a majority: %v, want the deadline's error or ErrNotLeader", err)
	}
	if st, _ := l.m.State(topic, 0); st.HighWatermark != before.HighWatermark {
		t.Fatalf("high watermark moved from %d to %d with no majority", before.HighWatermark, st.HighWatermark)
	}
}

// TestNoOffsetForRaftEntries: raft's empty entries (a new leader's) take
// no offset: a new partition's first batch is at offset 0 on every
// replica, and leader changes leave no gap; every replica holds the same
// batches, contiguous, none a control batch, and the same segment files.
func TestNoOffsetForRaftEntries(t *testing.T) {
	c := newCluster(t)
	if base := c.produce(0, 0); base != 0 {
		t.Fatalf("the first batch of a new partition is at offset %d, want 0", base)
	}
	end := int64(1)
	for round := 1; round <= 2; round++ {
		old := c.waitLeader(0)
		c.stop(old)
		for i := range 3 {
			n := round*10 + i
			if base := c.produce(0, n); base != end {
				t.Fatalf("after %d leader changes, batch %d at offset %d, want %d (no gap)", round, n, base, end)
			}
			end += int64(1 + n%3)
		}
		c.start(old)
	}
	l := c.caughtUp(0)
	c.compare(l, 0)
	for _, n := range c.nodes {
		next := int64(0)
		for _, b := range n.batches(t, 0) {
			bt := record.Batch(b)
			if bt.IsControl() || bt.BaseOffset() != next {
				t.Fatalf("node %d: a batch at %d (control %v), want a producer batch at %d", n.id, bt.BaseOffset(), bt.IsControl(), next)
			}
			next = bt.NextOffset()
		}
		if next != end {
			t.Fatalf("node %d: the batches end at %d, want %d", n.id, next, end)
		}
	}
}

// TestSyncStartsInOrder: Sync starts a new topic's groups in the order of
// its assignments (the metadata's, the same on every node), so that a
// partition's replicas start its group at about the same time and its
// preferred replica comes within the others' first-election hold. Started
// in a map's order, a walk's nodes started a 300-partition topic's groups
// up to 3.8 s apart.
func TestSyncStartsInOrder(t *testing.T) {
	mux, err := raftmux.Listen("127.0.0.1:0", raftmux.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	st, err := store.Open(dataDir, store.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const parts = 24
	if err := st.CreateTopic(topic, parts, topicConfig()); err != nil {
		t.Fatal(err)
	}
	rn, err := multiraft.New(multiraft.Config{ID: 1, Mux: mux, Peers: map[uint64]string{1: mux.Addr().String(), 2: "127.0.0.1:1", 3: "127.0.0.1:1"}, Tick: testTick})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	logged := &testutil.LogRecords{}
	m, err := New(Config{NodeID: 1, Raft: rn, Store: st, Logger: slog.New(logged)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var as []Assignment
	for p := range int32(parts) {
		as = append(as, Assignment{Topic: topic, Partition: p, Group: uint64(p) + 1, Replicas: []int32{1 + p%3, 1 + (p+1)%3, 1 + (p+2)%3}})
	}
	if err := m.Sync(as); err != nil {
		t.Fatal(err)
	}
	var started []int
	for _, l := range logged.Take() {
		if _, attrs, ok := strings.Cut(l, "partition: replica started "); ok {
			_, rest, _ := strings.Cut(attrs, "partition=")
			var p int
			if _, err := fmt.Sscanf(rest, "%d", &p); err != nil {
				t.Fatalf("%q: %v", l, err)
			}
			started = append(started, p)
		}
	}
	if len(started) != parts || !slices.IsSorted(started) {
		t.Fatalf("groups started in the order %v, want partitions 0 to %d in order", started, parts-1)
	}
}
