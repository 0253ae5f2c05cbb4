// Package benchcluster is seglog bench cluster: three local `seglog serve`
// processes started with issue 30's command line, a topic replicated three
// ways, measured with franz-go's kgo against a single `seglog serve` with
// the same workload in the same run (rounds alternating, medians of the
// rounds' ratios); then the leader of a partition is killed with SIGKILL
// while a producer writes with acks=all, and the time from the kill to the
// first acknowledged record on that partition is measured, the killed node
// restarted between kills; at the end every acknowledged record is read
// back and checked (package internal/nemesis's checker). Like bench serve
// it links kgo, so only a seglog built with the benchextras tag has it
// (cmd/seglog/bench_extras.go; docs/benchmarks.md, "Cluster").
package benchcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/internal/nemesis"
)

// Nodes is the size of the cluster bench cluster runs: issue 30's three.
const Nodes = 3

// node is one member of the cluster: its command line, fixed before any
// node starts (every node's --voters names every node's raft address),
// and the process running it, nil while it is down.
type node struct {
	nemesis.Node // the ids and addresses of its command line
	args         []string
	child        *bench.ServeChild
	log          nodeLog // its standard error, over all its runs
}

// cluster is the nodes, started and restarted with sc.
type cluster struct {
	sc    bench.ServeCommand
	nodes []*node
}

// startCluster starts a cluster of Nodes nodes, each in root/node-ID, all
// at once: a node may wait for a quorum of the others before it says it
// listens. If one fails the ones started are killed.
func startCluster(ctx context.Context, sc bench.ServeCommand, root string) (*cluster, error) {
	// The addresses, and each node's command line exactly as issue 30
	// gives it, are the nemesis's: both run the same cluster.
	plan, err := nemesis.PlanCluster(Nodes)
	if err != nil {
		return nil, err
	}
	nodes := make([]*node, len(plan))
	for i, pn := range plan {
		dir := filepath.Join(root, fmt.Sprintf("node-%d", pn.ID))
		nodes[i] = &node{Node: pn, args: append([]string{dir}, nemesis.ServeArgs(plan, i)...)}
	}
	c := &cluster{sc: sc, nodes: nodes}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(ctx, n)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.kill()
		return nil, fmt.Errorf("%w%s", err, c.logs())
	}
	return c, nil
}

// start runs node n, for the first time or after a kill, with the same
// command line.
func (c *cluster) start(ctx context.Context, n *node) error {
	sc := c.sc
	sc.Stderr = &n.log
	fmt.Fprintf(&n.log, "--- bench cluster: seglog serve %s\n", strings.Join(n.args, " "))
	child, err := bench.StartServeArgs(ctx, sc, n.args...)
	if err != nil {
		return fmt.Errorf("node %d: %w", n.ID, err)
	}
	n.child = child
	return nil
}

// brokers returns every node's Kafka address, for clients' seeds.
func (c *cluster) brokers() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Kafka
	}
	return out
}

// node returns the node with id, or nil.
func (c *cluster) node(id int32) *node {
	for _, n := range c.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// cpu is the CPU time of every node running: what the cluster costs the
// machine. A node killed and restarted between two readings makes them
// incomparable, so it is read around phases without kills only.
func (c *cluster) cpu() (time.Duration, error) {
	var sum time.Duration
	for _, n := range c.nodes {
		if n.child == nil {
			continue
		}
		t, err := n.child.CPU()
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// stop stops every node at once (a node's clean stop may wait on its
// peers, so stopping them one by one could leave the last one alone) and
// reports the ones that did not exit cleanly.
func (c *cluster) stop() error {
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		if n.child == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.child.StopChecked(); err != nil {
				errs[i] = fmt.Errorf("node %d: %w", n.ID, err)
			}
			n.child = nil
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// kill SIGKILLs every node still running: the cleanup after a failure.
func (c *cluster) kill() {
	for _, n := range c.nodes {
		if n.child != nil {
			n.child.Kill()
			n.child = nil
		}
	}
}
