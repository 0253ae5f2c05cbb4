// Package cluster is a seglog cluster node (issue 30): it starts the
// metadata raft group (package meta) and the partition driver (package
// multiraft) over one raftmux port, keeps the node's store in step with
// the metadata, forwards the commands of a node that is not the
// controller to the controller, tracks which brokers are live, and gives
// the server its view of all this through server.Cluster.
//
// docs/cluster-node.md describes start-up, what DIR holds, the forwarding
// protocol, the liveness rule and the cluster id.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/internal/cluster/partition"
	"github.com/seglog/seglog/internal/cluster/raftmux"
	"github.com/seglog/seglog/internal/cluster/reach"
	"github.com/seglog/seglog/internal/errlog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// The raftmux groups a node serves besides multiraft's own.
const (
	// metaGroup carries the metadata group's hashicorp raft RPCs, named
	// as KRaft names its metadata partition.
	metaGroup = "__cluster_metadata-0"
	// forwardGroup carries the forwarding protocol (forward.go).
	forwardGroup = "__cluster_forward"
)

// Defaults for Config's zero fields. The metadata raft's timeouts are
// hashicorp raft's defaults halved: a dead controller is replaced in
// about 0.5 to 1 s (a heartbeat timeout, then a randomized election
// timeout), well under issue 30's 3 s, with room for a loaded machine.
const (
	DefaultHeartbeatTimeout   = 500 * time.Millisecond
	DefaultElectionTimeout    = 500 * time.Millisecond
	DefaultLeaderLeaseTimeout = 250 * time.Millisecond
	// DefaultHeartbeatInterval is how often a node tells the controller
	// it is alive (and learns the live set back).
	DefaultHeartbeatInterval = 500 * time.Millisecond
	// DefaultLivenessTimeout is how long after its last heartbeat a
	// broker still counts as live: five missed heartbeats.
	DefaultLivenessTimeout = 2500 * time.Millisecond
	// DefaultRequestTimeout bounds one forwarded request's round trip.
	DefaultRequestTimeout = 5 * time.Second
)

// Errors of Start and of the node's methods, beside server's sentinels.
var (
	// ErrConfig reports a Config Start cannot run with.
	ErrConfig = errors.New("cluster: invalid configuration")
	// ErrNodeID reports a DIR whose meta.properties names another node.
	ErrNodeID = errors.New("cluster: the directory belongs to another node")
	// ErrClusterID reports a DIR whose meta.properties names another
	// cluster than the one the metadata names.
	ErrClusterID = errors.New("cluster: the directory belongs to another cluster")
	// ErrInvalidReplicationFactor is CreateTopic's answer to a
	// replication factor below 1 or above the live brokers
	// (INVALID_REPLICATION_FACTOR). It is meta's sentinel, so either
	// package's name matches it.
	ErrInvalidReplicationFactor = meta.ErrInvalidReplicationFactor
	// ErrClosed is returned by a closed Node.
	ErrClosed = errors.New("cluster: node closed")
	// ErrDirectoryID refuses a node over a DIR other than the one its
	// broker registered from (wiped or replaced): Start's error when the
	// DIR holds no metadata and a peer knows the broker (blank.go), the
	// node's failure (Node.Err) when the controller refuses its
	// registration; the latter matches meta.ErrDirectoryID too.
	ErrDirectoryID = errors.New("cluster: this directory is not the one the node registered from")
	// ErrNodeStateLost refuses a DIR a cluster node kept that has lost
	// the node's own directory (DIR/.cluster_node): DIR/meta.properties
	// carries a directory.id, which only a cluster node writes there, or
	// DIR holds the metadata raft log, and the directory is gone
	// (checkNodeDir). Start and CheckDir return it before anything is
	// written.
	ErrNodeStateLost = errors.New("cluster: this directory lost its cluster node's state")
	// ErrVoters refuses a restart whose Config.Voters names other node
	// ids than the metadata's raft configuration, fixed at the
	// cluster's first start: Start returns it before the metadata group
	// runs, the message naming both sets. It is meta's sentinel, so
	// either package's name matches it.
	ErrVoters = meta.ErrVoters
)

