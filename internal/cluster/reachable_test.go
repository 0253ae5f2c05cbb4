package cluster

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/reach"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// hangUpAddr returns the address of a listener that closes every
// connection it accepts without a byte: what a raftmux port not serving
// the group, or another service given the raftmux header, looks like.
func hangUpAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestUnreachableVoterLogged: a node restarted with two voters'
// addresses wrong (a user's walk mistyped one port in --voters: the node
// waited for its controller without a word) logs each at Warn, naming
// the voter, the address it dials and the error (connection refused at
// a closed port; a connection closed without an answer at a port that is
// not a seglog node's), and ClusterID, given up on, says which voters it
// could not reach and why. The other two nodes, given the right
// addresses, reach it and each other: only the node with the wrong list
// warns.
func TestUnreachableVoterLogged(t *testing.T) {
	c := newCluster(t, 3)
	c.controller()
	c.stop(1)

	refused, hungUp := closedAddr(t), hangUpAddr(t)
	wrong := maps.Clone(c.voters)
	wrong[2], wrong[3] = refused, hungUp
	rec := &testutil.LogRecords{}
	c.configure = func(tn *tnode, cfg *Config) {
		if tn.id == 1 {
			cfg.Voters = wrong
			cfg.Logger = slog.New(rec)
			cfg.reachWarnAfter, cfg.reachEvery = 100*time.Millisecond, time.Hour
		}
	}
	c.restart(1)

	testutil.WaitFor(t, "node 1 to warn that voters 2 and 3 cannot be reached", func() bool {
		return rec.Find("WARN", "cannot reach a voter", "voter=2", "addr="+refused, "connection refused") != "" &&
			rec.Find("WARN", "cannot reach a voter", "voter=3", "addr="+hungUp, "closed the connection without answering") != ""
	})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.nodes[1].node.ClusterID(ctx)
	var we *WaitError
	if !errors.As(err, &we) || !errors.Is(err, context.Canceled) {
		t.Fatalf("ClusterID with a cancelled context: %v, want a *WaitError wrapping context.Canceled", err)
	}
	msg := err.Error()
	if !we.Unreachable() || !strings.Contains(msg, "could not reach voter 2 at "+refused) || !strings.Contains(msg, "connection refused") ||
		!strings.Contains(msg, "voter 3 at "+hungUp) {
		t.Errorf("ClusterID's error: %v, want it to name voters 2 and 3, their addresses and errors", err)
	}
}

// TestVoterRecoveryLogged: a voter that stops is reported by the others
// once it has been unreachable a while, and when it is back each says so
// once, at Info.
func TestVoterRecoveryLogged(t *testing.T) {
	recs := map[int32]*testutil.LogRecords{1: {}, 2: {}, 3: {}}
	c := newClusterConfigured(t, 3, false, func(tn *tnode, cfg *Config) {
		if r := recs[tn.id]; r != nil {
			cfg.Logger = slog.New(r)
		}
		cfg.reachWarnAfter, cfg.reachEvery = 100*time.Millisecond, time.Hour
	})
	c.controller()
	c.stop(3)
	addr := c.voters[3]
	testutil.WaitFor(t, "nodes 1 and 2 to warn that voter 3 cannot be reached", func() bool {
		return recs[1].Find("WARN", "voter=3", "addr="+addr) != "" && recs[2].Find("WARN", "voter=3", "addr="+addr) != ""
	})
	c.restart(3)
	testutil.WaitFor(t, "nodes 1 and 2 to log that voter 3 is reached again", func() bool {
		return recs[1].Find("INFO", "reached a voter again", "voter=3", "addr="+addr) != "" &&
			recs[2].Find("INFO", "reached a voter again", "voter=3", "addr="+addr) != ""
	})
	for id := int32(1); id <= 3; id++ {
		if l := recs[id].Find("WARN", "cannot reach a voter", "voter=1"); l != "" {
			t.Errorf("node %d warned about node 1, which never stopped: %s", id, l)
		}
	}
}

