// Package reach keeps, for each voter a cluster node dials, whether it
// was last reached and, if not, since when and why: the one place the
// node's dialers (the metadata raft's transport, the partition driver's
// senders, the forwarding client) report to, so that a voter the node
// cannot reach is logged once, with the address dialled and the error,
// whichever of them found it.
//
// Without it the only trace of a voter that cannot be reached (a typo in
// --voters, a voter down, a firewall) was hashicorp raft's own log, which
// seglog serve discards without --verbose: a node waited for its
// controller in silence (docs/cluster.md, "When a voter cannot be
// reached").
package reach

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Defaults for Config's zero fields: a voter failing for WarnAfter is
// reported, then at most every Every while it keeps failing. Five seconds
// is longer than an election or a restarting peer's start-up, so a normal
// failover says nothing; thirty keeps a node waiting for minutes from
// flooding its log.
const (
	DefaultWarnAfter = 5 * time.Second
	DefaultEvery     = 30 * time.Second
)

// ErrHungUp describes a peer that accepted the connection and closed it
// without answering: a seglog node stopping, what a seglog node's raft
// port does with a connection for a group it does not serve (yet: a node
// starting registers its groups one by one), and what
// another service (the node's Kafka port, say) does with the raft
// header. The address is reachable, but may not be the voter's raft
// address.
var ErrHungUp = errors.New("the peer closed the connection without answering (a seglog node starting or stopping, or not a seglog node's --raft-listen)")

// WrongNodeError is a peer that answered as another node than the voter
// dialled: its address in the voters list is another voter's.
type WrongNodeError struct {
	// Want is the voter dialled, Got the node id it answered as.
	Want, Got string
}

// Error names both nodes and what that means.
func (e *WrongNodeError) Error() string {
	return fmt.Sprintf("answered as node %s, not node %s: the address given for node %s is node %s's", e.Got, e.Want, e.Want, e.Got)
}

// HungUp returns err as ErrHungUp when it is the end of a connection the
// peer closed (EOF, a reset, a broken pipe) after it was opened, and err otherwise.
// Only a caller whose dial succeeded may call it: a dial's own errors are
// not the peer hanging up.
func HungUp(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("%w: %v", ErrHungUp, err)
	}
	return err
}

// Config sets a Tracker up.
type Config struct {
	// Logger receives the Warn and Info records; nil is slog.Default().
	Logger *slog.Logger
	// Peers are the voters this node dials, by id, with their
	// addresses: Peers lists them all, those never tried included.
	Peers map[uint64]string
	// WarnAfter and Every: see DefaultWarnAfter; zero takes the default.
	WarnAfter, Every time.Duration

	// now is the clock; nil is time.Now (tests step their own).
	now func() time.Time
}

// Peer is what a Tracker knows of one voter.
type Peer struct {
	// ID is the voter's node id; Addr the address last dialled (the one
	// configured until a dial is reported).
	ID   uint64
	Addr string
	// Reached is when the voter was last reached: a dial that succeeded,
	// or the end of a connection held open; zero if none has. Answered
	// says the voter itself answered then (a raft or forwarding reply
	// naming it), rather than a connection being held open only (the
	// partition driver's, which the peer never answers on: any seglog
	// node's raft port holds it, the wrong one's too).
	Reached  time.Time
	Answered bool
	// Err is the last failure since then, nil if none; Since is when the
	// failures began.
	Err   error
	Since time.Time
}

// Tried reports whether anything was reported of the peer.
func (p Peer) Tried() bool { return !p.Reached.IsZero() || p.Err != nil }

// Tracker records what the dialers report. Its methods are safe for
// concurrent use, and a nil Tracker records nothing.
type Tracker struct {
	cfg Config
	mu  sync.Mutex
	ps  map[uint64]*peerState
}

type peerState struct {
	Peer
	// lastWarn is when the peer was last reported unreachable (kept
	// across recoveries: a flapping peer is reported at most every
	// Every); warned says the current failures were.
	lastWarn time.Time
	warned   bool
}

