// Package multiraft drives every partition raft group a seglog node hosts,
// on go.etcd.io/raft/v3, the way CockroachDB drives its ranges: one driver
// goroutine per node ticks every group, steps the messages peers sent, and
// handles each group's Ready in etcd's order (persist, send, apply,
// Advance); one connection per peer, over the node's raftmux port, carries
// the messages of every group, batched per peer per round.
//
// docs/cluster.md ("The partition driver") describes the knobs, the
// durability contract of Storage and what is left.
package multiraft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/internal/cluster/raftmux"
	"github.com/seglog/seglog/internal/cluster/reach"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
)

// Defaults for Config's zero fields. With a 100 ms tick, a follower starts
// an election 1 to 2 s (ElectionTick to twice it, randomized) after it last
// heard its leader; PreVote adds one round trip, so a dead leader's groups
// have a new leader in about 1.1 to 2.1 s, under issue 30's 3 s.
// bench/multiraft measured 0.5 to 0.6 s median failover with 50 ms ticks.
const (
	DefaultGroup         = "multiraft"
	DefaultTick          = 100 * time.Millisecond
	DefaultElectionTick  = 10
	DefaultHeartbeatTick = 1
	// DefaultMaxSizePerMsg bounds the entries of one append message.
	DefaultMaxSizePerMsg = 1 << 20
	// DefaultMaxInflightMsgs bounds the append messages in flight to a
	// follower per group.
	DefaultMaxInflightMsgs = 256
	// DefaultMaxFrame bounds one frame on the wire: a message of
	// DefaultMaxSizePerMsg entries plus its envelope, with room.
	DefaultMaxFrame = 16 << 20
	// DefaultPeerQueue is how many rounds' batches wait for a peer's
	// connection before the driver drops more.
	DefaultPeerQueue = 256
	// DefaultPeerQueueBytes bounds the bytes those batches hold: a slow
	// peer costs at most this much memory.
	DefaultPeerQueueBytes = 64 << 20
	// DefaultWriteTimeout bounds one write to a peer: a peer that stops
	// reading for that long loses its connection, and raft retransmits
	// once it is back.
	DefaultWriteTimeout = 2 * time.Second
	// DefaultDialTimeout bounds a connection attempt to a peer.
	DefaultDialTimeout = time.Second
	// DefaultMaxBackoff caps the wait between connection attempts.
	DefaultMaxBackoff = time.Second
)

// Errors of Propose, AddGroup and RemoveGroup.
var (
	// ErrGroupNotFound: the group is not on this node (never added, or
	// removed before the call).
	ErrGroupNotFound = errors.New("multiraft: no such group on this node")
	// ErrGroupExists: AddGroup for a group this node already runs.
	ErrGroupExists = errors.New("multiraft: group already on this node")
	// ErrGroupRemoved fails the proposals waiting when RemoveGroup ran.
	ErrGroupRemoved = errors.New("multiraft: group removed")
	// ErrClosed: the Node is closed.
	ErrClosed = errors.New("multiraft: node closed")
	// ErrProposalDropped means the entry will never commit: raft dropped
	// it, or another leader's entry was committed at its index.
	ErrProposalDropped = errors.New("multiraft: proposal dropped by a leader change")
	// ErrTooLarge refuses an entry that would not fit in one frame
	// (Config.MaxFrame), which no follower could then receive.
	ErrTooLarge = errors.New("multiraft: entry larger than a frame")
	// ErrRaftPanic stops a group whose RawNode panicked stepping a
	// peer's message: etcd raft panics when a message shows this replica
	// lacks entries it acknowledged (a commit index past its last entry:
	// "tocommit(44) is out of range [lastIndex(43)]"), which a DIR
	// restored from an older copy, or synced writes lost, leave. The
	// replica must not go on (it could vote for a log missing committed
	// entries): Config.Stopped gets it, for its owner to stop the node.
	ErrRaftPanic = errors.New("multiraft: etcd raft refused this replica's log")
)

// NotLeaderError is Propose's answer on a replica that is not the group's
// leader. Leader is the leader this node knows of, 0 if none.
type NotLeaderError struct {
	Group  uint64
	Leader uint64
}

