package multiraft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	hraft "github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/raftmux"
	"github.com/seglog/seglog/internal/testutil"
	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// stallListener accepts connections and never reads them: a peer whose
// process is stopped (SIGSTOP) looks like this from outside.
func stallListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetReadBuffer(4096)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

func TestStalledPeerDoesNotStall(t *testing.T) {
	stalled := stallListener(t)
	// Small send buffers, so the stalled peer's connection fills with a
	// few entries rather than megabytes.
	mcfg := func(uint64) raftmux.Config {
		return raftmux.Config{Dialer: func(addr string, timeout time.Duration) (net.Conn, error) {
			c, err := net.DialTimeout("tcp", addr, timeout)
			if err == nil {
				_ = c.(*net.TCPConn).SetWriteBuffer(4096)
			}
			return c, err
		}}
	}
	// Groups 1 and 2 have node 4, which never reads, as a fourth voter
	// (quorum 3 of 4: the live three commit); 3 and 4 are the three live
	// nodes only.
	c := newClusterWith(t, 3, 4, Config{PeerQueue: 4, WriteTimeout: time.Minute}, mcfg, func(c *cluster) {
		c.peers[4] = stalled
		c.voters[1] = []uint64{1, 2, 3, 4}
		c.voters[2] = []uint64{1, 2, 3, 4}
	})
	c.waitLeaders()
	dropped := func() bool {
		for _, m := range c.members {
			if m.node.Stats().Dropped[4] > 0 {
				return true
			}
		}
		return false
	}
	// Heartbeats for node 4 fill its connection (it is only probed, so
	// no entries go to it); then the driver drops what does not fit
	// rather than wait, and group 1 commits all along.
	i := 0
	testutil.WaitFor(t, "messages to the stalled node 4 dropped while group 1 commits", func() bool {
		c.propose(1, fmt.Sprintf("filling-%d", i))
		i++
		return dropped()
	})
	// Every group, with node 4 or without, still commits.
	for _, g := range c.groups {
		for i := range 5 {
			c.propose(g, fmt.Sprintf("while-stalled-%d", i))
		}
	}
	for _, g := range c.groups {
		c.waitAgree(g, 5)
	}
}

