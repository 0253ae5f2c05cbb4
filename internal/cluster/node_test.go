package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

func TestStartElectsAndRegisters(t *testing.T) {
	c := newCluster(t, 3)
	ctrl := c.controller()
	ctx := ctxTimeout(t)
	var ids []string
	for _, tn := range c.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d to list all three brokers", tn.id), func() bool {
			return slices.Equal(brokerIDs(tn), []int32{1, 2, 3})
		})
		bs, controller := tn.node.Brokers()
		// An election under load may have moved it since; it is still
		// one of the three.
		if controller != ctrl.id && c.nodes[controller] == nil {
			t.Errorf("node %d names controller %d, want %d", tn.id, controller, ctrl.id)
		}
		for _, b := range bs {
			if want := c.nodes[b.NodeID].kafka; fmt.Sprintf("%s:%d", b.Host, b.Port) != want {
				t.Errorf("node %d lists broker %d at %s:%d, want %s", tn.id, b.NodeID, b.Host, b.Port, want)
			}
		}
		id, err := tn.node.ClusterID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		p, err := readProps(c.fs, tn.dir)
		if err != nil || !p.exists || p.nodeID != tn.id || p.clusterID != id {
			t.Errorf("node %d's meta.properties: %+v, %v; want node %d cluster %s", tn.id, p, err, tn.id, id)
		}
	}
	if len(ids[0]) != 22 || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("cluster ids %q, want one 22-character id", ids)
	}
}

func TestCreateAndDeleteTopicThroughFollower(t *testing.T) {
	c := newCluster(t, 3)
	f := c.follower(c.controller())
	ctx := ctxTimeout(t)
	if err := f.node.CreateTopic(ctx, "orders", 4, -1, map[string]string{"retention.ms": "60000"}); err != nil {
		t.Fatal(err)
	}
	// CreateTopic returns once the asking node's store holds it.
	if n, err := f.st.Partitions("orders"); err != nil || n != 4 {
		t.Fatalf("follower's store: %d partitions, %v", n, err)
	}
	for _, tn := range c.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d's store to hold orders", tn.id), func() bool {
			n, err := tn.st.Partitions("orders")
			return err == nil && n == 4
		})
		cfg, err := tn.st.TopicConfigOf("orders")
		if err != nil || cfg.Get("retention.ms") != "60000" {
			t.Errorf("node %d: retention.ms %q, %v", tn.id, cfg.Get("retention.ms"), err)
		}
		for p := range 4 {
			if st, err := c.fs.Stat(filepath.Join(tn.dir, layout.PartitionDirName("orders", int32(p)))); err != nil || !st.IsDir() {
				t.Errorf("node %d: no directory for partition %d: %v", tn.id, p, err)
			}
		}
		testutil.WaitFor(t, fmt.Sprintf("node %d's manager to get the assignments", tn.id), func() bool {
			_, ok := tn.parts.find("orders", 3)
			return ok
		})
		infos, err := tn.node.Partitions("orders")
		if err != nil || len(infos) != 4 {
			t.Fatalf("node %d: Partitions: %v, %v", tn.id, infos, err)
		}
		for _, in := range infos {
			// The default factor over three brokers is 3; the fake
			// manager names the first replica leader.
			if len(in.Replicas) != 3 || in.Leader != in.Replicas[0] || len(in.Offline) != 0 {
				t.Errorf("node %d: partition %+v", tn.id, in)
			}
			a, _ := tn.parts.find("orders", in.Partition)
			st := tn.node.meta.State()
			topic, _ := st.Topic("orders")
			if a.Group != GroupID(topic.ID, in.Partition) || a.Group == 0 {
				t.Errorf("node %d: partition %d group %d", tn.id, in.Partition, a.Group)
			}
		}
		if !slices.Contains(tn.node.Topics(), "orders") {
			t.Errorf("node %d: Topics %v", tn.id, tn.node.Topics())
		}
	}

	// The controller's refusals reach the follower as the same errors.
	if err := f.node.CreateTopic(ctx, "orders", 1, 1, nil); !errors.Is(err, store.ErrTopicExists) {
		t.Errorf("existing topic: %v, want ErrTopicExists", err)
	}
	if err := f.node.CreateTopic(ctx, "wide", 1, 4, nil); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Errorf("factor 4 over 3 brokers: %v, want ErrInvalidReplicationFactor", err)
	}
	if err := f.node.CreateTopic(ctx, "bad", 1, 1, map[string]string{"retention.ms": "soon"}); !errors.Is(err, store.ErrInvalidConfig) {
		t.Errorf("bad config: %v, want ErrInvalidConfig", err)
	}
	if err := f.node.DeleteTopic(ctx, "nope"); !errors.Is(err, store.ErrUnknownTopic) {
		t.Errorf("unknown topic: %v, want ErrUnknownTopic", err)
	}

	if err := f.node.DeleteTopic(ctx, "orders"); err != nil {
		t.Fatal(err)
	}
	for _, tn := range c.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d's store to drop orders", tn.id), func() bool {
			_, err := tn.st.Partitions("orders")
			return errors.Is(err, store.ErrUnknownTopic)
		})
		testutil.WaitFor(t, fmt.Sprintf("node %d's manager to drop orders", tn.id), func() bool {
			_, ok := tn.parts.find("orders", 0)
			return !ok
		})
		if _, err := tn.node.Partitions("orders"); !errors.Is(err, store.ErrUnknownTopic) {
			t.Errorf("node %d: Partitions of a deleted topic: %v", tn.id, err)
		}
	}
}