// Error names the group and the leader known, if any.
func (e *NotLeaderError) Error() string {
	if e.Leader == 0 {
		return fmt.Sprintf("multiraft: group %d has no leader known here", e.Group)
	}
	return fmt.Sprintf("multiraft: not the leader of group %d; node %d is", e.Group, e.Leader)
}

// frameOverhead is room, in a frame, for the message around one entry.
const frameOverhead = 4 << 10

// Config sets up a Node; zero fields take the defaults above.
type Config struct {
	// ID is this node's raft id (the broker id), never 0.
	ID uint64
	// Mux is the node's raft port; the Node registers Group on it and
	// dials its peers through it. The caller closes the Mux after Close.
	Mux *raftmux.Mux
	// Group is the raftmux group id carrying all partition traffic.
	Group string
	// Peers maps every other node's id to its raft address (its Mux's).
	Peers map[uint64]string
	// Tick is the raft tick; ElectionTick and HeartbeatTick count it.
	Tick          time.Duration
	ElectionTick  int
	HeartbeatTick int
	// MaxSizePerMsg and MaxInflightMsgs are raft.Config's.
	MaxSizePerMsg   uint64
	MaxInflightMsgs int
	// MaxFrame is the largest frame read from a peer; a longer length
	// closes the connection.
	MaxFrame int
	// PeerQueue and PeerQueueBytes bound the batches queued for one
	// peer, in number and in bytes.
	PeerQueue      int
	PeerQueueBytes int
	WriteTimeout   time.Duration
	DialTimeout    time.Duration
	MaxBackoff     time.Duration
	// ReplicaLagMax is how long a live follower may go without catching
	// up with the leader and stay in the caught-up set (Kafka's
	// replica.lag.time.max.ms); zero is DefaultReplicaLagMax.
	ReplicaLagMax time.Duration
	// Logger receives etcd raft's log; nil discards all but panics.
	Logger raft.Logger
	// Log receives the driver's own events (a dead leader taken over, a
	// snapshot copy that failed), few and worth a line in the node's
	// log, unlike raft's own per-group chatter; nil discards them.
	Log *slog.Logger
	// Reach, if set, is told of every dial to a peer, and of connections
	// the peer closed at once, so a peer that cannot be reached is
	// logged with the error (package reach); nil records nothing.
	Reach *reach.Tracker
	// Stopped, if set, is told of each group the Node stops on its own
	// because its Storage or ApplyFunc failed (err says why: a full
	// disk, an I/O error). It runs on the driver goroutine and must not
	// block. The group is gone from the Node; AddGroup starts it again.
	Stopped func(group uint64, err error)
}