// votersAdvice ends ErrVoters' message: what the user can do.
const votersAdvice = "membership changes are not supported: the cluster's voters are the ones its nodes were first started with, and its metadata raft keeps them whatever --voters says, while the partitions and the default replication factor would follow --voters. " +
	"The metadata was not changed. Start this node with --voters naming the voter ids the metadata holds, no more and no fewer (the same list on every node, in any order); a voter's address may change, the same id at another HOST:PORT, once every node is given the new one (docs/cluster.md)"

// directoryAdvice ends ErrDirectoryID's message: what happened and what
// the user can do.
const directoryAdvice = "the DIR was wiped or replaced, and with it this node's replicas' raft state, so it cannot rejoin their groups as the replica they knew (docs/cluster.md, \"A node that lost its DIR\"); " +
	"no partition was written here, and the partitions run on their other replicas. Start the node with its old DIR, or leave it stopped; " +
	"if this is its old DIR and only DIR/meta.properties and DIR/.cluster_node/meta.properties lost their directory.id, write the one named above back into both"

// Config is what Start needs.
type Config struct {
	// Dir is the node's DIR: the store's directory, which also holds
	// meta.properties, the metadata log (meta.DirName) and the node's
	// own records (nodeDirName).
	Dir string
	// FS is the filesystem; nil is the real one.
	FS vfs.FS
	// Store is the node's store in Dir, opened by the caller, who closes
	// it after Close, with store.Options.ReplicatedOffsets. The node's
	// partition manager writes the partitions it replicates through it.
	Store *store.Store
	// NodeID is this node's id, 1 or more (etcd raft, which drives the
	// partitions, reserves 0), one of Voters.
	NodeID int32
	// RaftListen is the raft port's address; Listener, if set, is used
	// instead (tests give a loopback listener on port 0). The Node owns
	// and closes it.
	RaftListen string
	Listener   net.Listener
	// Voters maps every voter's id to its raft address, this node's
	// included; every node is given the same map (a node that learns
	// that a peer was given another is refused, ErrVotersDiffer). Its
	// ids are fixed at the cluster's first start (a restart with others
	// is refused, ErrVoters); an address may change, and every node
	// dials the addresses its own Voters gives.
	Voters map[int32]string
	// Advertise is host:port of this node's Kafka listener, as clients
	// reach it.
	Advertise string
	// DefaultReplicationFactor is CreateTopic's factor for -1; 0 is
	// min(3, len(Voters)).
	DefaultReplicationFactor int
	// StartContext bounds what Start waits for: a node whose DIR holds
	// no metadata asks its peers whether it is new or wiped before it
	// joins the metadata group (blank.go), until one answers. nil is
	// context.Background().
	StartContext context.Context
	// Credentials is DIR's SASL credentials file when the server
	// requires SASL: proposed as the cluster's first users while the
	// metadata holds none (credentials.go); nil when SASL is off.
	Credentials *server.Credentials

	// The metadata raft's timing; zero takes the defaults above.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// HeartbeatInterval and LivenessTimeout are the liveness rule's
	// (docs/cluster-node.md, "Liveness").
	HeartbeatInterval time.Duration
	LivenessTimeout   time.Duration
	// RequestTimeout bounds one forwarded request.
	RequestTimeout time.Duration
	// LeaderImbalanceCheckInterval is how often the node hands the
	// partitions it leads back to their preferred replicas
	// (rebalance.go; Kafka's leader.imbalance.check.interval.seconds);
	// zero is DefaultLeaderImbalanceCheckInterval, and a negative value
	// turns the moves off (auto.leader.rebalance.enable=false).
	LeaderImbalanceCheckInterval time.Duration
	// PartitionTick is the partition driver's raft tick; zero is
	// multiraft's default.
	PartitionTick time.Duration

	// Logger receives the node's messages; nil is slog.Default().
	Logger *slog.Logger
	// RaftLogOutput receives hashicorp raft's log lines (the metadata
	// group and its transport); nil is stderr.
	RaftLogOutput io.Writer

	// whoisWithoutVoters answers whois without this node's voters, as
	// builds before the voters check did (tests: the controller's
	// check at registration is then the one that refuses a node).
	whoisWithoutVoters bool

	// reachWarnAfter and reachEvery time the Warn about a voter that
	// cannot be reached (reach.Config's); zero takes reach's defaults.
	// Tests shorten them.
	reachWarnAfter, reachEvery time.Duration

	// newPartitions builds the partition manager; nil is the real one
	// (partition.New over the node's driver and store). Tests give a
	// fake.
	newPartitions func(n *Node) (partitions, error)
}

