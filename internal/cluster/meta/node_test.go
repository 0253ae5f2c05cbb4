package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// tnode is one member of a test cluster: its directory on a MemFS (the
// raft log and the snapshots) survives restarts, as a node's DIR would.
type tnode struct {
	id    int32
	addr  raft.ServerAddress
	dir   string
	trans *raft.InmemTransport
	node  *Node
}

type tcluster struct {
	t      *testing.T
	fs     *vfs.MemFS
	voters map[int32]string
	nodes  []*tnode
	// trailing is raft's TrailingLogs: small to make a restarted node
	// catch up from a snapshot.
	trailing uint64
}

func newCluster(t *testing.T, n int) *tcluster {
	c := &tcluster{t: t, fs: vfs.NewMem(), voters: map[int32]string{}, trailing: 1024}
	for i := 1; i <= n; i++ {
		tn := &tnode{id: int32(i), addr: raft.ServerAddress(fmt.Sprintf("node%d", i)), dir: fmt.Sprintf("/n%d", i)}
		c.voters[tn.id] = string(tn.addr)
		c.nodes = append(c.nodes, tn)
	}
	for _, tn := range c.nodes {
		c.start(tn)
	}
	t.Cleanup(func() {
		for _, tn := range c.nodes {
			if tn.node != nil {
				c.stop(tn)
			}
		}
	})
	return c
}

const debugRaft = false

func testRaftConfig(trailing uint64) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LogOutput = io.Discard
	if testing.Verbose() && debugRaft {
		conf.LogOutput = os.Stderr
	}
	// Short enough for quick elections, long enough that a loaded
	// machine under -race does not depose leaders all the time.
	conf.HeartbeatTimeout = 300 * time.Millisecond
	conf.ElectionTimeout = 300 * time.Millisecond
	conf.LeaderLeaseTimeout = 300 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	// Snapshots only when a test asks.
	conf.SnapshotThreshold = 1 << 40
	conf.SnapshotInterval = time.Hour
	conf.TrailingLogs = trailing
	return conf
}

// start opens tn's Node on its directory with a fresh transport connected
// to every running node.
func (c *tcluster) start(tn *tnode) {
	c.t.Helper()
	_, tn.trans = raft.NewInmemTransport(tn.addr)
	for _, o := range c.nodes {
		if o != tn && o.node != nil {
			o.trans.Disconnect(tn.addr)
			o.trans.Connect(tn.addr, tn.trans)
			tn.trans.Connect(o.addr, o.trans)
		}
	}
	n, err := Open(Config{
		Dir: tn.dir, FS: c.fs, NodeID: tn.id, Voters: c.voters, Transport: tn.trans,
		Raft: testRaftConfig(c.trailing), SegmentBytes: 256 << 10,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		c.t.Fatal(err)
	}
	tn.node = n
}

func (c *tcluster) stop(tn *tnode) {
	c.t.Helper()
	if err := tn.node.Close(); err != nil {
		c.t.Fatal(err)
	}
	tn.node = nil
	for _, o := range c.nodes {
		if o != tn && o.node != nil {
			o.trans.Disconnect(tn.addr)
		}
	}
}

func (c *tcluster) leader() *tnode {
	var l *tnode
	testutil.WaitFor(c.t, "a leader", func() bool {
		for _, tn := range c.nodes {
			if tn.node != nil && tn.node.IsController() {
				l = tn
				return true
			}
		}
		return false
	})
	return l
}

// propose proposes the command built from the controller's state,
// retrying while leadership moves. A command whose outcome was unknown
// (leadership lost after it was sent) is planned again from the new
// controller's state, which has applied it if it was committed; plan
// answers a nil command when the state shows it done.
func (c *tcluster) propose(plan func(s *State) (Command, error)) (Result, error) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l := c.leader()
		s, err := l.node.ControllerState(context.Background())
		if err == nil {
			var cmd Command
			if cmd, err = plan(s); err != nil || cmd == nil {
				return Result{Index: s.Index()}, err
			}
			var res Result
			if res, err = l.node.Propose(context.Background(), cmd); err == nil || !errors.Is(err, ErrNotController) {
				return res, err
			}
		}
		if !errors.Is(err, ErrNotController) || time.Now().After(deadline) {
			return Result{}, err
		}
	}
}