func TestProducerIDsUnique(t *testing.T) {
	c := newCluster(t, 3)
	c.controller()
	ctx := ctxTimeout(t)
	var mu sync.Mutex
	seen := map[int64]int32{}
	var wg sync.WaitGroup
	for _, tn := range c.running() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// More than a block, so every node asks twice.
			for range meta.ProducerIDBlockSize + 10 {
				id, err := tn.node.AllocateProducerID(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if other, dup := seen[id]; dup {
					t.Errorf("producer id %d handed out by nodes %d and %d", id, other, tn.id)
				}
				seen[id] = tn.id
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 3*(meta.ProducerIDBlockSize+10) {
		t.Errorf("%d distinct ids", len(seen))
	}
}

func TestControllerFailover(t *testing.T) {
	c := newCluster(t, 3)
	old := c.controller()
	for _, tn := range c.running() {
		testutil.WaitFor(t, "all three brokers live", func() bool { return len(brokerIDs(tn)) == 3 })
	}
	c.stop(old.id)
	ctrl := c.controller()
	if ctrl.id == old.id {
		t.Fatalf("controller %d after it was closed", ctrl.id)
	}
	f := c.follower(ctrl)
	ctx := ctxTimeout(t)
	if err := f.node.CreateTopic(ctx, "after", 2, 2, nil); err != nil {
		t.Fatal(err)
	}
	for _, tn := range c.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d's store to hold after", tn.id), func() bool {
			_, err := tn.st.Partitions("after")
			return err == nil
		})
		// The closed node stops heartbeating: it leaves the live set,
		// and its replicas are offline.
		testutil.WaitFor(t, fmt.Sprintf("node %d to drop node %d from the live brokers", tn.id, old.id), func() bool {
			return !slices.Contains(brokerIDs(tn), old.id) && len(brokerIDs(tn)) == 2
		})
	}
	// With two brokers live, a factor of 3 is refused.
	if err := f.node.CreateTopic(ctx, "three", 1, 3, nil); !errors.Is(err, ErrInvalidReplicationFactor) {
		t.Errorf("factor 3 with 2 live brokers: %v", err)
	}
	if _, err := f.node.AllocateProducerID(ctx); err != nil {
		t.Error(err)
	}
}

