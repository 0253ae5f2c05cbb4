package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// tnode is one node of a test cluster; its Dir on the cluster's MemFS
// survives a restart, as a node's DIR would.
type tnode struct {
	id    int32
	dir   string
	addr  string // raft address, fixed across restarts
	kafka string
	st    *store.Store
	node  *Node
	parts *fakeParts
	// fs, if set, is this node's view of the cluster's MemFS (a fault
	// injector over it).
	fs vfs.FS
}

func (c *tcluster) fsOf(tn *tnode) vfs.FS {
	if tn.fs != nil {
		return tn.fs
	}
	return c.fs
}

type tcluster struct {
	t *testing.T
	// real runs the real partition manager instead of fakeParts.
	real   bool
	fs     *vfs.MemFS
	voters map[int32]string
	nodes  map[int32]*tnode
	// configure, if set, changes a node's Config before each start.
	configure func(tn *tnode, cfg *Config)
}

// newCluster starts n nodes with ids 1..n on loopback.
func newCluster(t *testing.T, n int) *tcluster { return newClusterOf(t, n, false) }

// newClusterOf starts n nodes, with the real partition manager if real.
func newClusterOf(t *testing.T, n int, real bool) *tcluster {
	return newClusterConfigured(t, n, real, nil)
}

// newClusterConfigured is newClusterOf with tcluster.configure set
// before the first start.
func newClusterConfigured(t *testing.T, n int, real bool, configure func(*tnode, *Config)) *tcluster {
	t.Helper()
	c, lns := layCluster(t, n, real, configure)
	c.startTogether(func(id int32) net.Listener { return lns[id] })
	return c
}

// layCluster makes n nodes' raft listeners and their voters list, and
// stops whichever nodes run at the test's end; it starts none.
func layCluster(t *testing.T, n int, real bool, configure func(*tnode, *Config)) (*tcluster, map[int32]net.Listener) {
	t.Helper()
	c := &tcluster{t: t, real: real, fs: vfs.NewMem(), voters: map[int32]string{}, nodes: map[int32]*tnode{}, configure: configure}
	lns := map[int32]net.Listener{}
	for i := int32(1); i <= int32(n); i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		c.voters[i] = ln.Addr().String()
		c.nodes[i] = &tnode{id: i, dir: fmt.Sprintf("/n%d", i), addr: ln.Addr().String(), kafka: fmt.Sprintf("kafka%d.test:%d", i, 9090+i)}
	}
	t.Cleanup(func() {
		for _, tn := range c.nodes {
			if tn.node != nil {
				c.stop(tn.id)
			}
		}
	})
	return c, lns
}

