//go:build linux

package nemesis

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
)

// Cluster is the processes of a replicated cluster, one `seglog serve`
// per node, each in its own directory.
type Cluster struct {
	Nodes []Node
	Procs []*Proc // Procs[i] runs Nodes[i]
}

// StartCluster runs every node of nodes, `bin serve ROOT/node-ID
// ServeArgs(nodes, i, extra...)`, all at once (a node may wait for a
// quorum of the others before it listens), and returns once each says it
// listens. If one fails the ones started are killed.
func StartCluster(bin, root string, nodes []Node, extra ...string) (*Cluster, error) {
	c := &Cluster{Nodes: nodes, Procs: make([]*Proc, len(nodes))}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := filepath.Join(root, fmt.Sprintf("node-%d", n.ID))
			c.Procs[i], errs[i] = Start(bin, dir, ServeArgs(nodes, i, extra...)...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Kill()
		return nil, err
	}
	return c, nil
}

// Brokers returns every node's Kafka address, for clients' seeds.
func (c *Cluster) Brokers() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Kafka
	}
	return out
}

// Dirs returns every node's store directory, in the order of Nodes.
func (c *Cluster) Dirs() []string {
	out := make([]string, len(c.Procs))
	for i, p := range c.Procs {
		out[i] = p.Dir()
	}
	return out
}

// Node returns the process of the node with id, or nil.
func (c *Cluster) Node(id int32) *Proc {
	for i, n := range c.Nodes {
		if n.ID == id {
			return c.Procs[i]
		}
	}
	return nil
}

// Stop stops every node (SIGTERM, after SIGCONT), all at once, and
// returns every node's error: a node's clean stop may wait on its peers,
// so stopping them one by one could leave the last one alone.
func (c *Cluster) Stop() error {
	errs := make([]error, len(c.Procs))
	var wg sync.WaitGroup
	for i, p := range c.Procs {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Stop(); err != nil {
				errs[i] = fmt.Errorf("node %d: %w", c.Nodes[i].ID, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Kill SIGKILLs every node that runs: a test's cleanup.
func (c *Cluster) Kill() {
	for _, p := range c.Procs {
		if p != nil {
			p.Kill()
		}
	}
}

// Output returns the tail of each node's output, each headed by its id.
func (c *Cluster) Output() string {
	var b strings.Builder
	for i, p := range c.Procs {
		if p != nil {
			fmt.Fprintf(&b, "=== node %d (%s)\n%s\n", c.Nodes[i].ID, p.Dir(), p.Output())
		}
	}
	return b.String()
}