func (c *Config) withDefaults() {
	if c.FS == nil {
		c.FS = vfs.Default
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = min(3, len(c.Voters))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.HeartbeatTimeout, DefaultHeartbeatTimeout)
	def(&c.ElectionTimeout, DefaultElectionTimeout)
	def(&c.LeaderLeaseTimeout, DefaultLeaderLeaseTimeout)
	def(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	def(&c.LivenessTimeout, DefaultLivenessTimeout)
	def(&c.RequestTimeout, DefaultRequestTimeout)
	if c.LeaderImbalanceCheckInterval == 0 {
		c.LeaderImbalanceCheckInterval = DefaultLeaderImbalanceCheckInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Node is one running cluster node. Its methods are safe for concurrent
// use; it implements server.Cluster.
type Node struct {
	cfg      Config
	log      *slog.Logger
	host     string
	port     int32
	raftAddr string

	// syncErrs logs what the sync loop keeps failing at (syncTopics),
	// which it tries again every second.
	syncErrs *errlog.Log

	mux  *raftmux.Mux
	meta *meta.Node
	// reach is what this node's dialers saw of the other voters
	// (reachable.go).
	reach *reach.Tracker
	// metaReady is meta once it is open, and opened is set once open
	// has made everything: the forwarding server runs before (checkBlank's
	// peers ask it), answering whois from metaReady and the rest only
	// once opened.
	metaReady atomic.Pointer[meta.Node]
	opened    atomic.Bool
	// blank is set when the metadata store was found empty (checkBlank):
	// until metaReady, whois answers fresh only then.
	blank atomic.Bool
	mr    *multiraft.Node
	parts partitions
	fwd   *raftmux.Layer

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed sync.Once

	notify atomic.Pointer[func()]
	// recordKick wakes recordLoop (record.go).
	recordKick chan struct{}

	// mu guards the liveness and registration state and rnd.
	mu sync.Mutex
	// lastSeen is, on the controller, when each broker last sent a
	// heartbeat; since is when this node last became the controller
	// (heartbeats sent to a previous controller are not seen here).
	lastSeen     map[int32]time.Time
	isController bool
	since        time.Time
	// liveView is the live set the controller answered this node's last
	// heartbeat with, at liveAt, from its metadata at liveIndex.
	liveView  []int32
	liveIndex uint64
	liveAt    time.Time
	// led is what this node leads, as leaderLoop last found it;
	// reports, on the controller, the partitions each broker last
	// reported leading (leaders.go); leaderView, on the others, the
	// leaders the controller answered this node's last heartbeat with,
	// at leaderAt.
	led        []leaderReport
	reports    map[int32][]leaderReport
	leaderView map[uint64]leaderReport
	leaderAt   time.Time
	// stoppingIDs are, on the controller, the brokers whose last
	// heartbeat said they are stopping; stoppingView, elsewhere, the
	// controller's last answer of them, at liveAt (stopping.go).
	stoppingIDs  map[int32]bool
	stoppingView []int32
	// stopping is set once this node's HandOver began.
	stopping atomic.Bool
	// epoch is this node's registration epoch, 0 until registered;
	// registered is closed at the first registration.
	epoch      uint64
	registered chan struct{}
	rnd        *rand.Rand
	// dirID is DIR's directory.id, sent with every registration.
	dirID string
	// votersDiffer is a peer's whois naming other voters, answered
	// before this node knew whether its DIR held metadata (voters.go);
	// guarded by mu, with blank.
	votersDiffer error
	// failed is closed when the node meets an error it cannot run past
	// (failErr, set before; Failed lists them).
	failed   chan struct{}
	failOnce sync.Once
	failErr  error

	// clusterID is known once ready is closed; clusterErr then says if
	// DIR belongs to another cluster.
	props      props
	clusterID  string
	clusterErr error
	ready      chan struct{}

	// syncMu guards synced and syncedCh: the metadata index the store
	// and the partition manager last matched, and a channel closed when
	// it moves.
	syncMu   sync.Mutex
	synced   uint64
	syncedCh chan struct{}
	// recMu guards topics, written by the sync loop.
	recMu  sync.Mutex
	topics *topicRecord
	// restart wakes the sync loop to start again a partition group the
	// driver stopped (groupStopped); restartDelay, the wait before,
	// and lastStop, when a group last stopped, are guarded by mu.
	restart      chan struct{}
	restartDelay time.Duration
	lastStop     time.Time

	pidMu            sync.Mutex
	pidNext, pidLast int64 // the local block [pidNext, pidLast); empty when equal
}

var _ server.Cluster = (*Node)(nil)

// Start starts a node: it checks DIR's meta.properties against
// cfg.NodeID, opens the raft port, the metadata group and the partition
// driver, and starts the loops that register the node, heartbeat, and
// keep the store in step with the metadata. It does not wait for a
// controller: ClusterID waits for what a server needs first.
func Start(cfg Config) (*Node, error) {
	n, err := start(cfg)
	if err != nil && cfg.Listener != nil {
		cfg.Listener.Close() // Start owns it; a failed start has no Node to close it
	}
	return n, err
}

func start(cfg Config) (*Node, error) {
	cfg.withDefaults()
	if cfg.NodeID < 1 {
		return nil, fmt.Errorf("%w: node id %d; a cluster's node ids start at 1", ErrConfig, cfg.NodeID)
	}
	raftAddr, ok := cfg.Voters[cfg.NodeID]
	if !ok {
		return nil, fmt.Errorf("%w: node %d is not among the voters", ErrConfig, cfg.NodeID)
	}
	for id := range cfg.Voters {
		if id < 1 {
			return nil, fmt.Errorf("%w: voter id %d; a cluster's node ids start at 1", ErrConfig, id)
		}
	}
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: no store", ErrConfig)
	}
	if !cfg.Store.ReplicatedOffsets() {
		// A store that replays its offsets topic writes tombstones to
		// it at Open, outside raft: the replica's log would no longer
		// be the leader's.
		return nil, fmt.Errorf("%w: the store must be opened with store.Options.ReplicatedOffsets: in a cluster its offsets topic is written only by the replication", ErrConfig)
	}
	host, portStr, err := net.SplitHostPort(cfg.Advertise)
	port, perr := strconv.ParseUint(portStr, 10, 16)
	if err != nil || perr != nil || host == "" || port == 0 {
		return nil, fmt.Errorf("%w: advertised address %q is not host:port", ErrConfig, cfg.Advertise)
	}
	// Until the metadata names the cluster, meta.properties cannot be
	// written whole; the node id is kept in the node's own directory
	// meanwhile, so a restart under another id is refused from the first
	// start on.
	p, early, err := readNodeProps(cfg.FS, cfg.Dir, cfg.NodeID)
	if err != nil {
		return nil, err
	}
	// The directory id is made once, with the DIR: a DIR made again
	// (wiped, replaced) has another, which the cluster refuses
	// (ErrDirectoryID). Both files keep it, so that losing one does not
	// make the DIR look new; a DIR a build without directory ids made
	// gets one now, and the controller records it at the registration.
	dirID := cmp.Or(p.directoryID, early.directoryID, layout.NewID())
	if !early.exists || early.directoryID != dirID {
		if err := cfg.FS.MkdirAll(filepath.Join(cfg.Dir, nodeDirName)); err != nil {
			return nil, err
		}
		early.nodeID, early.directoryID = cfg.NodeID, dirID
		if err := early.write(cfg.FS); err != nil {
			return nil, err
		}
	}
	if p.exists && p.directoryID != dirID {
		p.directoryID = dirID
		if err := p.write(cfg.FS); err != nil {
			return nil, err
		}
	}
	p.directoryID = dirID // meta.properties carries it from its next write
	topics, err := loadTopicRecord(cfg.FS, cfg.Dir)
	if err != nil {
		return nil, err
	}

	n := &Node{
		cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), host: host, port: int32(port), raftAddr: raftAddr,
		lastSeen: map[int32]time.Time{},
		rnd:      rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		props:    p, ready: make(chan struct{}), registered: make(chan struct{}), dirID: p.directoryID, failed: make(chan struct{}),
		syncedCh: make(chan struct{}), topics: topics, recordKick: make(chan struct{}, 1),
		restart: make(chan struct{}, 1),
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.syncErrs = errlog.New(n.log, nil)
	n.reach = newReach(&cfg, n)
	if err := n.open(); err != nil {
		n.shut()
		n.cancel()
		return nil, err
	}
	n.wg.Add(5)
	go n.credentialLoop()
	go n.syncLoop()
	go n.heartbeatLoop()
	go n.recordLoop()
	go n.leaderLoop()
	if n.cfg.LeaderImbalanceCheckInterval > 0 {
		n.wg.Add(1)
		go n.rebalanceLoop()
	}
	return n, nil
}

// open starts the raft port and what runs on it; shut undoes what it did.
func (n *Node) open() error {
	cfg := &n.cfg
	var err error
	if cfg.Listener != nil {
		n.mux = raftmux.New(cfg.Listener, raftmux.Config{})
	} else if n.mux, err = raftmux.Listen(cfg.RaftListen, raftmux.Config{}); err != nil {
		return err
	}
	layer, err := n.mux.Register(metaGroup)
	if err != nil {
		return err
	}
	// The forwarding server first: a peer's checkBlank asks it.
	if n.fwd, err = n.mux.Register(forwardGroup); err != nil {
		return err
	}
	n.wg.Add(1)
	go n.acceptLoop()
	logOut := cfg.RaftLogOutput
	if logOut == nil {
		logOut = os.Stderr
	}
	// As raft.NewNetworkTransport makes it, but dialing each voter at
	// its address in cfg.Voters: raft's stored configuration keeps the
	// addresses of the cluster's first start, and a voter that moved
	// would never be reached there.
	// Each RPC's outcome goes to the node's tracker (reachable.go).
	trans := &reachTransport{NetworkTransport: raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: layer, MaxPool: 3, Timeout: 2 * time.Second, ServerAddressProvider: voterAddrs(cfg.Voters),
		Logger: hclog.New(&hclog.LoggerOptions{Name: "raft-net", Output: logOut, Level: hclog.DefaultLevel}),
	}), reach: n.reach, addrs: voterAddrs(cfg.Voters), stop: n.ctx.Done()}
	rc := raft.DefaultConfig()
	rc.LogLevel = "WARN"
	rc.LogOutput = cfg.RaftLogOutput
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = min(cfg.LeaderLeaseTimeout, cfg.HeartbeatTimeout)
	rc.CommitTimeout = 20 * time.Millisecond
	startCtx := cmp.Or(cfg.StartContext, context.Background())
	n.meta, err = meta.Open(meta.Config{Dir: cfg.Dir, FS: cfg.FS, NodeID: cfg.NodeID, Voters: cfg.Voters,
		Transport: trans, Raft: rc, Logger: cfg.Logger, BeforeBootstrap: func() error { return n.checkBlank(startCtx) }})
	if err != nil {
		trans.Close()
		if errors.Is(err, meta.ErrVoters) {
			err = fmt.Errorf("%w; %s", err, votersAdvice)
		}
		return err
	}
	n.metaReady.Store(n.meta)
	peers := map[uint64]string{}
	for id, addr := range cfg.Voters {
		peers[uint64(id)] = addr
	}
	if n.mr, err = multiraft.New(multiraft.Config{ID: uint64(cfg.NodeID), Mux: n.mux, Peers: peers, Tick: cfg.PartitionTick,
		Stopped: n.groupStopped, Reach: n.reach, Log: n.log}); err != nil {
		return err
	}
	newParts := cfg.newPartitions
	if newParts == nil {
		newParts = func(n *Node) (partitions, error) {
			return partition.New(partition.Config{NodeID: n.cfg.NodeID, Raft: n.mr, Store: n.cfg.Store, Notify: n.wake, Logger: n.log})
		}
	}
	if n.parts, err = newParts(n); err != nil {
		return err
	}
	n.opened.Store(true)
	return nil
}

