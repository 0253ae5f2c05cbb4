// Package raftmux runs many hashicorp/raft groups over one TCP listener.
//
// A seglog cluster node has one raft port (--raft-listen) but one raft group
// per partition plus the metadata group. hashicorp/raft's NetworkTransport
// wants a raft.StreamLayer of its own (a net.Listener and a Dial), so a Mux
// owns the node's one listener and hands out a Layer per group id, such as
// "__cluster_metadata-0" or "orders-3":
//
//	mux, err := raftmux.Listen("127.0.0.1:9093", raftmux.Config{})
//	layer, err := mux.Register("orders-3")
//	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
//		Stream: layer, MaxPool: 2, Timeout: 10 * time.Second})
//
// A Layer's Dial opens a TCP connection and writes a header naming the group
// before raft's own bytes; the Mux's accept loop reads that header under a
// deadline and hands the connection to that group's Accept. Every group of a
// node therefore has the same raft address (the listener's), and raft's
// ServerID tells the nodes apart.
//
// The header is
//
//	"SLRM" | version (1 byte, 1) | group id length (2 bytes, big endian) | group id
//
// with the id 1 to MaxGroupID bytes long. A connection whose header is not
// that (wrong magic or version, an empty or oversize id), does not arrive
// within Config.HeaderTimeout, or names a group that is not registered within
// Config.UnknownGroupWait, is closed; the listener keeps serving. There is
// no answer to the header: a refused dialer sees its first RPC fail, which
// raft treats like any unreachable peer (it backs off and retries).
//
// Limits: every group keeps its own connections, so two nodes hold about
// groups × (NetworkTransport MaxPool + 1 pipeline) connections between them
// in each direction, each with hashicorp/raft's 256 KiB read or write
// buffer. docs/cluster.md has the measured cost.
package raftmux

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// MaxGroupID is the longest group id a header may carry, in bytes. A Kafka
// topic name is at most 249 bytes; with "-" and a partition number a
// partition's id fits in 261, so 512 leaves room without letting a peer make
// the accept side read much.
const MaxGroupID = 512

// Version is the header version this package writes and accepts.
const Version = 1

// magic opens every header, so a stray client (an HTTP probe, a Kafka client
// pointed at the raft port) is told apart from a peer by its first bytes.
var magic = [4]byte{'S', 'L', 'R', 'M'}

// headerFixed is the header's size before the group id.
const headerFixed = len(magic) + 1 + 2

// Defaults for Config's zero fields.
const (
	DefaultHeaderTimeout    = 5 * time.Second
	DefaultUnknownGroupWait = 500 * time.Millisecond
	DefaultMaxPending       = 8192
)

// Errors the Mux and its Layers return.
var (
	// ErrClosed is returned by Accept, Dial and Register once the Layer or
	// Mux is closed. It is net.ErrClosed, so callers that test for a closed
	// listener recognise it.
	ErrClosed = net.ErrClosed
	// ErrDuplicateGroup is returned by Register for a group id that already
	// has an open Layer.
	ErrDuplicateGroup = errors.New("raftmux: group already registered")
	// ErrBadGroupID is returned by Register for an empty or oversize id.
	ErrBadGroupID = errors.New("raftmux: group id must be 1 to 512 bytes")
	// ErrBadHeader describes a refused inbound header (in Stats, never to
	// the peer, which only sees the connection close).
	ErrBadHeader = errors.New("raftmux: bad header")
)