// TestAnswerFromAnotherNode: an answer to an RPC sent to voter 2 that
// comes from node 3 (Voters gives 2 node 3's address) is an error raft
// sees, so it does not count node 3's vote as node 2's, and the tracker
// records it as voter 2 unreachable.
func TestAnswerFromAnotherNode(t *testing.T) {
	tr := reach.New(reach.Config{Peers: map[uint64]string{2: "h3:1"}})
	rt := &reachTransport{reach: tr, addrs: voterAddrs{2: "h3:1"}}
	err := rt.note("2", "h2:1", []byte("3"), nil)
	var wrong *reach.WrongNodeError
	if !errors.As(err, &wrong) || wrong.Want != "2" || wrong.Got != "3" {
		t.Fatalf("note = %v, want a WrongNodeError", err)
	}
	if ps := tr.Peers(); len(ps) != 1 || ps[0].Addr != "h3:1" || !errors.As(ps[0].Err, &wrong) {
		t.Fatalf("Peers = %+v, want voter 2 failed at the address dialled", ps)
	}
	if err := rt.note("2", "h2:1", []byte("2"), nil); err != nil {
		t.Fatalf("an answer from the node dialled: %v", err)
	}
	if err := rt.note("2", "h2:1", nil, raft.ErrTransportShutdown); !errors.Is(err, raft.ErrTransportShutdown) || tr.Peers()[0].Err != nil {
		t.Fatalf("this node's own shutdown: %v, %+v; want the error returned and nothing recorded", err, tr.Peers())
	}
}

// TestStartStoppedAsking: a first start (an empty DIR) whose other
// voters cannot be reached, stopped while it asks them whether it is new,
// fails with a *WaitError naming each voter, the address dialled and the
// error, not only the context's.
func TestStartStoppedAsking(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused, hungUp := closedAddr(t), hangUpAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &testutil.LogRecords{}
	c := &tcluster{t: t, fs: vfs.NewMem(), nodes: map[int32]*tnode{},
		voters: map[int32]string{1: ln.Addr().String(), 2: refused, 3: hungUp},
		configure: func(_ *tnode, cfg *Config) {
			cfg.Logger, cfg.StartContext = slog.New(rec), ctx
			cfg.reachWarnAfter, cfg.reachEvery = 100*time.Millisecond, time.Hour
		}}
	tn := &tnode{id: 1, dir: "/n1", addr: ln.Addr().String(), kafka: "kafka1.test:9091"}
	c.nodes[1] = tn
	started := make(chan error, 1)
	go func() { started <- c.startWith(tn, 1, ln) }()
	testutil.WaitFor(t, "node 1 to warn that voter 2 cannot be reached", func() bool {
		return rec.Find("WARN", "cannot reach a voter", "voter=2", "addr="+refused) != ""
	})
	cancel()
	err = <-started
	if err == nil {
		c.stop(1)
		t.Fatal("Start succeeded, want it stopped by its context")
	}
	var we *WaitError
	if !errors.As(err, &we) || !we.Blank || !errors.Is(err, context.Canceled) {
		t.Fatalf("Start: %v, want a *WaitError (Blank) wrapping context.Canceled", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "whether this node is new") || !strings.Contains(msg, "voter 2 at "+refused) ||
		!strings.Contains(msg, "connection refused") {
		t.Errorf("Start's error: %v, want it to say what it waited for and name voter 2, its address and error", err)
	}
}

// TestForwardAnswerFromAnotherNode: a node whose Voters give voter 2
// node 3's address (a list copied with two ports swapped) does not take
// node 3's forwarding answer for node 2's: the round trip fails with a
// WrongNodeError (which it reports to the tracker for voter 2).
func TestForwardAnswerFromAnotherNode(t *testing.T) {
	c := newCluster(t, 3)
	c.controller()
	c.stop(1)
	swapped := maps.Clone(c.voters)
	swapped[2] = c.voters[3]
	c.configure = func(tn *tnode, cfg *Config) {
		if tn.id == 1 {
			cfg.Voters = swapped
		}
	}
	c.restart(1)
	n := c.nodes[1].node
	_, err := n.roundTrip(ctxTimeout(t), 2, request{Op: opWhois, Broker: 1})
	var wrong *reach.WrongNodeError
	if !errors.As(err, &wrong) || wrong.Want != "2" || wrong.Got != "3" {
		t.Fatalf("a whois sent to voter 2 at node 3's address: %v, want a WrongNodeError", err)
	}
	// The right node answers as itself.
	if _, err := n.roundTrip(ctxTimeout(t), 3, request{Op: opWhois, Broker: 1}); err != nil {
		t.Fatalf("a whois sent to voter 3: %v", err)
	}
}

// gatedLayer is a raft StreamLayer on a listener the test holds
// throughout: until up is set it closes every connection it accepts (a
// voter that is down; no other process can take the port meanwhile).
type gatedLayer struct {
	net.Listener
	up *atomic.Bool
}

func (g *gatedLayer) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil || g.up.Load() {
			return c, err
		}
		c.Close()
	}
}