func (c Config) withDefaults() Config {
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.Tick <= 0 {
		c.Tick = DefaultTick
	}
	if c.ElectionTick <= 0 {
		c.ElectionTick = DefaultElectionTick
	}
	if c.ReplicaLagMax <= 0 {
		c.ReplicaLagMax = DefaultReplicaLagMax
	}
	if c.HeartbeatTick <= 0 {
		c.HeartbeatTick = DefaultHeartbeatTick
	}
	if c.MaxSizePerMsg == 0 {
		c.MaxSizePerMsg = DefaultMaxSizePerMsg
	}
	if c.MaxInflightMsgs <= 0 {
		c.MaxInflightMsgs = DefaultMaxInflightMsgs
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = DefaultMaxFrame
	}
	if c.PeerQueue <= 0 {
		c.PeerQueue = DefaultPeerQueue
	}
	if c.PeerQueueBytes <= 0 {
		c.PeerQueueBytes = DefaultPeerQueueBytes
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.Logger == nil {
		c.Logger = QuietLogger()
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// ApplyFunc receives a group's committed entries, in log order, on the
// driver goroutine: it should be quick (a replica store advancing its high
// watermark), since every group waits while it runs. After a restart raft
// delivers again every committed entry after the storage's snapshot, so an
// ApplyFunc skips what it has already applied. It sees raft's own entries
// too (the empty entry a new leader appends, configuration changes, which
// the driver has already applied to raft). The entries are shared with
// raft and the storage: read them, never modify them. An error stops the
// group.
type ApplyFunc func(entries []*pb.Entry) error

// Stats counts what the transport did, for tests and metrics.
type Stats struct {
	Received     uint64            // messages stepped into a group
	BadFrame     uint64            // connections closed for a bad length or undecodable message
	UnknownGroup uint64            // messages for a group not on this node, dropped
	Misaddressed uint64            // messages not for this node, from a non-peer, or of a local type, dropped
	Dropped      map[uint64]uint64 // messages to each peer dropped (queue full or connection down)
	Sent         map[uint64]uint64 // messages to each peer handed to its connection
	Connects     map[uint64]uint64 // connections opened to each peer
	// Snapshot transfers (a follower copying a snapshot's data):
	// started, done (the snapshot then stepped into raft), failed (the
	// snapshot dropped), and messages dropped because their group was
	// frozen by a transfer or had a Ready pending when one arrived.
	SnapshotsStarted, SnapshotsDone, SnapshotsFailed, FrozenDrops uint64
}

// Node runs all of one seglog node's partition groups. Its methods are safe
// for concurrent use.
type Node struct {
	cfg   Config
	layer *raftmux.Layer
	// snapLayer carries snapshot data (snapshot.go).
	snapLayer *raftmux.Layer

	inbox chan []inbound
	props chan *proposal
	ops   chan func()
	downs chan uint64 // peers whose connection failed, for ReportUnreachable
	gone  chan uint64 // peers whose port refused a dial after a connection broke (takeover.go)
	stop  chan struct{}
	// driven is closed when the driver goroutine has returned: nothing
	// reads a proposal's data after that.
	driven    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	peers map[uint64]*peer // fixed at New

	mu     sync.RWMutex
	groups map[uint64]*group // written by the driver only, read by all

	// Groups with something to handle: driver goroutine only.
	dirty, spare []*group
	// readies is a round's Readys (readyAll), kept for its capacity.
	readies []readied

	badFrame, unknownGroup, misaddressed, received atomic.Uint64
	// Snapshot transfers (snapshot.go).
	snapsStarted, snapsDone, snapsFailed, frozenDrops atomic.Uint64
}

// New starts a node: it registers cfg.Group on cfg.Mux, starts a sender per
// peer (each connects, and reconnects, on its own) and the driver.
func New(cfg Config) (*Node, error) {
	cfg = cfg.withDefaults()
	if cfg.ID == 0 || cfg.Mux == nil {
		return nil, errors.New("multiraft: Config needs ID and Mux")
	}
	layer, err := cfg.Mux.Register(cfg.Group)
	if err != nil {
		return nil, err
	}
	snapLayer, err := cfg.Mux.Register(cfg.Group + "-snap")
	if err != nil {
		_ = layer.Close()
		return nil, err
	}
	n := &Node{
		cfg:       cfg,
		layer:     layer,
		snapLayer: snapLayer,
		inbox:     make(chan []inbound, 256),
		props:     make(chan *proposal, 1024),
		ops:       make(chan func()),
		downs:     make(chan uint64, 64),
		gone:      make(chan uint64, 64),
		stop:      make(chan struct{}),
		driven:    make(chan struct{}),
		peers:     make(map[uint64]*peer),
		groups:    make(map[uint64]*group),
	}
	for id, addr := range cfg.Peers {
		if id == cfg.ID {
			continue
		}
		p := newPeer(n, id, addr)
		n.peers[id] = p
		n.wg.Add(1)
		go p.run()
	}
	n.wg.Add(3)
	go n.acceptLoop()
	go n.serveSnapshots()
	go n.drive()
	return n, nil
}

// ID is the node's raft id.
func (n *Node) ID() uint64 { return n.cfg.ID }

// Close stops the driver, the senders and every connection of the node's
// raftmux group; waiting proposals fail with ErrClosed. Storage is left as
// it is, so a Node made anew over it resumes (a restart).
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		close(n.stop)
		_ = n.layer.Close()
		_ = n.snapLayer.Close()
	})
	n.wg.Wait()
	return nil
}

// transferResult is what transfer did.
type transferResult int

const (
	transferStarted transferResult = iota
	// transferNone: no follower was heard from recently.
	transferNone
	// transferAvoided: followers were heard from, but every one is to be
	// avoided (stopping too).
	transferAvoided
)