// voterAddrs is the metadata raft's raft.ServerAddressProvider: each
// voter's address from Config.Voters, by its server id (the node id in
// decimal, as package meta names them).
type voterAddrs map[int32]string

func (v voterAddrs) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	n, err := strconv.ParseInt(string(id), 10, 32)
	addr, ok := v[int32(n)]
	if err != nil || !ok {
		// Not after meta.Open's check (ErrVoters): raft then dials
		// the stored address.
		return "", fmt.Errorf("server %q is not among the voters", id)
	}
	return raft.ServerAddress(addr), nil
}

// shut closes what open opened, in reverse.
func (n *Node) shut() error {
	var errs []error
	if n.fwd != nil {
		errs = append(errs, n.fwd.Close())
	}
	if n.parts != nil {
		errs = append(errs, n.parts.Close())
	}
	if n.mr != nil {
		errs = append(errs, n.mr.Close())
	}
	if n.meta != nil {
		errs = append(errs, n.meta.Close())
	}
	if n.mux != nil {
		errs = append(errs, n.mux.Close())
	}
	return errors.Join(errs...)
}

// HandOver is the first step of a controlled shutdown, as Kafka's: the
// partitions this node leads are handed to their most caught-up
// followers, and the controller's role to another voter, so that their
// clients find new leaders while this node still answers (with
// NOT_LEADER_OR_FOLLOWER) instead of after an election timeout once it
// is gone. It returns when nothing is led here any more or ctx ends
// (ctx's error); Close follows. A partition with no follower heard from
// stays led here.
func (n *Node) HandOver(ctx context.Context) error {
	if len(n.cfg.Voters) == 1 {
		return nil // no other node to hand anything to
	}
	// The other nodes are told first, so that their rebalancers hand
	// nothing back to this node while it hands its partitions away
	// (stopping.go): the controller's role goes first, then a
	// heartbeat says this node is stopping to the controller, which
	// has it when the heartbeat is answered, and the others learn it
	// with their next heartbeats, within a heartbeat interval, which
	// this node waits out before it moves its partitions. (A node
	// that handed the controller's role over last was told by no one:
	// the new controller counted it live and not stopping, and a walk
	// saw 433 partitions handed back to it in its last seconds.)
	n.stopping.Store(true)
	var errs []error
	if n.meta != nil {
		if err := n.meta.HandOver(ctx); err != nil && !errors.As(err, new(*meta.NotControllerError)) {
			errs = append(errs, err)
		}
	}
	n.beat()
	select {
	case <-ctx.Done():
	case <-n.ctx.Done():
	case <-time.After(n.cfg.HeartbeatInterval):
	}
	if n.mr != nil {
		// Nothing goes to a node known to be stopping too (every node
		// stopped at once handed partitions round until the last one
		// stopped, a walk saw, 2026-12-06).
		errs = append(errs, n.mr.HandOver(ctx, func(id uint64) bool { return n.stoppingSet()[int32(id)] }))
	}
	return errors.Join(errs...)
}

