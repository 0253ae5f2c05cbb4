package cluster

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/vfs/vfstest"
)

// newClusterOfTwo makes a three-voter cluster and starts nodes 1 and 2
// only, together (each answers the other's checkBlank); node 3's
// listener is returned unused, for the test to start it as it likes.
func newClusterOfTwo(t *testing.T, configure func(*tnode, *Config)) (*tcluster, net.Listener) {
	t.Helper()
	c, lns := layCluster(t, 3, false, configure)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for _, id := range []int32{1, 2} {
		wg.Go(func() { errs[id] = c.startWith(c.nodes[id], id, lns[id]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return c, lns[3]
}

// otherVoters are lists node 3 may be given that differ from c.voters:
// a fourth voter added (its address a port nothing listens on), and
// the same ids with node 3's own address written another way
// (localhost for 127.0.0.1: the same socket, another name, as a user
// may type it for one node only).
func otherVoters(t *testing.T, c *tcluster) []struct {
	what   string
	voters map[int32]string
} {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	added := maps.Clone(c.voters)
	added[4] = dead
	renamed := maps.Clone(c.voters)
	_, port, _ := net.SplitHostPort(c.voters[3])
	renamed[3] = "localhost:" + port
	return []struct {
		what   string
		voters map[int32]string
	}{
		{"a fourth voter added", added},
		{"node 3's own address named otherwise", renamed},
	}
}

// TestVotersDifferAtFirstStart: a node started for the first time with
// another --voters list than the running nodes' (a voter added; the
// same ids with another address) is refused by Start with
// ErrVotersDiffer, naming both lists, before it joins the metadata
// group: the running nodes' answer to its whois carries their list. It
// is not registered, its metadata holds nothing, and the running nodes
// go on (they only warn: one wrong newcomer must not stop a cluster).
// Started again over the same DIR with the cluster's list, it joins.
// Without the check
// each node bootstrapped the metadata raft with its own list.
func TestVotersDifferAtFirstStart(t *testing.T) {
	c, ln3 := newClusterOfTwo(t, nil)
	ln3.Close() // node 3 listens on its address at each start
	ctrl := c.controller()
	tn := c.nodes[3]
	for _, tc := range otherVoters(t, c) {
		// The same DIR each time: a refused start leaves nothing that a
		// start with the cluster's list has to undo.
		c.configure = func(tn *tnode, cfg *Config) {
			if tn.id == 3 {
				cfg.Voters = tc.voters
			}
		}
		err := c.startWith(tn, 3, nil)
		if err == nil {
			c.stop(3)
			t.Fatalf("node 3 given %s: started, want ErrVotersDiffer", tc.what)
		}
		msg := err.Error()
		if !errors.Is(err, ErrVotersDiffer) || !strings.Contains(msg, "was given voters "+formatVoters(tc.voters)) ||
			!strings.Contains(msg, "was given voters "+formatVoters(c.voters)) || !strings.Contains(msg, "nothing was written") ||
			!strings.Contains(msg, "must be given the same --voters") {
			t.Fatalf("node 3 given %s: %v, want ErrVotersDiffer naming both lists and what to do", tc.what, err)
		}
		// Refused before the bootstrap: no term stored, no entry.
		snap := vfstest.Snapshot(t, c.fs, filepath.Join(tn.dir, meta.DirName))
		if log := strings.Fields(snap["raft-0/00000000000000000000.log"]); len(log) < 2 || log[1] != "0" || snap["quorum-state"] != "" {
			t.Errorf("node 3 given %s: its metadata holds %v, want an empty log and no quorum state", tc.what, snap)
		}
		if _, ok := ctrl.node.meta.State().Broker(3); ok {
			t.Errorf("node 3 given %s: registered", tc.what)
		}
		for _, other := range c.running() {
			if err := other.node.Err(); err != nil {
				t.Fatalf("node %d failed when node 3 was refused: %v", other.id, err)
			}
		}
	}

	c.configure = nil
	c.restart(3)
	if _, err := tn.node.ClusterID(ctxTimeout(t)); err != nil {
		t.Fatalf("node 3 with the cluster's voters: %v", err)
	}
	c.controller()
}

// TestVotersDifferAtRegistration: when the whois answers carry no list
// (peers of a build before the check; or none answered in time), a node
// given another --voters list joins the metadata group, and the
// controller refuses its registration (ErrVotersDiffer, naming both
// lists): the node fails (ClusterID and Err return it), so a server
// never serves from it, its sync loop wrote nothing to its store, and
// the metadata has no broker 3. A list leaving out the voters the
// controller is among fails the node too: it follows a controller it
// was not told of. The controller and the other node go on.
func TestVotersDifferAtRegistration(t *testing.T) {
	c, ln3 := newClusterOfTwo(t, func(tn *tnode, cfg *Config) { cfg.whoisWithoutVoters = true })
	ln3.Close()
	ctrl := c.controller()
	ctx := ctxTimeout(t)
	if err := ctrl.node.CreateTopic(ctx, "before", 1, 2, nil); err != nil {
		t.Fatal(err)
	}
	cases := otherVoters(t, c)
	cases = append(cases, struct {
		what   string
		voters map[int32]string
	}{"only itself and a fourth voter", map[int32]string{3: c.voters[3], 4: cases[0].voters[4]}})
	tn := c.nodes[3]
	for i, tc := range cases {
		tn.dir = fmt.Sprintf("/n3-%d", i)
		c.configure = func(tn *tnode, cfg *Config) {
			cfg.whoisWithoutVoters = true
			if tn.id == 3 {
				cfg.Voters = tc.voters
			}
		}
		if err := c.startWith(tn, 3, nil); err != nil {
			t.Fatalf("node 3 given %s: Start: %v", tc.what, err)
		}
		_, err := tn.node.ClusterID(ctx)
		msg := fmt.Sprint(err)
		if !errors.Is(err, ErrVotersDiffer) || !strings.Contains(msg, formatVoters(tc.voters)) || !strings.Contains(msg, "must be given the same --voters") {
			t.Fatalf("node 3 given %s: ClusterID: %v, want ErrVotersDiffer naming its list and what to do", tc.what, err)
		}
		if i < 2 && (!strings.Contains(msg, "the controller, node ") || !strings.Contains(msg, formatVoters(c.voters))) {
			t.Errorf("node 3 given %s: %v, want the controller's list named too", tc.what, err)
		}
		if i == 2 && !strings.Contains(msg, "its metadata's controller is node ") {
			t.Errorf("node 3 given %s: %v, want the controller it does not know named", tc.what, err)
		}
		select {
		case <-tn.node.Failed():
		default:
			t.Errorf("node 3 given %s: not failed", tc.what)
		}
		if !errors.Is(tn.node.Err(), ErrVotersDiffer) {
			t.Errorf("node 3 given %s: Err %v", tc.what, tn.node.Err())
		}
		if _, ok := ctrl.node.meta.State().Broker(3); ok {
			t.Errorf("node 3 given %s: registered", tc.what)
		}
		if got := tn.parts.last(); len(got) != 0 || slices.Contains(tn.st.Topics(), "before") {
			t.Errorf("node 3 given %s: given partitions %v, store topics %v; want nothing", tc.what, got, tn.st.Topics())
		}
		c.stop(3)
		for _, other := range c.running() {
			if err := other.node.Err(); err != nil {
				t.Fatalf("node %d failed when node 3 was refused: %v", other.id, err)
			}
		}
	}

	c.configure = func(tn *tnode, cfg *Config) { cfg.whoisWithoutVoters = true }
	tn.dir = "/n3"
	c.restart(3)
	if _, err := tn.node.ClusterID(ctx); err != nil {
		t.Fatalf("node 3 with the cluster's voters: %v", err)
	}
	ctrl = c.controller()
	// Registered, node 3 (started over an empty DIR) registers again as
	// a restart does: its first start is over.
	if !tn.node.blank.Load() || tn.node.registerRequest().FirstStart {
		t.Errorf("node 3, registered after a first start: blank %v, a registration again first_start %v; want true, false",
			tn.node.blank.Load(), tn.node.registerRequest().FirstStart)
	}

	// The controller's rule, request by request: a registration without
	// a list (a build before the check) is not checked; another address
	// for a voter is refused at a first start only (a voter that moved
	// while not every node has its new address yet, at a restart).
	reg := request{Op: opRegister, Broker: 3, Host: "kafka3.test", Port: 9093, RaftAddr: c.voters[3], DirectoryID: tn.node.dirID}
	if resp := ctrl.node.handle(ctx, reg); resp.err() != nil {
		t.Errorf("a registration without voters: %v", resp.err())
	}
	reg.Voters = cases[1].voters
	if resp := ctrl.node.handle(ctx, reg); resp.err() != nil {
		t.Errorf("a restart's registration naming node 3 otherwise: %v", resp.err())
	}
	reg.FirstStart = true
	if err := ctrl.node.handle(ctx, reg).err(); !errors.Is(err, ErrVotersDiffer) {
		t.Errorf("a first start's registration naming node 3 otherwise: %v, want ErrVotersDiffer", err)
	}
	reg.FirstStart, reg.Voters = false, cases[0].voters
	if err := ctrl.node.handle(ctx, reg).err(); !errors.Is(err, ErrVotersDiffer) {
		t.Errorf("a restart's registration with a fourth voter: %v, want ErrVotersDiffer", err)
	}
}

// TestVotersDifferBothFresh: at a new cluster's first start a node asked
// by a peer given another list fails too (both are fresh: neither has
// served), so the disagreement stops both sides rather than the asker
// alone; the asker refuses to start.
func TestVotersDifferBothFresh(t *testing.T) {
	c, lns := layCluster(t, 2, false, nil)
	other := maps.Clone(c.voters)
	_, port, _ := net.SplitHostPort(c.voters[2])
	other[2] = "localhost:" + port
	c.configure = func(tn *tnode, cfg *Config) {
		if tn.id == 2 {
			cfg.Voters = other
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for _, id := range []int32{1, 2} {
		wg.Go(func() {
			errs[id] = c.startWith(c.nodes[id], id, lns[id])
			if errs[id] == nil {
				// Started before the other's whois: it fails then.
				_, errs[id] = c.nodes[id].node.ClusterID(ctxTimeout(t))
			}
		})
	}
	wg.Wait()
	for _, id := range []int32{1, 2} {
		if err := errs[id]; !errors.Is(err, ErrVotersDiffer) || !strings.Contains(err.Error(), formatVoters(c.voters)) ||
			!strings.Contains(err.Error(), formatVoters(other)) {
			t.Errorf("node %d: %v, want ErrVotersDiffer naming both lists", id, err)
		}
	}
}