// startTogether starts every node of c at once, node id on ln(id): a
// node over an empty DIR waits in Start for another voter to answer
// (checkBlank), so nodes started one after the other would wait for
// each other.
func (c *tcluster) startTogether(ln func(id int32) net.Listener) {
	c.t.Helper()
	if c.configure != nil {
		// A hook's one-time setup (files it writes into the DIRs, under
		// a sync.Once) runs before any node opens its store: the hook is
		// called once first on a throwaway Config.
		first := slices.Min(slices.Collect(maps.Keys(c.nodes)))
		c.configure(c.nodes[first], &Config{FS: c.fsOf(c.nodes[first])})
	}
	errs := make(map[int32]error, len(c.nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, tn := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.startWith(tn, id, ln(id))
			mu.Lock()
			errs[id] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	for id, err := range errs {
		if err != nil {
			c.t.Fatalf("starting node %d: %v", id, err)
		}
	}
}

// config is a node's Config, with the store opened on its Dir.
func (c *tcluster) config(tn *tnode, id int32, ln net.Listener) Config {
	cfg := Config{
		Dir: tn.dir, FS: c.fsOf(tn), Store: tn.st, NodeID: id, Listener: ln, Voters: c.voters,
		Advertise:     tn.kafka,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
		RaftLogOutput: io.Discard,
		newPartitions: func(*Node) (partitions, error) { return tn.parts, nil },
	}
	if c.real {
		cfg.newPartitions = nil
	}
	if c.configure != nil {
		c.configure(tn, &cfg)
	}
	return cfg
}

// startWith opens tn's store and starts its node as id on ln (nil: a new
// listener on tn's address).
func (c *tcluster) startWith(tn *tnode, id int32, ln net.Listener) error {
	var err error
	if ln == nil {
		if ln, err = net.Listen("tcp", tn.addr); err != nil {
			return err
		}
	}
	if tn.st, err = store.Open(tn.dir, store.Options{FS: c.fsOf(tn), ReplicatedOffsets: true, OffsetsPartitions: 3}); err != nil {
		ln.Close()
		return err
	}
	tn.parts = &fakeParts{}
	tn.node, err = Start(c.config(tn, id, ln))
	if err != nil {
		tn.st.Close()
		tn.st = nil
		return err
	}
	return nil
}

func (c *tcluster) stop(id int32) {
	tn := c.nodes[id]
	if err := tn.node.Close(); err != nil {
		c.t.Errorf("closing node %d: %v", id, err)
	}
	if err := tn.st.Close(); err != nil {
		c.t.Errorf("closing node %d's store: %v", id, err)
	}
	tn.node, tn.st = nil, nil
}

func (c *tcluster) restart(id int32) {
	c.t.Helper()
	if err := c.startWith(c.nodes[id], id, nil); err != nil {
		c.t.Fatal(err)
	}
}

// running returns the running nodes, by id.
func (c *tcluster) running() []*tnode {
	var out []*tnode
	for _, id := range slices.Sorted(maps.Keys(c.nodes)) {
		if tn := c.nodes[id]; tn.node != nil {
			out = append(out, tn)
		}
	}
	return out
}

// controller waits until every running node names the same controller,
// one of them, and is registered, and returns the controller.
func (c *tcluster) controller() *tnode {
	c.t.Helper()
	var ctrl *tnode
	testutil.WaitFor(c.t, "the running nodes to agree on a controller", func() bool {
		ctrl = nil
		id := int32(-1)
		for _, tn := range c.running() {
			_, got := tn.node.Brokers()
			if id == -1 {
				id = got
			}
			if got < 0 || got != id {
				return false
			}
		}
		for _, tn := range c.running() {
			if tn.id == id && tn.node.meta.IsController() {
				ctrl = tn
			}
		}
		return ctrl != nil
	})
	testutil.WaitFor(c.t, "every running node to be registered", func() bool {
		st := ctrl.node.meta.State()
		for _, tn := range c.running() {
			if _, ok := st.Broker(tn.id); !ok {
				return false
			}
		}
		return true
	})
	return ctrl
}

// follower returns a running node that is not ctrl.
func (c *tcluster) follower(ctrl *tnode) *tnode {
	for _, tn := range c.running() {
		if tn != ctrl {
			return tn
		}
	}
	c.t.Fatal("no follower running")
	return nil
}

// brokerIDs lists the ids Brokers returns on tn.
func brokerIDs(tn *tnode) []int32 {
	bs, _ := tn.node.Brokers()
	var out []int32
	for _, b := range bs {
		out = append(out, b.NodeID)
	}
	return out
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// fakeParts stands in for the partition manager: it records the
// assignments it is given and leads every partition whose first replica
// is its node.
type fakeParts struct {
	mu    sync.Mutex
	syncs [][]Assignment
}

func (f *fakeParts) Sync(as []Assignment) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.syncs = append(f.syncs, slices.Clone(as))
	return nil
}

func (f *fakeParts) last() []Assignment {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.syncs) == 0 {
		return nil
	}
	return f.syncs[len(f.syncs)-1]
}

func (f *fakeParts) find(topic string, p int32) (Assignment, bool) {
	for _, a := range f.last() {
		if a.Topic == topic && a.Partition == p {
			return a, true
		}
	}
	return Assignment{}, false
}

func (f *fakeParts) Produce(context.Context, string, int32, []byte, int16) (int64, error) {
	return 0, server.ErrNotLeader
}
func (f *fakeParts) State(string, int32) (server.PartitionState, error) {
	return server.PartitionState{}, server.ErrNotLeader
}
func (f *fakeParts) Leader(topic string, p int32) (int32, int32, []int32, bool) {
	a, ok := f.find(topic, p)
	if !ok {
		return -1, -1, nil, false
	}
	return a.Replicas[0], 1, a.Replicas, true
}
func (f *fakeParts) EndOffsetForEpoch(string, int32, int32) (int32, int64, error) {
	return 0, 0, server.ErrNotLeader
}
func (f *fakeParts) SetObserver(server.LogObserver) {}
func (f *fakeParts) TopicDeleted(string)            {}
func (f *fakeParts) DeleteRecords(context.Context, string, int32, int64) (int64, error) {
	return 0, server.ErrNotLeader
}
func (f *fakeParts) TransferLeader(context.Context, string, int32, int32) (bool, error) {
	return false, server.ErrNotLeader
}
func (f *fakeParts) Close() error { return nil }