func (g *gatedLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

// TestAppendEntriesWaitsForAPeerBack: an AppendEntries carrying
// replication to a voter that hangs up keeps trying, and succeeds once
// the voter answers again, so hashicorp/raft counts no failure (and adds
// no backoff) for a restart; a heartbeat to the same voter fails at once;
// a closing node stops the tries.
func TestAppendEntriesWaitsForAPeerBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	var up atomic.Bool
	peer := raft.NewNetworkTransport(&gatedLayer{Listener: ln, up: &up}, 3, time.Second, io.Discard)
	defer peer.Close()
	tr := reach.New(reach.Config{Peers: map[uint64]string{2: addr}, Logger: slog.New(slog.DiscardHandler)})
	client, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	stop := make(chan struct{})
	rt := &reachTransport{NetworkTransport: client, reach: tr, addrs: voterAddrs{2: addr}, stop: stop}

	var hb raft.AppendEntriesResponse
	if err := rt.AppendEntries("2", raft.ServerAddress(addr), &raft.AppendEntriesRequest{Term: 1}, &hb); err == nil {
		t.Fatal("a heartbeat to a voter that hangs up succeeded")
	}
	// The voter comes back once the tracker has seen a failed try of
	// the AppendEntries below: the error it records replaces the marker.
	marker := errors.New("marker: no try of the AppendEntries yet")
	tr.Failed(2, addr, marker)
	served := make(chan struct{})
	go func() {
		defer close(served)
		for errors.Is(tr.Peers()[0].Err, marker) {
			runtime.Gosched()
		}
		up.Store(true)
		rpc := <-peer.Consumer()
		rpc.Respond(&raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ID: []byte("2")}, Term: 1, Success: true}, nil)
	}()
	req := &raft.AppendEntriesRequest{Term: 1, PrevLogEntry: 4, PrevLogTerm: 1, LeaderCommitIndex: 4,
		Entries: []*raft.Log{{Index: 5, Term: 1, Type: raft.LogCommand, Data: []byte("x")}}}
	var resp raft.AppendEntriesResponse
	if err := rt.AppendEntries("2", raft.ServerAddress(addr), req, &resp); err != nil || !resp.Success {
		t.Fatalf("AppendEntries to a voter back within appendRetryFor = %v, success %v", err, resp.Success)
	}
	<-served

	// A closing node stops the tries at once: the voter gone again, one
	// try, whose error is returned.
	peer.Close()
	close(stop)
	if err := rt.AppendEntries("2", raft.ServerAddress(addr), req, &resp); err == nil {
		t.Fatal("AppendEntries to a voter that is gone succeeded")
	}
}

// TestRetryUnreachable: retried while the error is one a retry may cure,
// until the time given; not after an answer or this node's shutdown.
func TestRetryUnreachable(t *testing.T) {
	refused := errors.New("connect: connection refused")
	never := make(chan struct{})
	tries := 0
	err := retryUnreachable(func() error {
		if tries++; tries < 4 {
			return refused
		}
		return nil
	}, unreachable, time.Millisecond, time.Minute, never)
	if err != nil || tries != 4 {
		t.Errorf("refused three times, then answered: %v after %d tries", err, tries)
	}
	for _, stopErr := range []error{raft.ErrTransportShutdown, &reach.WrongNodeError{Want: "2", Got: "3"}} {
		tries = 0
		err := retryUnreachable(func() error { tries++; return stopErr }, unreachable, time.Millisecond, time.Minute, never)
		if err != stopErr || tries != 1 {
			t.Errorf("%v: returned %v after %d tries, want it after one", stopErr, err, tries)
		}
	}
	tries = 0
	if err := retryUnreachable(func() error { tries++; return refused }, unreachable, time.Millisecond, 20*time.Millisecond, never); err != refused || tries < 2 {
		t.Errorf("always refused: %v after %d tries, want the error after more than one", err, tries)
	}
	if !isHeartbeat(&raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{Addr: []byte("h1:1")}, Term: 3}) ||
		isHeartbeat(&raft.AppendEntriesRequest{Term: 3, PrevLogEntry: 1}) ||
		isHeartbeat(&raft.AppendEntriesRequest{Term: 3, LeaderCommitIndex: 1}) {
		t.Error("isHeartbeat does not tell raft's heartbeat from its replication")
	}
}