// Close stops the node: its loops, the partition manager, the driver,
// the metadata group and the raft port. The store is the caller's. A
// node started again over the same Dir rejoins.
func (n *Node) Close() error {
	var err error
	n.closed.Do(func() {
		n.cancel()
		if n.fwd != nil {
			n.fwd.Close() // stops acceptLoop and the connections it serves
		}
		n.wg.Wait()
		err = n.shut()
	})
	return err
}

// ID returns this node's id.
func (n *Node) ID() int32 { return n.cfg.NodeID }

// ClusterID waits until this node's metadata names the cluster (the
// first controller proposes an id) and the controller has accepted its
// registration, and returns the id: the server's Options.ClusterID. A
// restarted node waits too, until it has applied the metadata again,
// which takes a controller: a node that cannot reach a quorum has
// nothing to serve. ErrClusterID if DIR's meta.properties names another
// cluster; the node's failure (Err) if it failed first; a *WaitError,
// saying which voters this node reached and which not, if ctx ends
// first.
func (n *Node) ClusterID(ctx context.Context) (string, error) {
	for _, ch := range []chan struct{}{n.ready, n.registered} {
		select {
		case <-ch:
		case <-n.failed:
			return "", n.failErr
		case <-ctx.Done():
			return "", &WaitError{Node: n.cfg.NodeID, Controller: n.meta.Controller(), Voters: n.Voters(), Err: ctx.Err()}
		case <-n.ctx.Done():
			return "", ErrClosed
		}
		if n.clusterErr != nil {
			return "", n.clusterErr
		}
	}
	return n.clusterID, nil
}