// transfer starts moving g's leadership, if this node leads it, to its
// successor (the first other replica in the group's order, as a dead
// leader's: takeover.go) if that one is recently heard from and
// replicating, else to the follower with most of its log among those
// recently heard from, leaving out those avoid names (nil: none), and
// reports what it did (driver goroutine). Kafka's controlled shutdown
// also picks the first replica in the assignment that is in sync: a
// stopping node's partitions spread over the others as their replica
// lists do, where the most log alone sent a walk's 743 partitions 463 to
// one node and 280 to the other.
func (n *Node) transfer(g *group, avoid func(uint64) bool) transferResult {
	st := g.rn.Status()
	if st.RaftState != raft.StateLeader {
		return transferNone
	}
	eligible := func(pid uint64, pr tracker.Progress) bool {
		return pid != n.cfg.ID && pr.RecentActive && !pr.IsLearner
	}
	var to, match uint64
	avoided := false
	for pid, pr := range st.Progress {
		if !eligible(pid, pr) {
			continue
		}
		if avoid != nil && avoid(pid) {
			avoided = true
			continue
		}
		if to == 0 || pr.Match > match {
			to, match = pid, pr.Match
		}
	}
	if to == 0 {
		if avoided {
			return transferAvoided
		}
		return transferNone
	}
	if s := g.successor(n.cfg.ID); s != 0 && s != to && (avoid == nil || !avoid(s)) {
		if pr, ok := st.Progress[s]; ok && eligible(s, pr) && pr.State == tracker.StateReplicate {
			to = s
		}
	}
	g.rn.TransferLeader(to)
	n.mark(g)
	return transferStarted
}

// avoiding asks avoid about each peer, off the driver goroutine (avoid
// may take its caller's locks), and returns the answer as a set for
// transfer; nil for a nil avoid.
func (n *Node) avoiding(avoid func(uint64) bool) func(uint64) bool {
	if avoid == nil {
		return nil
	}
	skip := make(map[uint64]bool, len(n.peers))
	for id := range n.peers {
		skip[id] = avoid(id)
	}
	return func(id uint64) bool { return skip[id] }
}

// HandOver moves the leadership of every group this node leads to the
// follower that has most of its log among those recently heard from
// (raft's leadership transfer: the follower is brought up to date, then
// told to campaign at once), and returns once this node knows another
// leader of every group it led, or with ctx's error. It is Kafka's controlled shutdown: a node about to
// stop hands its partitions over, so their clients find a new leader in
// a round trip instead of an election timeout after the node is gone.
// Proposals meanwhile fail with ErrProposalDropped. A transfer raft gives
// up (after an election timeout) is asked for again while ctx lasts; a
// group with no follower heard from for an election timeout stays led
// here until the node stops. avoid (nil: none) names peers to hand
// nothing to, those stopping too: a group whose followers are all
// avoided stays led here (when every node stops at once, handing
// leaderships round would only move them until the last one stops).
func (n *Node) HandOver(ctx context.Context, avoid func(id uint64) bool) error {
	// Every group led here, whether or not a follower is heard from at
	// this instant: raft's CheckQuorum forgets who was heard from every
	// election timeout, and a follower answers within a heartbeat, so a
	// group found without one is asked again below (a test on a loaded
	// machine once saw HandOver return with a partition still led here).
	var led []uint64
	skip := n.avoiding(avoid)
	if err := n.do(ctx, func() {
		for id, g := range n.groups {
			if !g.fetching && g.rn.BasicStatus().RaftState == raft.StateLeader {
				n.transfer(g, skip)
				led = append(led, id)
			}
		}
	}); err != nil {
		return err
	}
	// A group is given up once no follower has been heard from for
	// longer than an election timeout: its followers are gone, and it
	// stays led here until the node stops.
	alone := make(map[uint64]time.Time)
	patience := time.Duration(n.cfg.ElectionTick) * n.cfg.Tick
	t := time.NewTicker(n.cfg.Tick)
	defer t.Stop()
	for {
		// Done with a group once this node knows another leader of it,
		// or once no follower is left to hand it to.
		pending := false
		now := time.Now()
		skip := n.avoiding(avoid)
		if err := n.do(ctx, func() {
			// A group handed to this node meanwhile (another node's
			// rebalancer, before it heard that this one is stopping)
			// is handed over too.
			for id, g := range n.groups {
				if !g.fetching && !slices.Contains(led, id) && g.rn.BasicStatus().RaftState == raft.StateLeader {
					n.transfer(g, skip)
					led = append(led, id)
				}
			}
			for _, id := range led {
				g := n.groups[id]
				if g == nil {
					continue
				}
				st := g.rn.BasicStatus()
				if st.RaftState == raft.StateLeader && st.LeadTransferee == 0 {
					switch n.transfer(g, skip) {
					case transferStarted:
						pending = true
						delete(alone, id)
						continue
					case transferAvoided:
						delete(alone, id)
						continue // nobody to hand it to: done
					}
					// Raft gave the transfer up (an election timeout
					// without the transferee taking over, as on a
					// loaded machine; it is asked for again while ctx
					// lasts), or never began it, and no follower is
					// heard from now: wait for one, a while.
					since, ok := alone[id]
					if !ok {
						alone[id], since = now, now
					}
					if now.Sub(since) <= patience {
						pending = true
					}
					continue
				}
				delete(alone, id)
				transferring := st.RaftState == raft.StateLeader
				electing := st.RaftState != raft.StateLeader && st.Lead == raft.None
				if transferring || electing {
					pending = true
				}
			}
		}); err != nil {
			return err
		}
		if !pending {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.stop:
			return ErrClosed
		case <-t.C:
		}
	}
}

