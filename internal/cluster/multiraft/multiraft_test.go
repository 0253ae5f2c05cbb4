package multiraft

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/cluster/raftmux"
	"github.com/seglog/seglog/internal/testutil"
	pb "go.etcd.io/raft/v3/raftpb"
)

// testTick is short so tests elect quickly; nothing asserts a duration.
const testTick = 10 * time.Millisecond

// recorder is one replica's applied log: the index and data of every
// non-empty normal entry, as its ApplyFunc saw them.
type recorder struct {
	mu   sync.Mutex
	ents []string
}

func (r *recorder) apply(ents []*pb.Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range ents {
		if e.GetType() == pb.EntryType_EntryNormal && len(e.GetData()) > 0 {
			r.ents = append(r.ents, fmt.Sprintf("%d:%s", e.GetIndex(), e.GetData()))
		}
	}
	return nil
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ents)
}

// member is one node of a test cluster with what survives its restarts.
type member struct {
	id      uint64
	addr    string
	mux     *raftmux.Mux
	node    *Node
	storage map[uint64]MemoryStorage
	rec     map[uint64]*recorder
}

type cluster struct {
	t       *testing.T
	members map[uint64]*member
	peers   map[uint64]string
	groups  []uint64
	voters  map[uint64][]uint64
	cfg     Config // template: ID, Mux, Peers are filled per member
	mcfg    func(id uint64) raftmux.Config
}

// newCluster starts nodes 1..size, and groups 1..groups over all of them.
func newCluster(t *testing.T, size, groups int, cfg Config) *cluster {
	t.Helper()
	return newClusterWith(t, size, groups, cfg, nil, nil)
}

// newClusterWith is newCluster with each member's raftmux.Config (nil: the
// zero Config), and edit to change peers and voters before any node
// starts.
func newClusterWith(t *testing.T, size, groups int, cfg Config, mcfg func(id uint64) raftmux.Config, edit func(*cluster)) *cluster {
	t.Helper()
	if mcfg == nil {
		mcfg = func(uint64) raftmux.Config { return raftmux.Config{} }
	}
	c := &cluster{t: t, members: map[uint64]*member{}, peers: map[uint64]string{},
		voters: map[uint64][]uint64{}, cfg: cfg, mcfg: mcfg}
	var all []uint64
	for i := 1; i <= size; i++ {
		id := uint64(i)
		mux, err := raftmux.Listen("127.0.0.1:0", mcfg(id))
		if err != nil {
			t.Fatal(err)
		}
		c.members[id] = &member{id: id, addr: mux.Addr().String(), mux: mux,
			storage: map[uint64]MemoryStorage{}, rec: map[uint64]*recorder{}}
		c.peers[id] = mux.Addr().String()
		all = append(all, id)
	}
	for g := 1; g <= groups; g++ {
		c.groups = append(c.groups, uint64(g))
		c.voters[uint64(g)] = all
	}
	if edit != nil {
		edit(c)
	}
	for _, m := range c.members {
		c.start(m)
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			c.stop(m)
		}
	})
	return c
}

