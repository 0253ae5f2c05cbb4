package multiraft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/cluster/raftmux"
	"github.com/seglog/seglog/internal/testutil"
	pb "go.etcd.io/raft/v3/raftpb"
)

// firewall cuts the connections between one node and the others: every
// member's Mux dials through it, so it can refuse new connections and close
// the ones it made.
type firewall struct {
	mu    sync.Mutex
	ids   map[string]uint64 // raft address -> node id
	cut   map[uint64]bool   // the isolated side
	conns map[net.Conn][2]uint64
}

func newFirewall() *firewall {
	return &firewall{ids: map[string]uint64{}, cut: map[uint64]bool{}, conns: map[net.Conn][2]uint64{}}
}

// config is the raftmux.Config of node from.
func (f *firewall) config(from uint64) raftmux.Config {
	return raftmux.Config{Dialer: func(addr string, timeout time.Duration) (net.Conn, error) {
		f.mu.Lock()
		to := f.ids[addr]
		blocked := f.cut[from] != f.cut[to]
		f.mu.Unlock()
		if blocked {
			return nil, errors.New("firewall: cut")
		}
		c, err := net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.cut[from] != f.cut[to] { // cut while dialling
			_ = c.Close()
			return nil, errors.New("firewall: cut")
		}
		f.conns[c] = [2]uint64{from, to}
		return c, nil
	}}
}

// isolate cuts node id off from every other node.
func (f *firewall) isolate(id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut[id] = true
	for c, ends := range f.conns {
		if f.cut[ends[0]] != f.cut[ends[1]] {
			_ = c.Close()
			delete(f.conns, c)
		}
	}
}

func (f *firewall) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.cut)
}

// leaderAmong is the leader of g that nodes ids agree on, one of them, or 0.
func (c *cluster) leaderAmong(g uint64, ids ...uint64) uint64 {
	var lead uint64
	for _, id := range ids {
		l, _, err := c.members[id].node.Leader(g)
		if err != nil || l == 0 || (lead != 0 && l != lead) || !slices.Contains(ids, l) {
			return 0
		}
		lead = l
	}
	return lead
}

// TestDeposedLeaderProposalFails: a leader cut off from its followers takes
// a proposal it can never commit; the others elect a leader and commit past
// that index; when the old leader hears of it, its proposal fails with
// ErrProposalDropped rather than hanging, and no replica applies it.
func TestDeposedLeaderProposalFails(t *testing.T) {
	fw := newFirewall()
	// A 0.5 to 1 s election timeout (50 ticks of 10 ms), so the cut-off
	// leader usually still leads when the proposal reaches it; if it has
	// already stepped down (CheckQuorum) the test tries again.
	c := newClusterWith(t, 3, 1, Config{ElectionTick: 50}, fw.config, func(c *cluster) {
		for id, addr := range c.peers {
			fw.ids[addr] = id
		}
	})
	const g = 1
	c.waitLeaders()
	c.propose(g, "before")
	old := c.leader(g)
	var others []uint64
	for id := range c.members {
		if id != old {
			others = append(others, id)
		}
	}
	fw.isolate(old)
	errc := make(chan error, 1)
	go func() {
		_, err := c.members[old].node.Propose(context.Background(), g, []byte("lost"))
		errc <- err
	}()
	// The proposal is either waiting on the old leader, or was refused at
	// once because it no longer leads: then this run shows nothing.
	var refused error
	testutil.WaitFor(t, "the cut-off leader holds the proposal, or refused it", func() bool {
		select {
		case refused = <-errc:
			return true
		default:
			return c.members[old].node.waiting(g) == 1
		}
	})
	if refused != nil {
		var nle *NotLeaderError
		if !errors.As(refused, &nle) {
			t.Fatalf("proposal to the cut-off leader: %v", refused)
		}
		t.Skip("the cut-off leader stepped down before the proposal reached it")
	}
	testutil.WaitFor(t, "the other two elect a leader", func() bool {
		return c.leaderAmong(g, others...) != 0
	})
	lead := c.leaderAmong(g, others...)
	for _, s := range []string{"won-1", "won-2"} {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
		_, err := c.members[lead].node.Propose(ctx, g, []byte(s))
		cancel()
		if err != nil {
			t.Fatalf("propose to the new leader: %v", err)
		}
	}
	fw.heal()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrProposalDropped) {
			t.Fatalf("the deposed leader's proposal: %v, want ErrProposalDropped", err)
		}
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the deposed leader's proposal neither failed nor succeeded")
	}
	ents := c.waitAgree(g, 3)
	for _, e := range ents {
		if strings.HasSuffix(e, ":lost") {
			t.Fatalf("a replica applied the lost proposal: %v", ents)
		}
	}
}

// TestSnapshotCatchUp: a follower down while the others compact their logs
// past its end catches up by a snapshot (the storage's ApplySnapshot, then
// the entries after it), and applies what follows.
func TestSnapshotCatchUp(t *testing.T) {
	c := newCluster(t, 3, 1, Config{})
	const g = 1
	c.waitLeaders()
	for i := range 5 {
		c.propose(g, fmt.Sprintf("early-%d", i))
	}
	lead := c.leader(g)
	var down *member
	for id, m := range c.members {
		if id != lead {
			down = m
			break
		}
	}
	c.stop(down)
	for i := range 10 {
		c.propose(g, fmt.Sprintf("while-down-%d", i))
	}
	// Every live replica snapshots at what it has applied and drops the
	// log before it, as a store would after retention.
	var snapAt uint64
	for id, m := range c.members {
		if id == down.id {
			continue
		}
		st, err := m.node.Status(context.Background(), g)
		if err != nil {
			t.Fatal(err)
		}
		cs := &pb.ConfState{Voters: []uint64{1, 2, 3}}
		if _, err := m.storage[g].CreateSnapshot(st.Applied, cs, nil); err != nil {
			t.Fatal(err)
		}
		if err := m.storage[g].Compact(st.Applied); err != nil {
			t.Fatal(err)
		}
		if id == lead {
			snapAt = st.Applied
		}
	}
	before, err := down.storage[g].LastIndex()
	if err != nil {
		t.Fatal(err)
	}
	if before >= snapAt {
		t.Fatalf("the stopped follower has index %d, not behind the leader's snapshot at %d", before, snapAt)
	}
	c.start(down)
	last := c.propose(g, "after-snapshot")
	testutil.WaitFor(t, "the restarted follower installs the snapshot and applies what follows", func() bool {
		got := down.rec[g].get()
		return len(got) > 0 && got[len(got)-1] == fmt.Sprintf("%d:after-snapshot", last)
	})
	first, err := down.storage[g].FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	if first <= before+1 {
		t.Fatalf("the follower's log starts at %d: no snapshot installed past its old end %d", first, before)
	}
}