// Stats returns the transport's counters so far.
func (n *Node) Stats() Stats {
	s := Stats{
		Received:     n.received.Load(),
		BadFrame:     n.badFrame.Load(),
		UnknownGroup: n.unknownGroup.Load(),
		Misaddressed: n.misaddressed.Load(),

		SnapshotsStarted: n.snapsStarted.Load(),
		SnapshotsDone:    n.snapsDone.Load(),
		SnapshotsFailed:  n.snapsFailed.Load(),
		FrozenDrops:      n.frozenDrops.Load(),
		Dropped:          map[uint64]uint64{},
		Sent:             map[uint64]uint64{},
		Connects:         map[uint64]uint64{},
	}
	for id, p := range n.peers {
		s.Dropped[id] = p.dropped.Load()
		s.Sent[id] = p.sent.Load()
		s.Connects[id] = p.connects.Load()
	}
	return s
}

// do runs f on the driver goroutine and waits for it.
func (n *Node) do(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case n.ops <- func() { f(); close(done) }:
	case <-n.stop:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-n.stop:
		// The driver may have run f before it stopped; either way the
		// node is gone.
		return ErrClosed
	}
}

// AddGroup starts this node's replica of group id over storage. A fresh
// storage (no configuration, no entries) is bootstrapped with peers as the
// voters, the same on every replica, the first of them the group's
// preferred leader (preferred.go); a storage that holds a group's state
// resumes it, and peers is ignored. apply receives committed entries. If
// the storage or apply fails later, the group is stopped as if removed:
// waiting proposals fail with that error, and the caller finds it gone.
func (n *Node) AddGroup(id uint64, peers []uint64, storage Storage, apply ApplyFunc) error {
	var err error
	if derr := n.do(context.Background(), func() { err = n.addGroup(id, peers, storage, apply) }); derr != nil {
		return derr
	}
	return err
}

// RemoveGroup stops this node's replica of group id; its waiting proposals
// fail with ErrGroupRemoved and messages for it are dropped from now on. Its
// storage is the caller's to keep or delete.
func (n *Node) RemoveGroup(id uint64) error {
	var err error
	if derr := n.do(context.Background(), func() {
		g := n.groups[id]
		if g == nil {
			err = ErrGroupNotFound
			return
		}
		n.dropGroup(g, ErrGroupRemoved)
	}); derr != nil {
		return derr
	}
	return err
}

// Leader returns the leader of group id as this node knows it (0 if none)
// and the term (the leader epoch) it knows.
func (n *Node) Leader(id uint64) (leader, term uint64, err error) {
	g := n.group(id)
	if g == nil {
		return 0, 0, ErrGroupNotFound
	}
	return g.lead.Load(), g.term.Load(), nil
}