// Failed returns a channel closed when the node meets an error it cannot
// run past; Err then says which: the controller refused its
// registration because the broker registered from another DIR before
// (ErrDirectoryID) or with other voters (ErrVotersDiffer, which a peer's
// whois at a first start or a controller not among Voters also give),
// DIR belongs to another cluster (ErrClusterID), or
// the metadata holds an entry a newer build wrote (meta.ErrNewerMetadata,
// which can come at any time). ClusterID answers one that comes before
// it returns. A failed node writes nothing more to its store and starts
// no replica; its owner closes it (serve exits with the error).
func (n *Node) Failed() <-chan struct{} { return n.failed }

// Err returns the node's failure once Failed is closed, else nil.
func (n *Node) Err() error {
	select {
	case <-n.failed:
		return n.failErr
	default:
		return nil
	}
}

// fail records the node's failure and closes failed, once.
func (n *Node) fail(err error) {
	n.failOnce.Do(func() {
		// Not logged: the owner reports it (serve exits with it).
		n.failErr = err
		close(n.failed)
	})
}

// SetNotify sets the function called when a partition's high watermark
// or leader changes, or the metadata does.
func (n *Node) SetNotify(wake func()) { n.notify.Store(&wake) }

// SetObserver sets the observer the node's replicas report their writes
// to (server.LogObserver).
func (n *Node) SetObserver(o server.LogObserver) { n.parts.SetObserver(o) }

