package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/internal/nemesis"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/server"
)

// kafkaNode is a Kafka listener and the server answering on it, for a
// tnode of a cluster started with servers.
type kafkaNode struct {
	ln  net.Listener
	srv *server.Server
	end chan error
}

// serve starts a server for tn over its node (whose cluster id it waits
// for) on a new listener at tn.kafka, which the node advertises.
func (c *tcluster) serve(tn *tnode, kn *kafkaNode) {
	c.t.Helper()
	ln, err := net.Listen("tcp", tn.kafka)
	if err != nil {
		c.t.Fatal(err)
	}
	id, err := tn.node.ClusterID(ctxTimeout(c.t))
	if err != nil {
		c.t.Fatal(err)
	}
	srv, err := server.New(tn.st, server.Options{Cluster: tn.node, NodeID: tn.id, ClusterID: id,
		Advertise: tn.kafka, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		c.t.Fatal(err)
	}
	*kn = kafkaNode{ln: ln, srv: srv, end: make(chan error, 1)}
	go func() { kn.end <- srv.Serve(ln) }()
}

// unserve stops tn's server, then its node and store, as a process
// stopping would.
func (c *tcluster) unserve(tn *tnode, kn *kafkaNode) {
	c.t.Helper()
	if err := kn.srv.Shutdown(ctxTimeout(c.t)); err != nil {
		c.t.Fatal(err)
	}
	if err := <-kn.end; !errors.Is(err, server.ErrServerClosed) {
		c.t.Fatal(err)
	}
	c.stop(tn.id)
}

// newServedCluster starts three nodes with the real partition manager,
// each with a server on a loopback Kafka port, and returns the servers
// and the seed addresses.
func newServedCluster(t *testing.T) (*tcluster, map[int32]*kafkaNode, []string) {
	t.Helper()
	c := newClusterWithKafka(t, 3)
	kns := map[int32]*kafkaNode{}
	var seeds []string
	for _, tn := range c.running() {
		kns[tn.id] = &kafkaNode{}
		c.serve(tn, kns[tn.id])
		seeds = append(seeds, tn.kafka)
	}
	t.Cleanup(func() {
		for id, kn := range kns {
			if c.nodes[id].node != nil {
				c.unserve(c.nodes[id], kn)
			}
		}
	})
	return c, kns, seeds
}

// newClusterWithKafka is newClusterOf(t, n, true) with each node's
// advertised address a free loopback port the test can serve on.
func newClusterWithKafka(t *testing.T, n int) *tcluster {
	t.Helper()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, ln.Addr().String())
		ln.Close()
	}
	return newClusterEdit(t, n, true, func(tn *tnode) { tn.kafka = addrs[tn.id-1] })
}

// TestKgoAcksAllAcrossLeaderFailover: an idempotent kgo producer with
// acks=all writes to a replicated topic while the leader of one of its
// partitions stops mid-stream; every acknowledged record is read back
// exactly once at the offset it was acknowledged at, no record is stored
// twice, and once the stopped node is back, the three replicas of every
// partition hold the same batches up to the high watermark.
func TestKgoAcksAllAcrossLeaderFailover(t *testing.T) {
	c, kns, seeds := newServedCluster(t)
	const topic, parts, total = "orders", 2, 2000
	if err := c.controller().node.CreateTopic(ctxTimeout(t), topic, parts, 3, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	type place struct {
		p   int32
		off int64
	}
	var (
		mu    sync.Mutex
		acked = map[string]place{}
		errs  []error
		wg    sync.WaitGroup
	)
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Value: []byte(fmt.Sprintf("v-%05d", i))}, func(r *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				acked[string(r.Value)] = place{r.Partition, r.Offset}
			})
		}
	}
	produce(0, total/2)
	testutil.WaitFor(t, "a quarter of the records acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= total/4
	})
	// Stop partition 0's leader while records are in flight.
	victim := c.leaderOf(topic, 0)
	c.unserve(victim, kns[victim.id])
	produce(total/2, total)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d records failed, first: %v", len(errs), errs[0])
	}
	if len(acked) != total {
		t.Fatalf("%d records acknowledged, want %d", len(acked), total)
	}

	// Read everything back through the cluster, from the leaders.
	got := map[string]place{}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for len(got) < total {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
		fs := cons.PollFetches(ctx)
		err := ctx.Err()
		cancel()
		if err != nil {
			t.Fatalf("read %d of %d records: %v", len(got), total, err)
		}
		for _, fe := range fs.Errors() {
			t.Logf("fetch error (retried): %v", fe.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if prev, dup := got[v]; dup {
				t.Errorf("%s read twice: at %d/%d and %d/%d", v, prev.p, prev.off, r.Partition, r.Offset)
			}
			got[v] = place{r.Partition, r.Offset}
		})
	}
	for v, want := range acked {
		if got[v] != want {
			t.Errorf("%s acknowledged at %d/%d, read at %v", v, want.p, want.off, got[v])
		}
	}

	// The stopped node comes back and catches up; the replicas agree.
	c.restart(victim.id)
	kns[victim.id] = &kafkaNode{}
	c.serve(victim, kns[victim.id])
	for p := int32(0); p < parts; p++ {
		lead := c.leaderOf(topic, p)
		st, err := lead.node.State(topic, p)
		if err != nil {
			t.Fatal(err)
		}
		var dirs []string
		for _, tn := range c.running() {
			dirs = append(dirs, filepath.Join(tn.dir, fmt.Sprintf("%s-%d", topic, p)))
		}
		testutil.WaitFor(t, fmt.Sprintf("every replica of %s-%d reaches the high watermark %d", topic, p, st.HighWatermark), func() bool {
			for _, tn := range c.running() {
				v, err := tn.st.Log(topic, p)
				if err != nil || v.EndOffset() < st.HighWatermark {
					return false
				}
			}
			return true
		})
		vs, err := nemesis.CompareReplicas(c.fs, dirs, st.HighWatermark)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			t.Errorf("%s-%d: %v", topic, p, v)
		}
	}
}