// Config tunes a Mux; the zero value takes the defaults.
type Config struct {
	// HeaderTimeout bounds how long the accept side waits for a new
	// connection's header; a peer slower than that is closed. It only
	// covers the header: raft's own deadlines take over afterwards.
	HeaderTimeout time.Duration
	// UnknownGroupWait is how long a connection naming a group that is not
	// registered here waits for it to be registered before it is closed.
	// When a partition is created every replica registers it at about the
	// same time, and a short wait keeps the first vote requests from being
	// lost to that race; a longer one would only hold sockets, since raft
	// retries a refused peer anyway. Negative means close at once.
	UnknownGroupWait time.Duration
	// MaxPending bounds the connections whose header is being read or
	// whose group is awaited; more are closed at once, so a flood of idle
	// connections costs bounded goroutines and sockets. It must exceed a
	// legitimate burst: when every group elects at once (a node starting,
	// or a peer dying) a node with G groups is dialled about G × 2 × 2
	// times, and at 1024 bench/multiraft saw 73 of 9,850 connections of
	// 300 groups refused on a loaded machine, each a failed vote.
	MaxPending int
	// Dialer opens outbound connections; nil means a net.Dialer.
	Dialer func(address string, timeout time.Duration) (net.Conn, error)
}

func (c Config) withDefaults() Config {
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = DefaultHeaderTimeout
	}
	if c.UnknownGroupWait == 0 {
		c.UnknownGroupWait = DefaultUnknownGroupWait
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.Dialer == nil {
		c.Dialer = func(address string, timeout time.Duration) (net.Conn, error) {
			return net.DialTimeout("tcp", address, timeout)
		}
	}
	return c
}

// Stats counts what a Mux's accept loop did, for tests and measurements.
type Stats struct {
	Accepted  uint64 // connections delivered to a group
	BadHeader uint64 // closed for a malformed header (magic, version, length)
	Timeout   uint64 // closed because the header did not arrive in time
	Unknown   uint64 // closed because the group was not registered in time
	Overflow  uint64 // closed at once because MaxPending were pending
	Dropped   uint64 // the peer hung up (or the Mux closed) before the header was read
	Waiting   int    // now waiting for their group to be registered
}

// Mux owns one listener and the Layers of the groups served on it. Its
// methods are safe for concurrent use.
type Mux struct {
	ln   net.Listener
	cfg  Config
	done chan struct{} // closed by Close
	wg   sync.WaitGroup
	sem  chan struct{} // one token per pending connection

	mu         sync.Mutex
	closed     bool
	groups     map[string]*Layer
	registered chan struct{}         // closed and replaced on every Register
	pending    map[net.Conn]struct{} // header not yet read or group awaited
	stats      Stats
}

// Listen opens a TCP listener on address and serves it.
func Listen(address string, cfg Config) (*Mux, error) {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return nil, err
	}
	return New(ln, cfg), nil
}

// New serves ln, which the Mux owns from now on: Close closes it.
func New(ln net.Listener, cfg Config) *Mux {
	cfg = cfg.withDefaults()
	m := &Mux{
		ln:         ln,
		cfg:        cfg,
		done:       make(chan struct{}),
		sem:        make(chan struct{}, cfg.MaxPending),
		groups:     make(map[string]*Layer),
		registered: make(chan struct{}),
		pending:    make(map[net.Conn]struct{}),
	}
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

// Addr is the listener's address, which every group's Layer reports as its
// own: raft's ServerAddress of this node for all its groups.
func (m *Mux) Addr() net.Addr { return m.ln.Addr() }

// Stats returns the accept loop's counters so far.
func (m *Mux) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats
}

// Register opens the Layer of group. Groups may be registered at any time
// while the Mux is open; a group id can be registered again once its
// previous Layer is closed (a partition deleted and created anew, a raft
// instance restarted).
func (m *Mux) Register(group string) (*Layer, error) {
	if len(group) == 0 || len(group) > MaxGroupID {
		return nil, ErrBadGroupID
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if _, ok := m.groups[group]; ok {
		return nil, fmt.Errorf("%w: %q", ErrDuplicateGroup, group)
	}
	l := &Layer{
		mux:    m,
		group:  group,
		header: appendHeader(nil, group),
		accept: make(chan net.Conn),
		done:   make(chan struct{}),
		conns:  make(map[*conn]struct{}),
	}
	m.groups[group] = l
	close(m.registered)
	m.registered = make(chan struct{})
	return l, nil
}

// Close closes the listener and every Layer (and so every connection of
// every group), and waits for the accept loop and the header readers to
// return. It is what a node's death looks like to its peers.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	close(m.done)
	layers := make([]*Layer, 0, len(m.groups))
	for _, l := range m.groups {
		layers = append(layers, l)
	}
	for c := range m.pending {
		_ = c.Close()
	}
	m.mu.Unlock()
	err := m.ln.Close()
	for _, l := range layers {
		_ = l.Close()
	}
	m.wg.Wait()
	return err
}