func TestRestartRejoins(t *testing.T) {
	c := newCluster(t, 3)
	ctrl := c.controller()
	ctx := ctxTimeout(t)
	cluster, err := ctrl.node.ClusterID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctrl.node.CreateTopic(ctx, "kept", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.node.CreateTopic(ctx, "again", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	r := c.follower(ctrl)
	testutil.WaitFor(t, "the follower to hold both topics", func() bool {
		_, e1 := r.st.Partitions("kept")
		_, e2 := r.st.Partitions("again")
		return e1 == nil && e2 == nil
	})
	before, _ := ctrl.node.meta.State().Broker(r.id)
	againID := topicID(t, ctrl, "again")
	// Data in kept (as replication would have written it) must survive
	// the restart: the restarted node's metadata starts empty and is
	// replayed, and a topic not replayed yet is not a deleted one.
	w, err := r.st.Writer("kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(record.Record{Value: []byte("stay")}); err != nil {
		t.Fatal(err)
	}
	c.stop(r.id)

	// While it is down, "again" is deleted and created anew: the
	// restarted node must replace its copy, not keep the old one.
	if err := ctrl.node.DeleteTopic(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.node.CreateTopic(ctx, "again", 2, 2, nil); err != nil {
		t.Fatal(err)
	}
	if topicID(t, ctrl, "again") == againID {
		t.Fatal("the new topic has the old id")
	}

	// Another node id on that directory is refused.
	err = c.startWith(&tnode{id: 7, dir: r.dir, addr: r.addr, kafka: r.kafka}, r.id%3+1, nil)
	if !errors.Is(err, ErrNodeID) || !strings.Contains(err.Error(), "meta.properties") {
		t.Errorf("starting %s as another node: %v, want ErrNodeID naming meta.properties", r.dir, err)
	}

	c.restart(r.id)
	got, err := r.node.ClusterID(ctx)
	if err != nil || got != cluster {
		t.Errorf("restarted node's cluster id %q, %v; want %q", got, err, cluster)
	}
	testutil.WaitFor(t, "the restarted node to register again", func() bool {
		b, ok := ctrl.node.meta.State().Broker(r.id)
		return ok && b.Epoch > before.Epoch
	})
	testutil.WaitFor(t, "the restarted node to hold the new again", func() bool {
		n, err := r.st.Partitions("again")
		return err == nil && n == 2
	})
	if l, err := r.st.Log("kept", 0); err != nil || l.EndOffset() != 1 {
		t.Errorf("kept after the restart: %v; want its record kept", err)
		if err == nil {
			t.Errorf("kept-0 ends at %d, want 1", l.EndOffset())
		}
	}
	testutil.WaitFor(t, "every node to list the restarted broker", func() bool {
		for _, tn := range c.running() {
			if len(brokerIDs(tn)) != 3 {
				return false
			}
		}
		return true
	})
}

func topicID(t *testing.T, tn *tnode, name string) [16]byte {
	t.Helper()
	topic, ok := tn.node.meta.State().Topic(name)
	if !ok {
		t.Fatalf("no topic %s", name)
	}
	return topic.ID
}

// A node that cannot reach a controller answers ErrNotController once the
// context ends, and its id stays unknown.
func TestNoControllerAnswersNotController(t *testing.T) {
	c := newCluster(t, 3)
	c.controller()
	n := c.nodes[1].node
	testutil.WaitFor(t, "node 1 to apply every registration", func() bool {
		return len(n.meta.State().Brokers()) == 3
	})
	c.stop(2)
	c.stop(3)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := n.CreateTopic(ctx, "t", 1, 1, nil)
	if !errors.Is(err, server.ErrNotController) {
		t.Errorf("CreateTopic without a quorum: %v, want ErrNotController", err)
	}
	// With no controller to ask, the node cannot tell who is live: it
	// lists every registered broker.
	testutil.WaitFor(t, "node 1 to know no controller and list every registered broker", func() bool {
		_, ctrl := n.Brokers()
		return ctrl == -1 && slices.Equal(brokerIDs(c.nodes[1]), []int32{1, 2, 3})
	})
}

// A store topic the node did not create for the cluster is never
// deleted, even when the metadata has no such topic.
func TestForeignStoreTopicKept(t *testing.T) {
	fs := vfs.NewMem()
	st, err := store.Open("/d", store.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateTopic("mine", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	c := &tcluster{t: t, fs: fs, voters: map[int32]string{}, nodes: map[int32]*tnode{}}
	tn := &tnode{id: 1, dir: "/d", addr: "127.0.0.1:0", kafka: "k:1"}
	c.nodes[1] = tn
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.voters[1] = ln.Addr().String()
	tn.addr = ln.Addr().String()
	t.Cleanup(func() { c.stop(1) })
	if err := c.startWith(tn, 1, ln); err != nil {
		t.Fatal(err)
	}
	c.controller()
	ctx := ctxTimeout(t)
	if _, err := tn.node.ClusterID(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tn.node.CreateTopic(ctx, "other", 1, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.st.Partitions("mine"); err != nil {
		t.Errorf("the store's own topic: %v", err)
	}
	if slices.Contains(tn.node.Topics(), "mine") {
		t.Error("a store topic the cluster never created is listed")
	}
	// The cluster's topic of that name is not created over it.
	if err := tn.node.CreateTopic(ctx, "mine", 3, 1, nil); err == nil || !strings.Contains(err.Error(), "store") {
		t.Errorf("creating a cluster topic over the store's own: %v", err)
	}
	if n, err := tn.st.Partitions("mine"); err != nil || n != 1 {
		t.Errorf("the store's own topic after the clash: %d partitions, %v", n, err)
	}
}

// A topic a node's store failed to create is created once the fault is
// gone, without another metadata change.
func TestSyncRetriesFailures(t *testing.T) {
	c := newCluster(t, 3)
	ctrl := c.controller()
	r := c.follower(ctrl)
	var armed atomic.Bool
	armed.Store(true)
	c.stop(r.id)
	r.fs = vfs.Inject(c.fs, vfs.InjectorFunc(func(op vfs.Op) error {
		if armed.Load() && op.Kind == vfs.OpMkdirAll && strings.Contains(op.Path, "faulty-") {
			return syscall.EIO
		}
		return nil
	}))
	c.restart(r.id)
	c.controller()
	ctx := ctxTimeout(t)
	if err := ctrl.node.CreateTopic(ctx, "faulty", 1, 3, nil); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the faulty node to apply the topic", func() bool {
		return slices.Contains(r.node.Topics(), "faulty")
	})
	if _, err := r.st.Partitions("faulty"); err == nil {
		t.Fatal("the store created the topic despite the fault")
	}
	armed.Store(false)
	testutil.WaitFor(t, "the node to create the topic once the fault is gone", func() bool {
		_, err := r.st.Partitions("faulty")
		return err == nil
	})
	testutil.WaitFor(t, "the manager to get its assignment", func() bool {
		_, ok := r.parts.find("faulty", 0)
		return ok
	})
}

// Config changes and added partitions in the metadata reach every
// node's store, and the manager gets the new partitions.
func TestAlterAndGrowTopic(t *testing.T) {
	c := newCluster(t, 3)
	ctrl := c.controller()
	ctx := ctxTimeout(t)
	if err := ctrl.node.CreateTopic(ctx, "grow", 1, 3, map[string]string{"retention.ms": "60000"}); err != nil {
		t.Fatal(err)
	}
	// What the node builds from the metadata is what the store keeps,
	// so an unchanged topic is not written again at every change.
	topic, _ := ctrl.node.meta.State().Topic("grow")
	want, err := topicConfig(topic)
	if err != nil {
		t.Fatal(err)
	}
	if have, err := ctrl.st.TopicConfigOf("grow"); err != nil || have != want {
		t.Fatalf("store config %+v, %v; built %+v", have, err, want)
	}
	// Through a follower: forwarded to the controller, which plans and
	// proposes; the call returns once the follower's store has it.
	f := c.follower(ctrl)
	if err := f.node.AlterTopicConfig(ctx, "grow", map[string]string{"retention.ms": "1234"}); err != nil {
		t.Fatal(err)
	}
	if err := f.node.CreatePartitions(ctx, "grow", 3); err != nil {
		t.Fatal(err)
	}
	if n, err := f.st.Partitions("grow"); err != nil || n != 3 {
		t.Fatalf("the follower's store has %d partitions (%v) when CreatePartitions returned, want 3", n, err)
	}
	if err := f.node.CreatePartitions(ctx, "grow", 2); !errors.Is(err, store.ErrInvalidPartitions) {
		t.Errorf("shrinking to 2: %v, want store.ErrInvalidPartitions", err)
	}
	if err := f.node.AlterTopicConfig(ctx, "grow", map[string]string{"no.such.config": "1"}); !errors.Is(err, store.ErrInvalidConfig) {
		t.Errorf("an unknown config: %v, want store.ErrInvalidConfig", err)
	}
	for _, tn := range c.running() {
		testutil.WaitFor(t, fmt.Sprintf("node %d's store to follow the changes", tn.id), func() bool {
			cfg, err := tn.st.TopicConfigOf("grow")
			n, perr := tn.st.Partitions("grow")
			return err == nil && perr == nil && cfg.Get("retention.ms") == "1234" && n == 3
		})
		testutil.WaitFor(t, fmt.Sprintf("node %d's manager to get partition 2", tn.id), func() bool {
			_, ok := tn.parts.find("grow", 2)
			return ok
		})
	}
}
