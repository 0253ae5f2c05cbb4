package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/raftmux"
)

// counters is what the nodes' connections carried, counted on the raw
// sockets under the Muxes (headers included).
type counters struct {
	responses atomic.Uint64 // writes on accepted connections: about one per RPC answered
	inBytes   atomic.Uint64 // bytes read on accepted connections (requests)
}

// countingConn counts an accepted connection's traffic. NetworkTransport
// answers each RPC with one flush of its buffered writer, so its Write
// calls here are a cheap count of RPCs served.
type countingConn struct {
	net.Conn
	c *counters
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.c.inBytes.Add(uint64(n))
	return n, err
}

func (c countingConn) Write(p []byte) (int, error) {
	c.c.responses.Add(1)
	return c.Conn.Write(p)
}

type countingListener struct {
	net.Listener
	c *counters
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, c: l.c}, nil
}

// fsm counts applied commands; the snapshot is that count, so raft's
// periodic snapshots under load cost next to nothing.
type fsm struct{ applied atomic.Uint64 }

func (f *fsm) Apply(*raft.Log) any { f.applied.Add(1); return nil }

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) { return snap(f.applied.Load()), nil }

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var b [8]byte
	if _, err := io.ReadFull(rc, b[:]); err != nil {
		return err
	}
	f.applied.Store(binary.BigEndian.Uint64(b[:]))
	return nil
}

type snap uint64

func (s snap) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(binary.BigEndian.AppendUint64(nil, uint64(s))); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snap) Release() {}

// node is one in-process cluster member: one Mux and one raft.Raft per
// partition.
type node struct {
	id     raft.ServerID
	mux    *raftmux.Mux
	layers []*raftmux.Layer // by partition
	rafts  []*raft.Raft     // by partition
	dead   bool
}

// cluster is three nodes carrying the same partitions.
type cluster struct {
	nodes []*node
	parts int
	cnt   counters
}

// newCluster opens the nodes' Muxes on loopback.
func newCluster(nodes, parts int) (*cluster, error) {
	c := &cluster{parts: parts}
	for i := range nodes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		// A partition's replicas are registered one node after another,
		// so a peer's first connection may arrive first: give it time.
		mux := raftmux.New(countingListener{Listener: ln, c: &c.cnt}, raftmux.Config{UnknownGroupWait: 5 * time.Second})
		c.nodes = append(c.nodes, &node{id: raft.ServerID(fmt.Sprint(i + 1)), mux: mux})
	}
	return c, nil
}

// start creates every partition's raft group on every node and bootstraps
// it with all nodes as voters.
func (c *cluster) start(conf func() *raft.Config, maxPool int) error {
	var servers []raft.Server
	for _, n := range c.nodes {
		servers = append(servers, raft.Server{ID: n.id, Address: raft.ServerAddress(n.mux.Addr().String())})
	}
	for p := range c.parts {
		for _, n := range c.nodes {
			layer, err := n.mux.Register(fmt.Sprintf("topic-%d", p))
			if err != nil {
				return err
			}
			trans := raft.NewNetworkTransport(layer, maxPool, 10*time.Second, io.Discard)
			cfg := conf()
			cfg.LocalID = n.id
			cfg.LogOutput = io.Discard
			// Formatting debug lines nobody reads would be counted as
			// raft's idle cost.
			cfg.LogLevel = "OFF"
			store := raft.NewInmemStore()
			r, err := raft.NewRaft(cfg, &fsm{}, store, store, raft.NewInmemSnapshotStore(), trans)
			if err != nil {
				return err
			}
			if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
				return err
			}
			n.layers = append(n.layers, layer)
			n.rafts = append(n.rafts, r)
		}
	}
	return nil
}

// leader is the live node that leads partition p and that every other live
// member follows, or -1.
func (c *cluster) leader(p int) int {
	lead := -1
	for i, n := range c.nodes {
		if !n.dead && n.rafts[p].State() == raft.Leader {
			if lead >= 0 {
				return -1
			}
			lead = i
		}
	}
	if lead < 0 {
		return -1
	}
	for i, n := range c.nodes {
		if n.dead || i == lead {
			continue
		}
		if _, id := n.rafts[p].LeaderWithID(); id != c.nodes[lead].id {
			return -1
		}
	}
	return lead
}