func (c *tcluster) mustPropose(cmd Command) Result {
	c.t.Helper()
	res, err := c.propose(func(*State) (Command, error) { return cmd, nil })
	if err != nil {
		c.t.Fatalf("%T: %v", cmd, err)
	}
	return res
}

// agree waits until every running node has applied the same state, at
// least at index min, and returns it.
func (c *tcluster) agree(min uint64) *State {
	c.t.Helper()
	var s *State
	testutil.WaitFor(c.t, "the nodes to agree", func() bool {
		var want []byte
		for _, tn := range c.nodes {
			if tn.node == nil {
				continue
			}
			st := tn.node.State()
			if st.Index() < min {
				return false
			}
			e := EncodeState(st)
			if want != nil && !bytes.Equal(e, want) {
				return false
			}
			want, s = e, st
		}
		return true
	})
	return s
}

func (c *tcluster) registerAll() uint64 {
	var last uint64
	for _, tn := range c.nodes {
		last = c.mustPropose(&RegisterBroker{ID: tn.id, Host: "127.0.0.1", Port: 9090 + tn.id, RaftAddr: string(tn.addr)}).Index
	}
	return last
}

func (c *tcluster) createTopic(name string, parts, rf int, seed uint64) Result {
	c.t.Helper()
	rnd := rand.New(rand.NewPCG(seed, seed))
	res, err := c.propose(func(s *State) (Command, error) {
		if _, ok := s.Topic(name); ok {
			return nil, nil // an earlier attempt was applied
		}
		return NewCreateTopic(s, name, parts, rf, nil, nil, rnd)
	})
	if err != nil {
		c.t.Fatalf("create %s: %v", name, err)
	}
	return res
}