func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (out of file descriptors, say): back
			// off as net/http does rather than spin.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(delay):
				continue
			case <-m.done:
				return
			}
		}
		delay = 0
		select {
		case m.sem <- struct{}{}:
		default:
			m.count(func(s *Stats) { s.Overflow++ })
			_ = c.Close()
			continue
		}
		if !m.addPending(c) {
			<-m.sem
			_ = c.Close()
			return
		}
		m.wg.Add(1)
		go m.route(c)
	}
}

func (m *Mux) count(f func(*Stats)) {
	m.mu.Lock()
	f(&m.stats)
	m.mu.Unlock()
}

// addPending records c so Close can interrupt its header read; false once
// the Mux is closed.
func (m *Mux) addPending(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.pending[c] = struct{}{}
	return true
}

// route reads c's header and hands c to its group, or closes it.
func (m *Mux) route(c net.Conn) {
	defer m.wg.Done()
	l, why := m.readAndFind(c)
	m.mu.Lock()
	delete(m.pending, c)
	m.mu.Unlock()
	<-m.sem
	if l == nil {
		m.count(why)
		_ = c.Close()
		return
	}
	l.deliver(c)
}

// readAndFind reads the header and waits up to UnknownGroupWait for its
// group; it returns the Layer, or nil and the counter to bump.
func (m *Mux) readAndFind(c net.Conn) (*Layer, func(*Stats)) {
	group, err := readHeader(c, m.cfg.HeaderTimeout)
	if err != nil {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return nil, func(s *Stats) { s.Timeout++ }
		case errors.Is(err, ErrBadHeader):
			return nil, func(s *Stats) { s.BadHeader++ }
		default:
			// EOF, a reset, or the Mux closing: not the peer's fault as
			// far as anyone can tell (a dialer whose RPC timed out
			// hangs up).
			return nil, func(s *Stats) { s.Dropped++ }
		}
	}
	var timer <-chan time.Time
	for {
		m.mu.Lock()
		l, ok := m.groups[group]
		registered, closed := m.registered, m.closed
		m.mu.Unlock()
		if ok {
			return l, nil
		}
		if closed || m.cfg.UnknownGroupWait < 0 {
			return nil, func(s *Stats) { s.Unknown++ }
		}
		if timer == nil {
			t := time.NewTimer(m.cfg.UnknownGroupWait)
			defer t.Stop()
			timer = t.C
			m.count(func(s *Stats) { s.Waiting++ })
			defer m.count(func(s *Stats) { s.Waiting-- })
		}
		select {
		case <-registered:
		case <-timer:
			return nil, func(s *Stats) { s.Unknown++ }
		case <-m.done:
			return nil, func(s *Stats) { s.Unknown++ }
		}
	}
}

// appendHeader appends the header naming group to b.
func appendHeader(b []byte, group string) []byte {
	b = append(b, magic[:]...)
	b = append(b, Version)
	b = binary.BigEndian.AppendUint16(b, uint16(len(group)))
	return append(b, group...)
}