// GroupStatus is a replica's view of its group.
type GroupStatus struct {
	raft.Status
	// CaughtUp is, on the leader, the replicas the leader counts as in
	// sync (Kafka's ISR): itself, and each follower heard from within the
	// last election timeout whose log matches the leader's up to the
	// commit index, or caught up with the leader within the last
	// Config.ReplicaLagMax (isr.go). Empty elsewhere. (Not CheckQuorum's RecentActive
	// alone, which raft clears every election timeout: the set read just
	// after would lack followers heard a heartbeat ago.)
	CaughtUp []uint64
}

// Status returns group id's raft status, with the followers' progress on
// the leader.
func (n *Node) Status(ctx context.Context, id uint64) (GroupStatus, error) {
	var st GroupStatus
	var err error
	if derr := n.do(ctx, func() {
		g := n.groups[id]
		if g == nil {
			err = ErrGroupNotFound
			return
		}
		st.Status = g.rn.Status()
		if st.RaftState == raft.StateLeader {
			commit := st.HardState.GetCommit()
			recent := n.liveSince()
			lagged := time.Now().Add(-n.cfg.ReplicaLagMax)
			for pid, pr := range st.Progress {
				live := pr.RecentActive || g.heardSince(pid, recent)
				if pid == n.cfg.ID || (live && (pr.Match >= commit || g.caught[pid].since(lagged))) {
					st.CaughtUp = append(st.CaughtUp, pid)
				}
			}
		}
	}); derr != nil {
		return st, derr
	}
	return st, err
}

// Propose appends data to group id's log through this node, which must be
// its leader, and returns the entry's index once the entry is committed and
// applied here. It fails with a *NotLeaderError on a follower (proposals
// are not forwarded: the caller, like a Kafka client, goes to the leader),
// ErrProposalDropped if the entry was lost to a leader change (another
// entry committed at its index, or raft refused it), ErrGroupRemoved,
// ErrClosed, or ctx's error.
//
// After ctx's error the entry may still commit, but it is already in this
// node's log or never will be: once the driver has the proposal, Propose
// waits for its round to persist it (a round, not a commit) before it
// returns ctx's error. A caller that reads the log after a failed Propose
// (the broker's idempotence, rebuilt from the log) thus sees the entry if
// it can ever commit through this node.
//
// Once Propose returns, whatever its answer, nothing reads data again
// (raft copies an entry's bytes when it appends it): the caller may reuse
// the buffer, as the broker does its request frames.
func (n *Node) Propose(ctx context.Context, id uint64, data []byte) (uint64, error) {
	if len(data) > n.cfg.MaxFrame-frameOverhead {
		return 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(data))
	}
	p := &proposal{group: id, data: data, done: make(chan result, 1), placed: make(chan struct{})}
	select {
	case n.props <- p:
	case <-n.stop:
		return 0, ErrClosed
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case r := <-p.done:
		return r.index, r.err
	case <-n.stop:
		// The driver may still take the proposal from its queue on
		// its way out: data is the caller's again only after that.
		<-n.driven
		return 0, ErrClosed
	case <-ctx.Done():
	}
	select {
	case <-p.placed:
	case <-n.stop:
		<-n.driven
		return 0, ErrClosed
	}
	select {
	case r := <-p.done:
		return r.index, r.err
	default:
		return 0, ctx.Err()
	}
}

func (n *Node) group(id uint64) *group {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.groups[id]
}

// QuietLogger is an etcd raft Logger that drops its log lines (the
// driver's default); Panic and Fatal still stop.
func QuietLogger() raft.Logger { return discard{} }

// discard drops etcd raft's log lines; Panic and Fatal still stop.
type discard struct{}

func (discard) Debug(...any)              {}
func (discard) Debugf(string, ...any)     {}
func (discard) Error(...any)              {}
func (discard) Errorf(string, ...any)     {}
func (discard) Info(...any)               {}
func (discard) Infof(string, ...any)      {}
func (discard) Warning(...any)            {}
func (discard) Warningf(string, ...any)   {}
func (discard) Fatal(v ...any)            { panic(fmt.Sprint(v...)) }
func (discard) Fatalf(f string, v ...any) { panic(fmt.Sprintf(f, v...)) }
func (discard) Panic(v ...any)            { panic(fmt.Sprint(v...)) }
func (discard) Panicf(f string, v ...any) { panic(fmt.Sprintf(f, v...)) }