// frame builds one wire frame.
// frame is a wire frame for group holding body, an encoded message whose
// entries carry no Data, followed by the entries' data (their lengths
// listed after the group id).
func frame(group uint64, body []byte, data ...[]byte) []byte {
	size := 8 + 4 + 4*len(data) + len(body)
	for _, d := range data {
		size += len(d)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = binary.BigEndian.AppendUint64(b, group)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	for _, d := range data {
		b = binary.BigEndian.AppendUint32(b, uint32(len(d)))
	}
	b = append(b, body...)
	for _, d := range data {
		b = append(b, d...)
	}
	return b
}

func TestGarbageRefused(t *testing.T) {
	c := newCluster(t, 3, 2, Config{})
	c.waitLeaders()
	target := c.members[1]
	n := target.node

	// Bytes that are not a raftmux header at all: the Mux refuses them.
	raw, err := net.Dial("tcp", target.addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = raw.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	testutil.WaitFor(t, "the mux refuses a header that is not one", func() bool {
		return target.mux.Stats().BadHeader > 0
	})
	_ = raw.Close()

	// Connections that pass the header, as a peer's would, then send
	// bad frames.
	mux, err := raftmux.Listen("127.0.0.1:0", raftmux.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	layer, err := mux.Register(DefaultGroup)
	if err != nil {
		t.Fatal(err)
	}
	send := func(b []byte) net.Conn {
		t.Helper()
		conn, err := layer.Dial(hraft.ServerAddress(target.addr), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	closes := func(conn net.Conn) {
		t.Helper()
		defer conn.Close()
		_ = conn.SetReadDeadline(time.Now().Add(testutil.WaitTimeout))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Fatal("the node wrote on a peer's connection")
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the node did not close a connection with a bad frame")
		}
	}
	before := n.Stats()
	// A length over MaxFrame: refused before anything is allocated for it.
	huge := binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF)
	closes(send(append(huge, make([]byte, 8)...)))
	// A length too short to hold the group id.
	closes(send(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, 3), 1)))
	// A body that is not a raft message.
	closes(send(frame(1, []byte{0xFF, 0xFF, 0xFF})))
	app := func(ents ...*pb.Entry) []byte {
		b, err := proto.Marshal(&pb.Message{Type: pb.MessageType_MsgApp.Enum(), To: new(uint64(2)), From: new(uint64(1)), Term: new(uint64(1)), Entries: ents})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ent := func(data []byte) *pb.Entry { return &pb.Entry{Term: new(uint64(1)), Index: new(uint64(1)), Data: data} }
	// More data lengths than the frame has room for.
	many := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, 8+4+8), 1)
	closes(send(append(binary.BigEndian.AppendUint32(many, 1<<20), make([]byte, 8)...)))
	// A data length past the frame's end.
	long := frame(1, app(ent(nil)), []byte("abcd"))
	binary.BigEndian.PutUint32(long[16:], 1<<20)
	closes(send(long))
	// Two data lengths for a message of one entry.
	closes(send(frame(1, app(ent(nil)), []byte("ab"), []byte("cd"))))
	// An entry's Data inside the message instead of after it.
	closes(send(frame(1, app(ent([]byte("inside"))), nil)))
	testutil.WaitFor(t, "seven bad frames counted", func() bool {
		return n.Stats().BadFrame >= before.BadFrame+7
	})

	// Well-formed messages the node must not step: for a group it does
	// not have, for another node, of a local type (a peer must not make
	// it campaign). They are dropped and the connection stays.
	msg := func(m *pb.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	hb := &pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), To: new(uint64(1)), From: new(uint64(2)), Term: new(uint64(0))}
	conn := send(frame(77, msg(hb)))
	defer conn.Close()
	testutil.WaitFor(t, "a message for an unknown group counted", func() bool {
		return n.Stats().UnknownGroup > before.UnknownGroup
	})
	_, termBefore, _ := n.Leader(1)
	hup := &pb.Message{Type: pb.MessageType_MsgHup.Enum(), To: new(uint64(1)), From: new(uint64(2))}
	notMe := &pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), To: new(uint64(9)), From: new(uint64(2))}
	if _, err := conn.Write(append(frame(1, msg(hup)), frame(1, msg(notMe))...)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "a local-type and a misaddressed message counted", func() bool {
		return n.Stats().Misaddressed >= before.Misaddressed+2
	})
	// The cluster goes on committing, and the local MsgHup started no
	// election (no new term) on a cluster with a healthy leader.
	for _, g := range c.groups {
		c.propose(g, "after-garbage")
	}
	if _, term, _ := n.Leader(1); term != termBefore {
		t.Fatalf("term moved from %d to %d after garbage", termBefore, term)
	}
}

// campaign makes this node start an election for group id.
func (n *Node) campaign(id uint64) error {
	var err error
	if derr := n.do(context.Background(), func() {
		g := n.groups[id]
		if g == nil {
			err = ErrGroupNotFound
			return
		}
		err = g.rn.Campaign()
		n.mark(g)
	}); derr != nil {
		return derr
	}
	return err
}

// waiting is how many of group id's proposals wait for their entry.
func (n *Node) waiting(id uint64) int {
	var k int
	_ = n.do(context.Background(), func() {
		if g := n.groups[id]; g != nil {
			k = len(g.waiting) + len(g.proposed)
		}
	})
	return k
}