// readHeader reads one header from c within timeout and clears the
// deadline afterwards, since raft sets its own per RPC.
func readHeader(c net.Conn, timeout time.Duration) (string, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	var fixed [headerFixed]byte
	if _, err := io.ReadFull(c, fixed[:]); err != nil {
		return "", err
	}
	if [4]byte(fixed[:4]) != magic {
		return "", fmt.Errorf("%w: magic %q", ErrBadHeader, fixed[:4])
	}
	if fixed[4] != Version {
		return "", fmt.Errorf("%w: version %d", ErrBadHeader, fixed[4])
	}
	n := int(binary.BigEndian.Uint16(fixed[5:]))
	if n == 0 || n > MaxGroupID {
		return "", fmt.Errorf("%w: group id length %d", ErrBadHeader, n)
	}
	id := make([]byte, n)
	if _, err := io.ReadFull(c, id); err != nil {
		return "", err
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		return "", err
	}
	return string(id), nil
}

// Layer is one group's raft.StreamLayer: Accept yields the connections
// peers opened for this group, Dial opens one to a peer's Mux for it.
type Layer struct {
	mux    *Mux
	group  string
	header []byte
	accept chan net.Conn
	done   chan struct{}

	mu     sync.Mutex
	closed bool
	conns  map[*conn]struct{} // open connections, both directions
}

var _ raft.StreamLayer = (*Layer)(nil)

// Group is the id this Layer was registered with.
func (l *Layer) Group() string { return l.group }

// Accept waits for the next connection a peer opened for this group. After
// Close it returns ErrClosed, which stops NetworkTransport's listen loop
// once raft has shut the transport down.
func (l *Layer) Accept() (net.Conn, error) {
	select {
	case c := <-l.accept:
		return c, nil
	case <-l.done:
		return nil, ErrClosed
	}
}

// deliver hands c to Accept, or closes it if the Layer closes first.
func (l *Layer) deliver(c net.Conn) {
	tc, ok := l.track(c)
	if !ok {
		_ = c.Close()
		return
	}
	select {
	case l.accept <- tc:
		l.mux.count(func(s *Stats) { s.Accepted++ })
	case <-l.done:
		_ = tc.Close()
	}
}

// Addr is the Mux listener's address.
func (l *Layer) Addr() net.Addr { return l.mux.Addr() }

// Dial opens a connection to the Mux at address and names this group on it.
// timeout bounds both the connect and the header write.
func (l *Layer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	select {
	case <-l.done:
		return nil, ErrClosed
	default:
	}
	c, err := l.mux.cfg.Dialer(string(address), timeout)
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		if err := c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	if _, err := c.Write(l.header); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("raftmux: writing header for %q to %s: %w", l.group, address, err)
	}
	if err := c.SetWriteDeadline(time.Time{}); err != nil {
		_ = c.Close()
		return nil, err
	}
	tc, ok := l.track(c)
	if !ok {
		_ = c.Close()
		return nil, ErrClosed
	}
	return tc, nil
}

// Close stops Accept, closes this group's connections in both directions
// (so handlers blocked on them return, and peers see the group gone at
// once), and unregisters the group; the listener and other groups go on.
func (l *Layer) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.done)
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
	m := l.mux
	m.mu.Lock()
	if m.groups[l.group] == l {
		delete(m.groups, l.group)
	}
	m.mu.Unlock()
	return nil
}

// OpenConns is how many connections of this group are open, both
// directions.
func (l *Layer) OpenConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}

// track wraps c so the Layer can close it; false once the Layer is closed.
func (l *Layer) track(c net.Conn) (net.Conn, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false
	}
	tc := &conn{Conn: c, layer: l}
	l.conns[tc] = struct{}{}
	return tc, true
}

// conn is a connection a Layer tracks until it is closed.
type conn struct {
	net.Conn
	layer *Layer
	once  sync.Once
}

// NetConn returns the connection under the Layer's tracking (the
// Dialer's, or the one the Mux accepted), as tls.Conn's NetConn does.
// Writes on it are the connection's own writes; a writer of several
// buffers at once takes it so that net.Buffers reaches writev (a wrapped
// connection gets one write call per buffer). Close the Layer's
// connection, not this one.
func (c *conn) NetConn() net.Conn { return c.Conn }

// Close closes the connection and forgets it.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		l := c.layer
		l.mu.Lock()
		delete(l.conns, c)
		l.mu.Unlock()
	})
	return err
}