// waitLeaders polls until every partition has a leader its followers
// know, printing progress every 10 s through report.
func (c *cluster) waitLeaders(limit time.Duration, report func(led int)) error {
	start := time.Now()
	next := start.Add(10 * time.Second)
	for {
		led := 0
		for p := range c.parts {
			if c.leader(p) >= 0 {
				led++
			}
		}
		if led == c.parts {
			return nil
		}
		if time.Now().After(next) {
			report(led)
			next = next.Add(10 * time.Second)
		}
		if time.Since(start) > limit {
			return fmt.Errorf("%d of %d partitions without a stable leader after %v", c.parts-led, c.parts, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leaderCounts is how many partitions each node leads.
func (c *cluster) leaderCounts() []int {
	counts := make([]int, len(c.nodes))
	for p := range c.parts {
		if l := c.leader(p); l >= 0 {
			counts[l]++
		}
	}
	return counts
}

// openConns counts the TCP connections of all groups; both ends of each
// are in this process, so every connection is counted once as dialled and
// once as accepted, and half the sum is the number of connections.
func (c *cluster) openConns() int {
	total := 0
	for _, n := range c.nodes {
		if n.dead {
			continue
		}
		for _, l := range n.layers {
			total += l.OpenConns()
		}
	}
	return total / 2
}

// muxStats sums the nodes' raftmux counters: connections delivered and
// refused, by reason.
func (c *cluster) muxStats() string {
	var t raftmux.Stats
	for _, n := range c.nodes {
		s := n.mux.Stats()
		t.Accepted += s.Accepted
		t.BadHeader += s.BadHeader
		t.Timeout += s.Timeout
		t.Unknown += s.Unknown
		t.Overflow += s.Overflow
		t.Dropped += s.Dropped
	}
	return fmt.Sprintf("connections accepted %d, refused: bad header %d, header timeout %d, unknown group %d, overflow %d; dropped by the dialer before its header was read %d",
		t.Accepted, t.BadHeader, t.Timeout, t.Unknown, t.Overflow, t.Dropped)
}

// load applies size-byte commands through each partition's leader for d,
// keeping up to inflight outstanding per partition, and returns how many
// committed.
func (c *cluster) load(d time.Duration, size, inflight int) (uint64, error) {
	cmd := make([]byte, size)
	var done atomic.Uint64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	stop := time.Now().Add(d)
	for p := range c.parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var pending []raft.ApplyFuture
			for time.Now().Before(stop) {
				l := c.leader(p)
				if l < 0 {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				pending = append(pending, c.nodes[l].rafts[p].Apply(cmd, 5*time.Second))
				if len(pending) < inflight {
					continue
				}
				if err := pending[0].Error(); err != nil {
					firstErr.CompareAndSwap(nil, err)
				} else {
					done.Add(1)
				}
				pending = pending[1:]
			}
			for _, f := range pending {
				if f.Error() == nil {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil && !errors.Is(err, raft.ErrNotLeader) && !errors.Is(err, raft.ErrLeadershipLost) {
		return done.Load(), err
	}
	return done.Load(), nil
}

// failover kills node victim (its Mux closed, which is the moment of
// death for its peers, then its rafts shut down) and measures, for each
// partition it led, the time until a survivor leads it and until a
// command commits through that leader.
func (c *cluster) failover(victim int, limit time.Duration) (elected, committed []time.Duration, err error) {
	var led []int
	for p := range c.parts {
		if c.leader(p) == victim {
			led = append(led, p)
		}
	}
	v := c.nodes[victim]
	t0 := time.Now()
	_ = v.mux.Close()
	v.dead = true
	var shut sync.WaitGroup
	for _, r := range v.rafts {
		shut.Add(1)
		go func() { defer shut.Done(); _ = r.Shutdown().Error() }()
	}

	elected = make([]time.Duration, len(led))
	committed = make([]time.Duration, len(led))
	errs := make([]error, len(led))
	var wg sync.WaitGroup
	for i, p := range led {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.awaitNewLeader(p, t0, limit, &elected[i], &committed[i])
		}()
	}
	wg.Wait()
	shut.Wait()
	return elected, committed, errors.Join(errs...)
}

// awaitNewLeader polls partition p's survivors until one leads, then
// applies one command through it until it commits.
func (c *cluster) awaitNewLeader(p int, t0 time.Time, limit time.Duration, elected, committed *time.Duration) error {
	cmd := make([]byte, 100)
	for time.Since(t0) < limit {
		var lead *raft.Raft
		for _, n := range c.nodes {
			if !n.dead && n.rafts[p].State() == raft.Leader {
				lead = n.rafts[p]
			}
		}
		if lead == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if *elected == 0 {
			*elected = time.Since(t0)
		}
		if lead.Apply(cmd, time.Second).Error() == nil {
			*committed = time.Since(t0)
			return nil
		}
	}
	return fmt.Errorf("partition %d: no commit on a survivor within %v", p, limit)
}

// shutdown stops every live node.
func (c *cluster) shutdown() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if n.dead {
			continue
		}
		for _, r := range n.rafts {
			wg.Add(1)
			go func() { defer wg.Done(); _ = r.Shutdown().Error() }()
		}
	}
	wg.Wait()
	for _, n := range c.nodes {
		_ = n.mux.Close()
	}
}
