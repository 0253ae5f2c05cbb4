package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/internal/cluster/raftmux"
	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// The -engine etcd prototype: the same partitions as etcd's raft state
// machines (go.etcd.io/raft/v3), the way CockroachDB drives its ranges. A
// node runs all its groups from one goroutine: one ticker ticks every
// RawNode, messages from peers are stepped in batches, and each round's
// Ready messages for a peer go out in one write on the node pair's single
// connection (raftmux group "etcd-raft"), so a tick's heartbeats of every
// group cost one write per peer, not one RPC per group. Storage is
// raft.MemoryStorage, as the hashicorp runs use InmemStore. It measures the
// idle cost and failover; it is a measurement, not a design for seglog.

// etcdGroup is one partition's replica on one node.
type etcdGroup struct {
	rn       *etcdraft.RawNode
	st       *etcdraft.MemoryStorage
	leader   atomic.Bool
	leadTerm uint64       // the term it leads in; driver goroutine only
	leadAt   atomic.Int64 // unix ns it last became leader
	commitAt atomic.Int64 // unix ns of the first commit of its own term as leader
}

// frame is one message for a group, as read from a peer.
type frame struct {
	group uint32
	msg   *pb.Message
}

// etcdNode is one member: one Mux, one driver goroutine for all groups.
type etcdNode struct {
	id     uint64
	mux    *raftmux.Mux
	layer  *raftmux.Layer
	groups []*etcdGroup
	inbox  chan []frame
	out    map[uint64]*bufio.Writer // by peer id; driver goroutine only
	conns  map[uint64]net.Conn
	stop   chan struct{}
	wg     sync.WaitGroup
	sent   *atomic.Uint64
	dead   bool
}

// etcdCluster is three etcdNodes carrying the same partitions.
type etcdCluster struct {
	nodes []*etcdNode
	parts int
	tick  time.Duration
	sent  atomic.Uint64 // messages sent by all nodes
}

func newEtcdCluster(nodes, parts int, tick time.Duration) (*etcdCluster, error) {
	c := &etcdCluster{parts: parts, tick: tick}
	voters := make([]uint64, nodes)
	for i := range nodes {
		voters[i] = uint64(i + 1)
	}
	for i := range nodes {
		mux, err := raftmux.Listen("127.0.0.1:0", raftmux.Config{})
		if err != nil {
			return nil, err
		}
		layer, err := mux.Register("etcd-raft")
		if err != nil {
			return nil, err
		}
		n := &etcdNode{id: uint64(i + 1), mux: mux, layer: layer, inbox: make(chan []frame, 1024),
			out: map[uint64]*bufio.Writer{}, conns: map[uint64]net.Conn{}, stop: make(chan struct{}), sent: &c.sent}
		for range parts {
			st := etcdraft.NewMemoryStorage()
			// Start every replica from the same configuration, as a
			// bootstrapped hashicorp group does.
			if err := st.ApplySnapshot(&pb.Snapshot{Metadata: &pb.SnapshotMetadata{
				ConfState: &pb.ConfState{Voters: voters}, Index: new(uint64(1)), Term: new(uint64(1)),
			}}); err != nil {
				return nil, err
			}
			rn, err := etcdraft.NewRawNode(&etcdraft.Config{
				ID: n.id, ElectionTick: 10, HeartbeatTick: 1, Storage: st,
				MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256,
				CheckQuorum: true, PreVote: true, Logger: multiraft.QuietLogger(),
			})
			if err != nil {
				return nil, err
			}
			n.groups = append(n.groups, &etcdGroup{rn: rn, st: st})
		}
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		n.wg.Add(1)
		go n.acceptLoop()
		for _, p := range c.nodes {
			if p == n {
				continue
			}
			conn, err := n.layer.Dial(raft.ServerAddress(p.mux.Addr().String()), 5*time.Second)
			if err != nil {
				return nil, err
			}
			n.conns[p.id] = conn
			n.out[p.id] = bufio.NewWriterSize(conn, 64<<10)
		}
	}
	for _, n := range c.nodes {
		n.wg.Add(1)
		go n.drive(tick)
	}
	return c, nil
}

// acceptLoop reads every connection a peer opens to this node.
func (n *etcdNode) acceptLoop() {
	defer n.wg.Done()
	for {
		conn, err := n.layer.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go n.readLoop(conn)
	}
}

// readLoop decodes frames (length, group, message) and hands them to the
// driver in batches of what arrived together.
func (n *etcdNode) readLoop(conn net.Conn) {
	defer n.wg.Done()
	defer conn.Close()
	r := bufio.NewReaderSize(conn, 64<<10)
	var hdr [8]byte
	for {
		var batch []frame
		for {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return
			}
			size, group := binary.BigEndian.Uint32(hdr[:4]), binary.BigEndian.Uint32(hdr[4:])
			if size > 64<<20 || int(group) >= len(n.groups) {
				return
			}
			buf := make([]byte, size)
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
			m := new(pb.Message)
			if err := proto.Unmarshal(buf, m); err != nil {
				return
			}
			batch = append(batch, frame{group: group, msg: m})
			if r.Buffered() < 8 {
				break
			}
		}
		select {
		case n.inbox <- batch:
		case <-n.stop:
			return
		}
	}
}

