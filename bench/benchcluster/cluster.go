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
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seglog/seglog/bench"
)

// Nodes is the size of the cluster bench cluster runs: issue 30's three.
const Nodes = 3

// node is one member of the cluster: its command line, fixed before any
// node starts (every node's --voters names every node's raft address),
// and the process running it, nil while it is down.
type node struct {
	id    int32
	kafka string // --listen
	raft  string // --raft-listen
	args  []string
	child *bench.ServeChild
	log   nodeLog // its standard error, over all its runs
}

// cluster is the nodes, started and restarted with sc.
type cluster struct {
	sc    bench.ServeCommand
	nodes []*node
}

// planCluster picks an n-node cluster's addresses on the loopback: node
// ids 1 to n, each with a Kafka and a raft port that were free a moment
// ago. All 2n listeners are held until every port is picked, so none is
// picked twice.
func planCluster(n int) ([]*node, error) {
	lns := make([]net.Listener, 0, 2*n)
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range 2 * n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
	}
	nodes := make([]*node, n)
	for i := range nodes {
		nodes[i] = &node{id: int32(i + 1), kafka: lns[2*i].Addr().String(), raft: lns[2*i+1].Addr().String()}
	}
	return nodes, nil
}

// voters is the --voters value every node gets, itself included.
func voters(nodes []*node) string {
	vs := make([]string, len(nodes))
	for i, n := range nodes {
		vs[i] = strconv.Itoa(int(n.id)) + "@" + n.raft
	}
	return strings.Join(vs, ",")
}

// serveArgs is node n's command line after `seglog serve`, exactly as
// issue 30 gives it: DIR --node-id N --listen HOST:KPORT --raft-listen
// HOST:RPORT --voters 1@HOST:RPORT1,2@...,3@...
func serveArgs(dir string, nodes []*node, n *node) []string {
	return []string{dir, "--node-id", strconv.Itoa(int(n.id)), "--listen", n.kafka, "--raft-listen", n.raft, "--voters", voters(nodes)}
}

// startCluster starts a cluster of Nodes nodes, each in root/node-ID, all
// at once: a node may wait for a quorum of the others before it says it
// listens. If one fails the ones started are killed.
func startCluster(ctx context.Context, sc bench.ServeCommand, root string) (*cluster, error) {
	nodes, err := planCluster(Nodes)
	if err != nil {
		return nil, err
	}
	c := &cluster{sc: sc, nodes: nodes}
	for _, n := range nodes {
		n.args = serveArgs(filepath.Join(root, fmt.Sprintf("node-%d", n.id)), nodes, n)
	}
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
		return fmt.Errorf("node %d: %w", n.id, err)
	}
	n.child = child
	return nil
}

// brokers returns every node's Kafka address, for clients' seeds.
func (c *cluster) brokers() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.kafka
	}
	return out
}

// node returns the node with id, or nil.
func (c *cluster) node(id int32) *node {
	for _, n := range c.nodes {
		if n.id == id {
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
				errs[i] = fmt.Errorf("node %d: %w", n.id, err)
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