// start runs m's node over its kept storage (a restart if it ran before).
func (c *cluster) start(m *member) {
	c.t.Helper()
	if m.mux == nil {
		mux, err := raftmux.Listen(m.addr, c.mcfg(m.id))
		if err != nil {
			c.t.Fatal(err)
		}
		m.mux = mux
	}
	cfg := c.cfg
	cfg.ID, cfg.Mux, cfg.Peers = m.id, m.mux, c.peers
	if cfg.Tick == 0 {
		cfg.Tick = testTick
	}
	n, err := New(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	m.node = n
	for _, g := range c.groups {
		if !slices.Contains(c.voters[g], m.id) {
			continue
		}
		st, ok := m.storage[g]
		if !ok {
			st = NewMemoryStorage()
			m.storage[g] = st
		}
		// A fresh recorder: after a restart raft applies the log again
		// from the snapshot, so it must come out the same.
		m.rec[g] = &recorder{}
		if err := n.AddGroup(g, c.voters[g], st, m.rec[g].apply); err != nil {
			c.t.Fatal(err)
		}
	}
}

// stop kills m: its node and its raft port, as a process dying would.
func (c *cluster) stop(m *member) {
	if m.node != nil {
		_ = m.node.Close()
		m.node = nil
	}
	if m.mux != nil {
		_ = m.mux.Close()
		m.mux = nil
	}
}

// leader is the leader of g that every live member of g agrees on, 0 if
// they do not agree yet.
func (c *cluster) leader(g uint64) uint64 {
	var lead uint64
	for _, id := range c.voters[g] {
		m := c.members[id]
		if m == nil || m.node == nil {
			continue
		}
		l, _, err := m.node.Leader(g)
		if err != nil || l == 0 || (lead != 0 && l != lead) {
			return 0
		}
		lead = l
	}
	if lead == 0 || c.members[lead] == nil || c.members[lead].node == nil {
		return 0
	}
	return lead
}

func (c *cluster) waitLeaders() {
	c.t.Helper()
	testutil.WaitFor(c.t, "every group has a leader its live replicas agree on", func() bool {
		for _, g := range c.groups {
			if c.leader(g) == 0 {
				return false
			}
		}
		return true
	})
}

// propose commits data to g through its leader, going again to whichever
// node leads when the answer is "not leader" or a lost proposal, as a
// Kafka client retries. It returns the entry's index.
func (c *cluster) propose(g uint64, data string) uint64 {
	c.t.Helper()
	var index uint64
	testutil.WaitFor(c.t, fmt.Sprintf("group %d commits %q", g, data), func() bool {
		lead := c.leader(g)
		if lead == 0 {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		i, err := c.members[lead].node.Propose(ctx, g, []byte(data))
		var nle *NotLeaderError
		switch {
		case err == nil:
			index = i
			return true
		case errors.As(err, &nle), errors.Is(err, ErrProposalDropped),
			errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrClosed):
			return false
		default:
			c.t.Fatalf("propose to group %d: %v", g, err)
			return false
		}
	})
	return index
}

// waitAgree waits until every live replica of g has applied the same
// entries, at least want of them, and returns them.
func (c *cluster) waitAgree(g uint64, want int) []string {
	c.t.Helper()
	var ents []string
	testutil.WaitFor(c.t, fmt.Sprintf("the replicas of group %d apply the same %d entries", g, want), func() bool {
		ents = nil
		for _, id := range c.voters[g] {
			m := c.members[id]
			if m == nil || m.node == nil {
				continue
			}
			got := m.rec[g].get()
			if len(got) < want || (ents != nil && !slices.Equal(got, ents)) {
				return false
			}
			ents = got
		}
		return true
	})
	return ents
}

func TestElectProposeApply(t *testing.T) {
	c := newCluster(t, 3, 4, Config{})
	c.waitLeaders()
	const per = 20
	var wg sync.WaitGroup
	for _, g := range c.groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				c.propose(g, fmt.Sprintf("g%d-%d", g, i))
			}
		}()
	}
	wg.Wait()
	for _, g := range c.groups {
		ents := c.waitAgree(g, per)
		if len(ents) != per {
			t.Fatalf("group %d applied %d entries, want %d: %v", g, len(ents), per, ents)
		}
		for i, e := range ents {
			var idx uint64
			var data string
			if _, err := fmt.Sscanf(e, "%d:%s", &idx, &data); err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("g%d-%d", g, i); data != want {
				t.Fatalf("group %d entry %d is %q, want %q", g, i, data, want)
			}
		}
	}
	// The leader's status shows every replica caught up.
	for _, g := range c.groups {
		lead := c.leader(g)
		testutil.WaitFor(t, "the leader counts every replica caught up", func() bool {
			st, err := c.members[lead].node.Status(context.Background(), g)
			if err != nil {
				t.Fatal(err)
			}
			return len(st.CaughtUp) == 3
		})
	}
	// A follower refuses a proposal and names the leader.
	g := c.groups[0]
	lead := c.leader(g)
	for id, m := range c.members {
		if id == lead {
			continue
		}
		_, err := m.node.Propose(context.Background(), g, []byte("x"))
		var nle *NotLeaderError
		if !errors.As(err, &nle) || nle.Leader != lead {
			// The follower may not know the leader for a moment only
			// if leadership moved; with no failure it knows it.
			t.Fatalf("propose on follower %d: %v, want NotLeaderError naming %d", id, err, lead)
		}
	}
	if _, err := c.members[lead].node.Propose(context.Background(), 99, []byte("x")); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("propose to a group not here: %v", err)
	}
}