func TestRemoveGroupFailsWaiters(t *testing.T) {
	// An election timeout far beyond the test, so the leader keeps
	// leading (CheckQuorum) after its follower dies, and proposals wait
	// for a majority that is gone; the election is started by hand.
	c := newCluster(t, 2, 1, Config{ElectionTick: 1 << 30})
	n1, n2 := c.members[1].node, c.members[2].node
	// Messages to a peer not yet connected are dropped, and with this
	// timeout nothing would retry a lost vote: connect first.
	testutil.WaitFor(t, "nodes 1 and 2 connected both ways", func() bool {
		return n1.peers[2].up.Load() && n2.peers[1].up.Load()
	})
	if err := n1.campaign(1); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "node 1 leads group 1", func() bool { return c.leader(1) == 1 })
	c.propose(1, "committed")
	c.stop(c.members[2])

	const k = 3
	errs := make(chan error, k)
	for i := range k {
		go func() {
			_, err := n1.Propose(context.Background(), 1, fmt.Appendf(nil, "stuck-%d", i))
			errs <- err
		}()
	}
	testutil.WaitFor(t, "three proposals wait for a majority", func() bool { return n1.waiting(1) == k })
	if err := n1.RemoveGroup(1); err != nil {
		t.Fatal(err)
	}
	for range k {
		if err := <-errs; !errors.Is(err, ErrGroupRemoved) {
			t.Fatalf("waiting proposal: %v, want ErrGroupRemoved", err)
		}
	}
	if _, err := n1.Propose(context.Background(), 1, []byte("late")); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("propose after RemoveGroup: %v", err)
	}
	if err := n1.RemoveGroup(1); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("second RemoveGroup: %v", err)
	}
	if _, _, err := n1.Leader(1); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("Leader after RemoveGroup: %v", err)
	}
}

func TestSettleMatchesIndexAndTerm(t *testing.T) {
	entry := func(index, term uint64) *pb.Entry {
		return &pb.Entry{Index: new(index), Term: new(term), Type: pb.EntryType_EntryNormal.Enum()}
	}
	prop := func(index, term uint64) *proposal {
		return &proposal{index: index, term: term, done: make(chan result, 1), placed: make(chan struct{})}
	}
	kept := prop(8, 3)     // beyond the applied entries, of their term: may still commit
	ok := prop(5, 2)       // its entry applied: committed
	replaced := prop(6, 2) // another leader's entry applied at its index
	beyond := prop(9, 2)   // its index can only hold entries of term 3 or later now
	g := &group{waiting: []*proposal{ok, replaced, beyond, kept}}
	settle(g, []*pb.Entry{entry(5, 2), entry(6, 3), entry(7, 3)})
	if r := <-ok.done; r.err != nil || r.index != 5 {
		t.Fatalf("committed proposal: %+v", r)
	}
	for name, p := range map[string]*proposal{"replaced": replaced, "beyond": beyond} {
		if r := <-p.done; !errors.Is(r.err, ErrProposalDropped) {
			t.Fatalf("%s proposal: %+v, want ErrProposalDropped", name, r)
		}
	}
	if len(g.waiting) != 1 || g.waiting[0] != kept {
		t.Fatalf("still waiting: %v, want only the proposal at 8 of term 3", g.waiting)
	}
	settle(g, []*pb.Entry{entry(8, 3)})
	if r := <-kept.done; r.err != nil || r.index != 8 {
		t.Fatalf("proposal at 8: %+v", r)
	}
}

// TestCaughtUpSteadyWhenIdle: on an idle, healthy group the leader's
// caught-up set (the ISR clients see) stays whole from one election
// timeout to the next. It once came from raft's RecentActive alone,
// which CheckQuorum clears every election timeout, and a sample taken
// before the followers' next heartbeat answers showed the leader alone.
func TestCaughtUpSteadyWhenIdle(t *testing.T) {
	c, g, lead := caughtUpGroup(t)
	// Every tick for four election timeouts (of one leader: a sample
	// from a node that lost the leadership under load says nothing).
	for i := 0; i < 4*DefaultElectionTick; i++ {
		st, err := c.members[lead].node.Status(context.Background(), g)
		if err != nil {
			t.Fatal(err)
		}
		if st.RaftState != etcdraft.StateLeader {
			lead = c.leader(g)
			i = -1
			continue
		}
		if len(st.CaughtUp) != 3 {
			t.Fatalf("sample %d (every tick): caught up %v on an idle group, want all three", i, st.CaughtUp)
		}
		time.Sleep(20 * time.Millisecond) // paces the samples, one a tick
	}
}