// New returns a Tracker.
func New(cfg Config) *Tracker {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.WarnAfter <= 0 {
		cfg.WarnAfter = DefaultWarnAfter
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	t := &Tracker{cfg: cfg, ps: map[uint64]*peerState{}}
	for id, addr := range cfg.Peers {
		t.ps[id] = &peerState{Peer: Peer{ID: id, Addr: addr}}
	}
	return t
}

// Failed records that dialling (or talking to) peer id at addr failed
// with err, and logs a Warn when the peer has failed for WarnAfter and
// was not reported within Every. An error of this node's own closing
// (net.ErrClosed) is not the peer's and is ignored.
func (t *Tracker) Failed(id uint64, addr string, err error) {
	if t == nil || err == nil || errors.Is(err, net.ErrClosed) {
		return
	}
	now := t.cfg.now()
	t.mu.Lock()
	p := t.peer(id)
	p.Addr = addr
	if p.Err == nil {
		p.Since = now
	}
	p.Err = err
	failing := now.Sub(p.Since)
	warn := failing >= t.cfg.WarnAfter && (p.lastWarn.IsZero() || now.Sub(p.lastWarn) >= t.cfg.Every)
	if warn {
		p.lastWarn, p.warned = now, true
	}
	reached := p.Reached
	t.mu.Unlock()
	if !warn {
		return
	}
	attrs := []any{"voter", id, "addr", addr, "for", failing.Round(100 * time.Millisecond), "err", err.Error()}
	if !reached.IsZero() {
		attrs = append(attrs, "last_reached", reached.UTC().Format(time.RFC3339))
	} else {
		attrs = append(attrs, "last_reached", "never")
	}
	msg := "cluster: cannot reach a voter; is it running, and is this address its --raft-listen (check --voters)?"
	if wrong := (*WrongNodeError)(nil); errors.As(err, &wrong) {
		// Running, and answering: the question is the list's.
		msg = "cluster: the address given for a voter is another node's (check --voters: the same list on every node)"
	}
	t.cfg.Logger.Warn(msg, attrs...)
}

// Reached records that peer id answered at addr as itself, and logs at
// Info that it is reachable again if it was reported unreachable.
func (t *Tracker) Reached(id uint64, addr string) { t.reached(id, addr, true) }

// Connected records that a connection to peer id at addr stayed open,
// without an answer that names the node: it ends a run of failures as
// Reached does, but Peers does not count it as the voter answering.
func (t *Tracker) Connected(id uint64, addr string) { t.reached(id, addr, false) }

func (t *Tracker) reached(id uint64, addr string, answered bool) {
	if t == nil {
		return
	}
	now := t.cfg.now()
	t.mu.Lock()
	p := t.peer(id)
	warned, failing := p.warned, now.Sub(p.Since)
	if answered || p.Err != nil || p.Reached.IsZero() {
		// A connection held after an answer says no less than it.
		p.Answered = answered
	}
	p.Addr, p.Reached, p.Err, p.Since, p.warned = addr, now, nil, time.Time{}, false
	t.mu.Unlock()
	if warned {
		t.cfg.Logger.Info("cluster: reached a voter again", "voter", id, "addr", addr, "after", failing.Round(100*time.Millisecond),
			"answered", answered)
	}
}

// peer returns id's state, made on first use; t.mu held.
func (t *Tracker) peer(id uint64) *peerState {
	p := t.ps[id]
	if p == nil {
		p = &peerState{Peer: Peer{ID: id}}
		t.ps[id] = p
	}
	return p
}

// Peers returns every peer's state, by id.
func (t *Tracker) Peers() []Peer {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Peer, 0, len(t.ps))
	for _, id := range slices.Sorted(maps.Keys(t.ps)) {
		out = append(out, t.ps[id].Peer)
	}
	return out
}
