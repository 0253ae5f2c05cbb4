package raftmux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/testutil"
)

func listen(t *testing.T, cfg Config) *Mux {
	t.Helper()
	m, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func register(t *testing.T, m *Mux, group string) *Layer {
	t.Helper()
	l, err := m.Register(group)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// accepted runs Accept once in the background.
func accepted(l *Layer) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	return ch
}

// roundTrip checks that a connection dialled for group reaches the group's
// Accept and carries bytes both ways.
func roundTrip(t *testing.T, from, to *Layer) {
	t.Helper()
	got := accepted(to)
	c, err := from.Dial(raft.ServerAddress(to.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, ok := <-got
	if !ok {
		t.Fatalf("Accept of %q failed", to.Group())
	}
	defer s.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("server read %q, %v", buf, err)
	}
	if _, err := s.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "pong" {
		t.Fatalf("client read %q, %v", buf, err)
	}
}

// closedByPeer reports whether the Mux closed c: a read ends in EOF or a
// reset rather than a timeout.
func closedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open: %v", err)
	}
}

func TestDialReachesTheNamedGroup(t *testing.T) {
	a, b := listen(t, Config{}), listen(t, Config{})
	a1, a2 := register(t, a, "topic-1"), register(t, a, "topic-2")
	b1, b2 := register(t, b, "topic-1"), register(t, b, "topic-2")
	if a1.Addr().String() != a.Addr().String() || a2.Addr().String() != a.Addr().String() {
		t.Fatalf("layers report %v and %v, the listener is %v", a1.Addr(), a2.Addr(), a.Addr())
	}
	roundTrip(t, a1, b1)
	roundTrip(t, a2, b2)
	roundTrip(t, b2, a2)
	// Accepted is counted after Accept took the connection (deliver).
	testutil.WaitFor(t, "b's two connections to be counted", func() bool { return b.Stats().Accepted >= 2 })
	if s := b.Stats(); s.Accepted != 2 {
		t.Fatalf("stats %+v, want 2 accepted", s)
	}
}

func TestRegisterRefuses(t *testing.T) {
	m := listen(t, Config{})
	register(t, m, "g")
	if _, err := m.Register("g"); !errors.Is(err, ErrDuplicateGroup) {
		t.Fatalf("second Register: %v", err)
	}
	for _, id := range []string{"", strings.Repeat("x", MaxGroupID+1)} {
		if _, err := m.Register(id); !errors.Is(err, ErrBadGroupID) {
			t.Fatalf("Register of a %d-byte id: %v", len(id), err)
		}
	}
	if _, err := m.Register(strings.Repeat("x", MaxGroupID)); err != nil {
		t.Fatalf("Register of a %d-byte id: %v", MaxGroupID, err)
	}
}

// TestBadHeadersAreClosed sends headers the Mux must refuse, each on its own
// connection, and checks after each that the connection was closed and the
// listener still delivers a good one.
func TestBadHeadersAreClosed(t *testing.T) {
	m := listen(t, Config{HeaderTimeout: 200 * time.Millisecond, UnknownGroupWait: -1})
	peer := listen(t, Config{})
	good, from := register(t, m, "good"), register(t, peer, "good")

	header := func(version byte, n int, id string) []byte {
		b := append(magic[:0:0], magic[:]...)
		b = append(b, version)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
		return append(b, id...)
	}
	cases := []struct {
		name   string
		send   []byte
		hangUp bool // close our end after sending
		want   func(Stats) uint64
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false, func(s Stats) uint64 { return s.BadHeader }},
		{"version", header(Version+1, 4, "good"), false, func(s Stats) uint64 { return s.BadHeader }},
		{"empty id", header(Version, 0, ""), false, func(s Stats) uint64 { return s.BadHeader }},
		{"oversize id", header(Version, MaxGroupID+1, strings.Repeat("g", 64)), false, func(s Stats) uint64 { return s.BadHeader }},
		{"max length", header(Version, 0xffff, ""), false, func(s Stats) uint64 { return s.BadHeader }},
		{"unknown group", header(Version, 5, "other"), false, func(s Stats) uint64 { return s.Unknown }},
		// A slow sender: half a header, then nothing until the deadline.
		{"slow", header(Version, 4, "go"), false, func(s Stats) uint64 { return s.Timeout }},
		{"nothing", nil, false, func(s Stats) uint64 { return s.Timeout }},
		// A peer that gives up halfway is counted apart from a bad one.
		{"hang up", header(Version, 4, "go"), true, func(s Stats) uint64 { return s.Dropped }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.want(m.Stats())
			c, err := net.Dial("tcp", m.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tc.hangUp {
				c.Close()
			} else {
				closedByPeer(t, c)
			}
			testutil.WaitFor(t, "the refusal to be counted", func() bool { return tc.want(m.Stats()) == before+1 })
			roundTrip(t, from, good)
		})
	}
	// The good connection of each case is counted by the routing
	// goroutine after Accept took it, so the last count may come after
	// the round trip ends: wait for it rather than read it once.
	testutil.WaitFor(t, "every good connection to be counted", func() bool { return m.Stats().Accepted == uint64(len(cases)) })
	if s := m.Stats(); s.Accepted != uint64(len(cases)) || s.Overflow != 0 {
		t.Fatalf("stats %+v: want %d accepted and no overflow", s, len(cases))
	}
}