// mostLeader is the member leading the most groups.
func (c *cluster) mostLeader() uint64 {
	counts := map[uint64]int{}
	var best uint64
	for _, g := range c.groups {
		l := c.leader(g)
		counts[l]++
		if l != 0 && counts[l] > counts[best] {
			best = l
		}
	}
	return best
}

func TestFailoverAndRestart(t *testing.T) {
	c := newCluster(t, 3, 4, Config{})
	c.waitLeaders()
	for _, g := range c.groups {
		c.propose(g, fmt.Sprintf("before-%d", g))
	}
	victim := c.members[c.mostLeader()]
	c.stop(victim)
	// Survivors elect among themselves and commit again.
	c.waitLeaders()
	for _, g := range c.groups {
		if l := c.leader(g); l == victim.id {
			t.Fatalf("group %d still led by the dead node", g)
		}
		for i := range 5 {
			c.propose(g, fmt.Sprintf("after-%d-%d", g, i))
		}
		c.waitAgree(g, 6)
	}
	// The victim comes back over the storage it had and catches up: it
	// applies the same entries as the others, including those committed
	// while it was down.
	c.start(victim)
	for _, g := range c.groups {
		c.propose(g, fmt.Sprintf("back-%d", g))
		ents := c.waitAgree(g, 7)
		if got := victim.rec[g].get(); !slices.Equal(got, ents) {
			t.Fatalf("group %d: restarted node applied %v, others %v", g, got, ents)
		}
	}
	// The survivors' senders reconnect to it. Only the leader's was
	// needed to catch it up: a follower's comes when its backoff, grown
	// while the node was down, ends, which may be after the catch-up
	// (once the survivors elected at once, a race run saw it so).
	for id, m := range c.members {
		if id != victim.id {
			testutil.WaitFor(t, fmt.Sprintf("node %d to reconnect to the restarted node %d", id, victim.id), func() bool {
				return m.node.Stats().Connects[victim.id] >= 2
			})
		}
	}
}

// TestRestartedFollowerKnowsItsTerm: a follower started again over its
// storage reports the term it stored, and, once it hears its leader, that
// leader's term, before anything new is committed. A walk found restarted
// followers reporting epoch 0 for every idle partition (the term was read
// only from a Ready's hard state, which a restart's first Readys lack):
// Metadata went backwards in epoch, and kgo, taking it for stale, stalled
// a partition 20 s.
func TestRestartedFollowerKnowsItsTerm(t *testing.T) {
	c := newCluster(t, 3, 2, Config{})
	c.waitLeaders()
	for _, g := range c.groups {
		c.propose(g, fmt.Sprintf("before-%d", g))
	}
	// A member leading neither group (three members, two groups).
	var victim *member
	for _, id := range []uint64{1, 2, 3} {
		if m := c.members[id]; c.leader(c.groups[0]) != id && c.leader(c.groups[1]) != id {
			victim = m
		}
	}
	if victim == nil {
		t.Fatal("every member leads a group, which three members and two groups cannot")
	}
	terms := map[uint64]uint64{}
	for _, g := range c.groups {
		_, term, err := c.members[c.leader(g)].node.Leader(g)
		if err != nil || term == 0 {
			t.Fatalf("group %d: leader's term %d, %v", g, term, err)
		}
		terms[g] = term
	}
	c.stop(victim)
	c.start(victim)
	for _, g := range c.groups {
		if _, term, err := victim.node.Leader(g); err != nil || term != terms[g] {
			t.Errorf("group %d: the restarted follower reports term %d (%v) before hearing its leader, want the stored %d", g, term, err, terms[g])
		}
		testutil.WaitFor(t, "the restarted follower hears its leader", func() bool {
			lead, _, _ := victim.node.Leader(g)
			return lead != 0
		})
		if _, term, _ := victim.node.Leader(g); term != terms[g] {
			t.Errorf("group %d: the restarted follower reports term %d with its leader known, want the leader's %d", g, term, terms[g])
		}
	}
}