// drive is the node's one raft goroutine: it ticks, steps and handles
// Ready for every group, then flushes each peer's writes once.
func (n *etcdNode) drive(tick time.Duration) {
	defer n.wg.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	dirty := make([]bool, len(n.groups))
	var list []int
	mark := func(g int) {
		if !dirty[g] {
			dirty[g] = true
			list = append(list, g)
		}
	}
	var buf []byte
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			for i, g := range n.groups {
				g.rn.Tick()
				mark(i)
			}
		case batch := <-n.inbox:
			for _, f := range batch {
				_ = n.groups[f.group].rn.Step(f.msg)
				mark(int(f.group))
			}
		}
		for _, i := range list {
			dirty[i] = false
			buf = n.ready(i, buf)
		}
		list = list[:0]
		for id, w := range n.out {
			if err := w.Flush(); err != nil {
				n.dropPeer(id)
			}
		}
	}
}

// ready persists, sends and applies group i's Ready, if it has one.
func (n *etcdNode) ready(i int, buf []byte) []byte {
	g := n.groups[i]
	if !g.rn.HasReady() {
		return buf
	}
	rd := g.rn.Ready()
	if !etcdraft.IsEmptyHardState(rd.HardState) {
		_ = g.st.SetHardState(rd.HardState)
	}
	if len(rd.Entries) > 0 {
		_ = g.st.Append(rd.Entries)
	}
	if !etcdraft.IsEmptySnap(rd.Snapshot) {
		_ = g.st.ApplySnapshot(rd.Snapshot)
	}
	if rd.SoftState != nil {
		lead := rd.SoftState.RaftState == etcdraft.StateLeader
		if lead && !g.leader.Load() {
			g.leadTerm = g.rn.BasicStatus().GetTerm()
			g.leadAt.Store(time.Now().UnixNano())
		}
		g.leader.Store(lead)
	}
	for _, m := range rd.Messages {
		w := n.out[m.GetTo()]
		if w == nil {
			continue
		}
		var err error
		buf, err = proto.MarshalOptions{}.MarshalAppend(buf[:0], m)
		if err != nil {
			panic(err)
		}
		var hdr [8]byte
		binary.BigEndian.PutUint32(hdr[:4], uint32(len(buf)))
		binary.BigEndian.PutUint32(hdr[4:], uint32(i))
		_, _ = w.Write(hdr[:])
		_, _ = w.Write(buf)
		n.sent.Add(1)
	}
	for _, e := range rd.CommittedEntries {
		if g.leader.Load() && e.GetTerm() == g.leadTerm && g.commitAt.Load() == 0 {
			g.commitAt.Store(time.Now().UnixNano())
		}
	}
	g.rn.Advance(rd)
	return buf
}

// dropPeer forgets a peer whose connection failed: its messages are
// dropped from now on, as raft expects of a lossy network.
func (n *etcdNode) dropPeer(id uint64) {
	_ = n.conns[id].Close()
	delete(n.out, id)
	delete(n.conns, id)
}

func (n *etcdNode) close() {
	if n.dead {
		return
	}
	n.dead = true
	_ = n.mux.Close()
	close(n.stop)
	n.wg.Wait()
}

func (c *etcdCluster) leader(p int) int {
	lead := -1
	for i, n := range c.nodes {
		if !n.dead && n.groups[p].leader.Load() {
			if lead >= 0 {
				return -1
			}
			lead = i
		}
	}
	return lead
}

func (c *etcdCluster) leaderCounts() []int {
	counts := make([]int, len(c.nodes))
	for p := range c.parts {
		if l := c.leader(p); l >= 0 {
			counts[l]++
		}
	}
	return counts
}

func (c *etcdCluster) waitLeaders(limit time.Duration) error {
	deadline := time.Now().Add(limit)
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
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d partitions without a leader after %v", c.parts-led, c.parts, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// failover kills victim (its Mux closed, its driver stopped) and times, for
// each partition it led, a survivor's leadership and the first commit of
// its term (the empty entry a new leader appends).
func (c *etcdCluster) failover(victim int, limit time.Duration) (elected, committed []time.Duration, err error) {
	var led []int
	for p := range c.parts {
		if c.leader(p) == victim {
			led = append(led, p)
		}
	}
	for _, n := range c.nodes {
		for _, g := range n.groups {
			g.leadAt.Store(0)
			g.commitAt.Store(0)
		}
	}
	t0 := time.Now()
	c.nodes[victim].close()
	elected = make([]time.Duration, len(led))
	committed = make([]time.Duration, len(led))
	pending := len(led)
	for pending > 0 && time.Since(t0) < limit {
		pending = 0
		for i, p := range led {
			for _, n := range c.nodes {
				if n.dead {
					continue
				}
				g := n.groups[p]
				if at := g.leadAt.Load(); at != 0 && elected[i] == 0 {
					elected[i] = time.Unix(0, at).Sub(t0)
				}
				if at := g.commitAt.Load(); at != 0 && committed[i] == 0 {
					committed[i] = time.Unix(0, at).Sub(t0)
				}
			}
			if committed[i] == 0 {
				pending++
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	if pending > 0 {
		return elected, committed, errors.New("some partitions had no commit on a survivor in time")
	}
	return elected, committed, nil
}

// openConns is the TCP connections between live nodes: each dials every
// other once.
func (c *etcdCluster) openConns() int {
	live := 0
	for _, n := range c.nodes {
		if !n.dead {
			live++
		}
	}
	return live * (live - 1)
}

func (c *etcdCluster) shutdown() {
	for _, n := range c.nodes {
		n.close()
	}
}