// TestOverflowClosesAtOnce holds MaxPending connections silent and checks
// that one more is closed without waiting for the header deadline.
func TestOverflowClosesAtOnce(t *testing.T) {
	m := listen(t, Config{MaxPending: 2, HeaderTimeout: time.Hour})
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	testutil.WaitFor(t, "both idle connections to be pending", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.pending) == 2
	})
	c, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	closedByPeer(t, c)
	if s := m.Stats(); s.Overflow != 1 {
		t.Fatalf("stats %+v, want 1 overflow", s)
	}
	// Closing the Mux interrupts the pending header reads.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range idle {
		closedByPeer(t, c)
	}
}

// TestConnWaitsForALateGroup dials a group the accepting node has not
// registered yet, as a peer that created a partition first does, and
// registers it while the connection waits.
func TestConnWaitsForALateGroup(t *testing.T) {
	m := listen(t, Config{UnknownGroupWait: time.Hour})
	peer := listen(t, Config{})
	from := register(t, peer, "late-0")
	c, err := from.Dial(raft.ServerAddress(m.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.WaitFor(t, "the connection to wait for its group", func() bool { return m.Stats().Waiting == 1 })
	// Registering another group wakes the waiter, which must go on waiting.
	register(t, m, "late-1")
	l := register(t, m, "late-0")
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(s, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the connection to be counted", func() bool { return m.Stats().Accepted >= 1 })
	if st := m.Stats(); st.Waiting != 0 || st.Accepted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestLayerClose closes one group: its Accept and Dial fail, its
// connections close on both ends, the id can be registered again, and the
// listener and the other group go on.
func TestLayerClose(t *testing.T) {
	m, peer := listen(t, Config{UnknownGroupWait: -1}), listen(t, Config{})
	gone, stays := register(t, m, "gone"), register(t, m, "stays")
	fromGone, fromStays := register(t, peer, "gone"), register(t, peer, "stays")

	got := accepted(gone)
	in, err := fromGone.Dial(raft.ServerAddress(m.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	srv := <-got
	out, err := gone.Dial(raft.ServerAddress(peer.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if n := gone.OpenConns(); n != 2 {
		t.Fatalf("%d open connections, want 2", n)
	}

	blocked := make(chan error, 1)
	go func() { _, err := gone.Accept(); blocked <- err }()
	if err := gone.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; !errors.Is(err, ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	if _, err := gone.Dial(raft.ServerAddress(peer.Addr().String()), time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("Dial after Close: %v", err)
	}
	closedByPeer(t, in) // the peer's end of the accepted connection
	if _, err := srv.Read(make([]byte, 1)); err == nil {
		t.Fatal("the accepted connection still reads")
	}
	if _, err := out.Write([]byte("x")); err == nil {
		t.Fatal("the dialled connection still writes")
	}

	// The group is unknown now: a new connection for it is refused.
	c, err := fromGone.Dial(raft.ServerAddress(m.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	closedByPeer(t, c)
	c.Close()

	roundTrip(t, fromStays, stays)
	again := register(t, m, "gone")
	roundTrip(t, fromGone, again)
}

func TestMuxCloseClosesEverything(t *testing.T) {
	m, peer := listen(t, Config{}), listen(t, Config{})
	l, from := register(t, m, "g"), register(t, peer, "g")
	got := accepted(l)
	c, err := from.Dial(raft.ServerAddress(m.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-got
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	closedByPeer(t, c)
	if _, err := l.Accept(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Accept after the Mux closed: %v", err)
	}
	if _, err := m.Register("h"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Register after the Mux closed: %v", err)
	}
	if c, err := net.Dial("tcp", m.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the listener still accepts")
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// fsm records the commands applied to one raft instance.
type fsm struct {
	mu   sync.Mutex
	cmds []string
}

func (f *fsm) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cmds = append(f.cmds, string(l.Data))
	return nil
}

func (f *fsm) has(cmd string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cmds {
		if c == cmd {
			return true
		}
	}
	return false
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots here") }
func (f *fsm) Restore(io.ReadCloser) error         { return errors.New("no snapshots here") }

// member is one raft instance of a group.
type member struct {
	raft  *raft.Raft
	fsm   *fsm
	layer *Layer
}

// startGroup starts one raft instance of group on each Mux, over in-memory
// stores, and bootstraps them as one configuration.
func startGroup(t *testing.T, muxes []*Mux, group string) []*member {
	t.Helper()
	var servers []raft.Server
	for i, m := range muxes {
		servers = append(servers, raft.Server{
			ID:      raft.ServerID(fmt.Sprint(i + 1)),
			Address: raft.ServerAddress(m.Addr().String()),
		})
	}
	var ms []*member
	for i, m := range muxes {
		layer := register(t, m, group)
		trans := raft.NewNetworkTransport(layer, 2, 10*time.Second, io.Discard)
		conf := raft.DefaultConfig()
		conf.LocalID = servers[i].ID
		conf.LogOutput = io.Discard
		conf.HeartbeatTimeout = 200 * time.Millisecond
		conf.ElectionTimeout = 200 * time.Millisecond
		conf.LeaderLeaseTimeout = 100 * time.Millisecond
		store := raft.NewInmemStore()
		f := &fsm{}
		r, err := raft.NewRaft(conf, f, store, store, raft.NewInmemSnapshotStore(), trans)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			t.Fatal(err)
		}
		ms = append(ms, &member{raft: r, fsm: f, layer: layer})
		t.Cleanup(func() { _ = r.Shutdown().Error() })
	}
	return ms
}

// applyEverywhere applies cmd through the group's leader, retrying while
// leadership moves, and waits until every running member applied it.
func applyEverywhere(t *testing.T, group []*member, cmd string) {
	t.Helper()
	testutil.WaitFor(t, "an Apply of "+cmd+" to succeed", func() bool {
		for _, m := range group {
			if m.raft.State() == raft.Leader {
				return m.raft.Apply([]byte(cmd), 5*time.Second).Error() == nil
			}
		}
		return false
	})
	for _, m := range group {
		if m.raft.State() == raft.Shutdown {
			continue
		}
		testutil.WaitFor(t, cmd+" to be applied on every member", func() bool { return m.fsm.has(cmd) })
	}
}

// TestRaftGroupsShareOnePort runs two raft groups of three members over
// three Muxes (one port per node), elects and applies in both, then shuts
// one group down on every node and checks the other still commits.
func TestRaftGroupsShareOnePort(t *testing.T) {
	muxes := []*Mux{listen(t, Config{}), listen(t, Config{}), listen(t, Config{})}
	a := startGroup(t, muxes, "__cluster_metadata-0")
	b := startGroup(t, muxes, "orders-3")
	for i := range 3 {
		applyEverywhere(t, a, fmt.Sprintf("a%d", i))
		applyEverywhere(t, b, fmt.Sprintf("b%d", i))
	}
	for _, m := range muxes {
		if s := m.Stats(); s.BadHeader+s.Timeout+s.Unknown+s.Overflow != 0 {
			t.Fatalf("a Mux refused raft's own connections: %+v", s)
		}
	}

	for _, m := range a {
		if err := m.raft.Shutdown().Error(); err != nil {
			t.Fatal(err)
		}
		// raft closes its transport, and with it the Layer.
		testutil.WaitFor(t, "group a's layer to close", func() bool { return m.layer.OpenConns() == 0 })
		if _, err := m.layer.Accept(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Accept of a shut-down group: %v", err)
		}
	}
	applyEverywhere(t, b, "after a closed")

	// Group b survives the death of one node (its Mux closed) too.
	var dead int
	for i, m := range b {
		if m.raft.State() == raft.Leader {
			dead = i
		}
	}
	if err := b[dead].raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	if err := muxes[dead].Close(); err != nil {
		t.Fatal(err)
	}
	applyEverywhere(t, b, "after a node died")
}