func TestClusterAgrees(t *testing.T) {
	c := newCluster(t, 3)
	c.registerAll()
	c.createTopic("orders", 6, 3, 1)
	// Every node's watcher hears of the topic created on the controller:
	// waiting on Watch's channel alone (no polling) sees it arrive.
	for _, tn := range c.nodes {
		deadline := time.After(30 * time.Second)
		for {
			s, ch := tn.node.Watch()
			if _, ok := s.Topic("orders"); ok {
				break
			}
			select {
			case <-ch:
			case <-deadline:
				t.Fatalf("node %d: the topic's creation was not notified", tn.id)
			}
		}
	}
	c.createTopic(store.OffsetsTopic, 50, 3, 2)
	c.createTopic("gone", 1, 2, 3)
	if _, err := c.propose(func(s *State) (Command, error) {
		if _, ok := s.Topic("gone"); !ok {
			return nil, nil // an earlier attempt was applied
		}
		return &DeleteTopic{Name: "gone"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	c.mustPropose(&AlterTopicConfig{Name: "orders", Set: map[string]string{"retention.ms": "60000"}})
	res, err := c.propose(func(s *State) (Command, error) {
		if s.Partitions("orders") == 9 {
			return nil, nil
		}
		return NewCreatePartitions(s, "orders", 9, nil, rand.New(rand.NewPCG(4, 4)))
	})
	if err != nil {
		t.Fatal(err)
	}
	b1 := c.mustPropose(&AllocateProducerIDs{Broker: 1}).Block
	b2 := c.mustPropose(&AllocateProducerIDs{Broker: 2}).Block
	if b1.First+b1.Size > b2.First && b2.First+b2.Size > b1.First {
		t.Errorf("producer id blocks overlap: %+v %+v", b1, b2)
	}
	s := c.agree(res.Index)
	if got := s.TopicNames(); len(got) != 2 || s.Partitions("orders") != 9 || s.Partitions(store.OffsetsTopic) != 50 {
		t.Errorf("topics %v, orders has %d partitions", got, s.Partitions("orders"))
	}
	if tp, _ := s.Topic("orders"); tp.Configs["retention.ms"] != "60000" {
		t.Errorf("orders configs %v", tp.Configs)
	}
	if _, r, ok := s.CoordinatorPartition("my-group"); !ok || len(r) != 3 {
		t.Errorf("coordinator replicas %v", r)
	}
	if len(s.Brokers()) != 3 {
		t.Errorf("brokers %+v", s.Brokers())
	}

	// A follower refuses proposals and names the controller.
	l := c.leader()
	for _, tn := range c.nodes {
		if tn == l {
			continue
		}
		if _, err := tn.node.ControllerState(context.Background()); !errors.Is(err, ErrNotController) {
			t.Errorf("follower %d planned: %v", tn.id, err)
		}
		_, err := tn.node.Propose(context.Background(), &DeleteTopic{Name: "nope"})
		var nc *NotControllerError
		if !errors.As(err, &nc) || !errors.Is(err, ErrNotController) {
			t.Fatalf("follower %d: %v, want a NotControllerError", tn.id, err)
		}
		if nc.Leader != l.id && nc.Leader != -1 {
			t.Errorf("follower %d names controller %d, the leader is %d", tn.id, nc.Leader, l.id)
		}
	}
	// A command larger than the log takes in one entry (the test's
	// segments are 256 KiB) is refused before raft sees it: a log store
	// refusing an entry would depose the leader.
	big, err := c.propose(func(s *State) (Command, error) {
		return NewCreateTopic(s, "big", store.MaxPartitions, 3, nil, nil, rand.New(rand.NewPCG(5, 5)))
	})
	if !errors.Is(err, ErrBadEncoding) || big.Index != 0 {
		t.Errorf("a command over the entry size: %v", err)
	}
	// A refused command answers its error from the controller, and changes
	// nothing anywhere.
	if _, err := c.propose(func(*State) (Command, error) { return &DeleteTopic{Name: "nope"}, nil }); !errors.Is(err, store.ErrUnknownTopic) {
		t.Errorf("deleting an unknown topic: %v", err)
	}
	if s2 := c.agree(0); !bytes.Equal(EncodeState(s2), EncodeState(s)) {
		t.Error("a refused command changed the state")
	}
}

func TestClusterFailover(t *testing.T) {
	c := newCluster(t, 3)
	c.registerAll()
	c.createTopic("before", 3, 3, 1)
	old := c.leader()
	c.stop(old)
	// The two left elect a leader that goes on from the same state.
	c.createTopic("after", 3, 2, 2)
	res := c.mustPropose(&AllocateProducerIDs{Broker: 1})
	s := c.agree(res.Index)
	if s.Partitions("before") != 3 || s.Partitions("after") != 3 {
		t.Errorf("after failover: topics %v", s.TopicNames())
	}
	if n := c.leader(); n == old || n.node.Controller() != n.id {
		t.Errorf("leader %d, controller %d", n.id, n.node.Controller())
	}
	// The old leader restarts on its directory and catches up.
	c.start(old)
	c.agree(res.Index)
}

// TestClusterRestartCatchesUp: a node down while commands are applied, and
// the log compacted past them, catches up from a snapshot when it comes
// back on the same directory and snapshot store.
func TestClusterRestartCatchesUp(t *testing.T) {
	c := newCluster(t, 3)
	c.trailing = 2
	c.registerAll()
	var follower *tnode
	l := c.leader()
	for _, tn := range c.nodes {
		if tn != l {
			follower = tn
			break
		}
	}
	c.stop(follower)
	var last Result
	for i := range 20 {
		last = c.createTopic(fmt.Sprintf("t%02d", i), 1+i%3, 2, uint64(i))
	}
	c.agree(last.Index)
	// Restart every running node with TrailingLogs 2, then snapshot, so
	// their logs no longer hold what the follower missed.
	for _, tn := range c.nodes {
		if tn.node != nil {
			c.stop(tn)
			c.start(tn)
		}
	}
	c.agree(last.Index)
	for _, tn := range c.nodes {
		if tn.node != nil {
			if err := tn.node.raft.Snapshot().Error(); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.start(follower)
	s := c.agree(last.Index)
	if len(s.TopicNames()) != 20 {
		t.Errorf("caught up with %d topics", len(s.TopicNames()))
	}
	// raft records an installed snapshot (and its first contact) only
	// after the FSM's Restore returned, which agree can see first: wait
	// for the record rather than read it once.
	testutil.WaitFor(t, "the follower to have caught up by installing a snapshot", func() bool {
		return follower.node.raft.Stats()["last_snapshot_index"] != "0"
	})
	// The whole cluster restarting keeps the state.
	for _, tn := range c.nodes {
		c.stop(tn)
	}
	for _, tn := range c.nodes {
		c.start(tn)
	}
	c.agree(last.Index)
}

// TestStoreIgnoresMetadataDir: a store opened on a node's DIR, as the
// node opens it (any other writer is refused a DIR holding the metadata
// directory), does not take the metadata directory for a topic.
func TestStoreIgnoresMetadataDir(t *testing.T) {
	c := newCluster(t, 1)
	c.registerAll()
	tn := c.nodes[0]
	st, err := store.Open(tn.dir, store.Options{FS: c.fs, ReplicatedOffsets: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := st.Topics(); len(got) != 0 {
		t.Errorf("the store sees topics %v in %s", got, path.Join(tn.dir, DirName))
	}
}

func TestOpenRefuses(t *testing.T) {
	_, trans := raft.NewInmemTransport("x")
	voters := map[int32]string{1: "x"}
	if _, err := Open(Config{Dir: "/d", FS: vfs.NewMem(), NodeID: 2, Voters: voters, Transport: trans}); !errors.Is(err, ErrConfig) {
		t.Errorf("node not a voter: %v", err)
	}
	if _, err := Open(Config{Dir: "/d", FS: vfs.NewMem(), NodeID: 1, Voters: voters}); !errors.Is(err, ErrConfig) {
		t.Errorf("no transport: %v", err)
	}
}

// TestNodeCrash: a node that loses power keeps every command it
// answered, from its snapshot and the log after it.
func TestNodeCrash(t *testing.T) {
	c := newCluster(t, 1)
	c.registerAll()
	c.createTopic("a", 2, 1, 1)
	tn := c.nodes[0]
	if err := tn.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	c.createTopic("b", 3, 1, 2)
	last := c.mustPropose(&AllocateProducerIDs{Broker: 1})
	want := EncodeState(c.agree(last.Index))
	crashed := c.fs.CrashClone()
	c.stop(tn)
	c.fs = crashed
	c.start(tn)
	if got := EncodeState(c.agree(last.Index)); !bytes.Equal(got, want) {
		t.Errorf("after the crash the state is %x, want %x", got, want)
	}
	if st := tn.node.raft.Stats(); st["last_snapshot_index"] == "0" {
		t.Errorf("the snapshot did not survive: %v", st)
	}
}

// TestOpenChecksVoters: a store that holds a raft configuration refuses
// an Open whose voters name other ids (ErrVoters, naming both), when the
// configuration is in the log and when only the snapshot holds it (the
// log compacted past the bootstrap entry); the same ids open.
func TestOpenChecksVoters(t *testing.T) {
	c := newCluster(t, 1)
	c.trailing = 2
	c.registerAll()
	tn := c.nodes[0]
	open := func(voters map[int32]string) error {
		_, trans := raft.NewInmemTransport(tn.addr)
		n, err := Open(Config{Dir: tn.dir, FS: c.fs, NodeID: tn.id, Voters: voters, Transport: trans,
			Raft: testRaftConfig(c.trailing), SegmentBytes: 256 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err == nil {
			err = n.Close()
		}
		return err
	}
	check := func(where string) {
		t.Helper()
		err := open(map[int32]string{1: "node1", 2: "node2"})
		if !errors.Is(err, ErrVoters) || !strings.Contains(err.Error(), "given voters 1,2,") || !strings.Contains(err.Error(), "holds voters 1@node1 ") {
			t.Errorf("%s: opened with voters 1 and 2: %v, want ErrVoters naming both sets", where, err)
		}
		if err := open(map[int32]string{1: "node1"}); err != nil {
			t.Errorf("%s: opened with its voters: %v", where, err)
		}
	}
	c.stop(tn)
	check("the configuration in the log")

	// Started again with TrailingLogs 2: a snapshot compacts the
	// bootstrap entry away.
	c.start(tn)
	var last Result
	for i := range 5 {
		last = c.createTopic(fmt.Sprintf("t%d", i), 1, 1, uint64(i))
	}
	c.agree(last.Index)
	if err := tn.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	var first raft.Log
	if err := tn.node.store.GetLog(1, &first); err == nil {
		t.Fatalf("the log still holds entry 1 (%v) after the snapshot", first.Type)
	}
	c.stop(tn)
	check("the configuration in the snapshot alone")
}