func (n *Node) wake() {
	n.kickRecord()
	if f := n.notify.Load(); f != nil {
		(*f)()
	}
}

// Brokers returns the registered brokers that are live (docs
// /cluster-node.md, "Liveness") and the controller's id.
func (n *Node) Brokers() ([]server.Broker, int32) {
	st := n.meta.State()
	live := n.liveSet(st)
	var out []server.Broker
	for _, b := range st.Brokers() {
		if live[b.ID] {
			out = append(out, server.Broker{NodeID: b.ID, Host: b.Host, Port: b.Port})
		}
	}
	return out, n.meta.Controller()
}

// liveSet returns which registered brokers are live as this node knows:
// on the controller, those heard from within LivenessTimeout (counting
// from when it became controller for those not heard since); elsewhere,
// the set the controller last answered, while fresh, and any broker
// registered since; with no fresh
// answer, every registered broker, since this node cannot tell.
func (n *Node) liveSet(st *meta.State) map[int32]bool {
	now := time.Now()
	out := map[int32]bool{n.cfg.NodeID: true}
	ctrl := n.meta.IsController()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.noteController(ctrl, now)
	switch {
	case ctrl:
		for _, id := range st.BrokerIDs() {
			seen := n.lastSeen[id]
			if seen.Before(n.since) {
				seen = n.since
			}
			if now.Sub(seen) < n.cfg.LivenessTimeout {
				out[id] = true
			}
		}
	case !n.liveAt.IsZero() && now.Sub(n.liveAt) < n.cfg.LivenessTimeout:
		for _, id := range n.liveView {
			out[id] = true
		}
		// A registration is a heartbeat: a broker registered after the
		// controller's answer is live too.
		for _, b := range st.Brokers() {
			if b.Epoch > n.liveIndex {
				out[b.ID] = true
			}
		}
	default:
		for _, id := range st.BrokerIDs() {
			out[id] = true
		}
	}
	return out
}

// noteController records a change of this node's controllership; n.mu
// held.
func (n *Node) noteController(ctrl bool, now time.Time) {
	if ctrl && !n.isController {
		n.since = now
		// Reports sent to an earlier term of this node's are stale;
		// each broker reports again within a heartbeat interval.
		n.reports = nil
		// The brokers stopping as the last controller answered them
		// stay so: a broker stopping reports it again at its next
		// heartbeat, but until then it must not look like a taker.
		n.stoppingIDs = nil
		for _, id := range n.stoppingView {
			n.noteStopping(id, true)
		}
	}
	n.isController = ctrl
}

// DefaultReplicationFactor is the replication factor of topics created
// without one (Config.DefaultReplicationFactor, or its default), for the
// server to report as default.replication.factor.
func (n *Node) DefaultReplicationFactor() int { return n.cfg.DefaultReplicationFactor }
