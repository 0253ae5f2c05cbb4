package meta

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/raftlog"
	"github.com/seglog/seglog/vfs"
)

// DirName is the directory inside a node's DIR that holds the metadata's
// raft log (a raftlog.Store) and its snapshots. DIR is also the node's
// store (package store), which refuses to open a log.dir holding a
// directory that is not a partition ("topic-N"), as Kafka refuses one,
// except hidden ones; and a "topic-N" name such as KRaft's
// "__cluster_metadata-0" would be adopted by the store as a partition of
// its own and opened as one. A hidden directory is the one name both the
// store and its tools (fsck, seglog topics) leave alone, so the metadata
// can live in DIR without changing what a store directory may hold.
const DirName = layout.ClusterMetadataDir

// DefaultSegmentBytes is the metadata log's segment size: the log holds
// small commands and is compacted after every snapshot, so raftlog's
// 64 MiB (sized for partition data, and preallocated whole) would mostly
// hold zeros. It still holds a batch of the largest command.
const DefaultSegmentBytes = 8 << 20

// ErrNotController matches every *NotControllerError: a command proposed
// to a node that is not the metadata leader (Kafka's NOT_CONTROLLER).
var ErrNotController = errors.New("meta: not the controller")

// ErrConfig reports a Config Open cannot start with.
var ErrConfig = errors.New("meta: invalid node configuration")

// ErrVoters refuses an Open whose Config.Voters names other node ids
// than the raft configuration the store already holds: the voters are
// fixed when the group is bootstrapped (membership changes are not
// supported), and raft goes on with the stored set whatever Voters says,
// while the rest of the node (the partitions' peers, the default
// replication factor) would follow Voters.
var ErrVoters = errors.New("meta: the voters given are not the metadata's")

// NotControllerError is a refused proposal: this node is not the raft
// leader of the metadata. Leader names the controller as last known
// (−1 when there is none, as during an election), so the server can
// answer NOT_CONTROLLER and clients find the controller in Metadata.
type NotControllerError struct {
	// Leader is the controller's node id, −1 if unknown.
	Leader int32
	// Err is raft's error, when raft refused the entry or lost
	// leadership before it was committed. After raft.ErrLeadershipLost
	// the command may still be committed by the next leader: its effect
	// is unknown, and the state will tell.
	Err error
}

// Error names the controller.
func (e *NotControllerError) Error() string {
	s := "meta: this node is not the controller"
	if e.Leader >= 0 {
		s += "; the controller is node " + strconv.Itoa(int(e.Leader))
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is makes the error match ErrNotController.
func (e *NotControllerError) Is(target error) bool { return target == ErrNotController }

// Unwrap returns raft's error.
func (e *NotControllerError) Unwrap() error { return e.Err }

// Config is what a Node needs.
type Config struct {
	// Dir is the node's DIR; the metadata lives in Dir/DirName.
	Dir string
	// FS is the filesystem; nil is the real one.
	FS vfs.FS
	// NodeID is this node's id, one of Voters.
	NodeID int32
	// Voters maps every voter's node id to its raft address, this node
	// included; every node is given the same map. It bootstraps the
	// raft configuration of a node whose store is empty; once the log or
	// a snapshot exists, raft's configuration is in them, and Open
	// refuses Voters naming other ids (ErrVoters). The addresses raft
	// keeps are those of the bootstrap: a caller whose voters may move
	// gives its Transport the current ones (raft.ServerAddressProvider).
	Voters map[int32]string
	// Transport carries raft's RPCs; the caller owns it (the server's
	// port multiplexer, raft.NewInmemTransport in tests). raft closes
	// a transport that has a Close method when the Node closes.
	Transport raft.Transport
	// Snapshots stores raft snapshots; nil is a SnapshotStore in
	// Dir/DirName/snapshots on FS, keeping two.
	Snapshots raft.SnapshotStore
	// Raft tunes raft; nil is raft.DefaultConfig() logging at INFO
	// (its default, DEBUG, logs every RPC failure and more to stderr).
	// LocalID is set from NodeID.
	Raft *raft.Config
	// SegmentBytes is the raft log's segment size; 0 is
	// DefaultSegmentBytes.
	SegmentBytes int64
	// Logger receives raftlog's recovery messages; nil is slog.Default().
	Logger *slog.Logger
	// BeforeBootstrap, if set, is called when the store holds neither log
	// nor snapshot, before the voters are bootstrapped and raft starts:
	// an error fails Open with nothing bootstrapped. The cluster node
	// asks its peers there whether it is a new node or one whose DIR was
	// wiped, which must not vote.
	BeforeBootstrap func() error
}

// Node is one node's member of the metadata raft group: a raftlog.Store,
// a snapshot store, the FSM and the raft that drives them. The raft
// leader is the controller: only it proposes commands.
type Node struct {
	id    int32
	fsm   *FSM
	store *raftlog.Store
	raft  *raft.Raft

	// maxCommand is the largest encoded command the raft log takes in
	// one entry: a leader whose log store refuses an entry steps down,
	// so Propose refuses it first.
	maxCommand int

	// barrierMu serializes catchUp; barrierTerm is the term in which
	// this node, as leader, has applied every entry of earlier terms.
	barrierMu   sync.Mutex
	barrierTerm uint64
}

// Open opens (creating if needed) the metadata store in cfg.Dir/DirName,
// bootstraps the voters if the store holds neither log nor snapshot, and
// starts raft. The state is the snapshot's and the log's once raft has
// replayed them; Watch tells when it changes.
func Open(cfg Config) (*Node, error) {
	if _, ok := cfg.Voters[cfg.NodeID]; !ok {
		return nil, fmt.Errorf("%w: node %d is not among the voters", ErrConfig, cfg.NodeID)
	}
	if cfg.Transport == nil {
		return nil, fmt.Errorf("%w: no transport", ErrConfig)
	}
	fsys := cfg.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	dir := filepath.Join(cfg.Dir, DirName)
	snaps := cfg.Snapshots
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, err
	}
	segBytes := cfg.SegmentBytes
	if segBytes == 0 {
		segBytes = DefaultSegmentBytes
	}
	if segBytes < 64<<10 {
		return nil, fmt.Errorf("%w: segments of %d bytes; at least 64 KiB", ErrConfig, segBytes)
	}
	st, err := raftlog.Open(dir, raftlog.Options{FS: fsys, Logger: cfg.Logger, SegmentBytes: segBytes})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Node, error) {
		st.Close()
		return nil, err
	}
	if snaps == nil {
		if snaps, err = NewSnapshotStore(fsys, filepath.Join(dir, "snapshots"), 2); err != nil {
			return fail(err)
		}
	}
	conf := raft.DefaultConfig()
	conf.LogLevel = "INFO"
	if cfg.Raft != nil {
		c := *cfg.Raft
		conf = &c
	}
	conf.LocalID = serverID(cfg.NodeID)
	existing, err := raft.HasExistingState(st, st, snaps)
	if err != nil {
		return fail(err)
	}
	if existing {
		// Before raft starts: a node refused here has cast no vote and
		// taken no entry under the configuration it was refused for.
		if err := checkVoters(conf, st, snaps, cfg.Voters, dir); err != nil {
			return fail(err)
		}
	}
	if !existing && cfg.BeforeBootstrap != nil {
		if err := cfg.BeforeBootstrap(); err != nil {
			return fail(err)
		}
	}
	if !existing {
		// Every node bootstraps the same configuration, which raft
		// allows: the first election picks one leader among them.
		var servers []raft.Server
		for _, id := range slices.Sorted(maps.Keys(cfg.Voters)) {
			servers = append(servers, raft.Server{ID: serverID(id), Address: raft.ServerAddress(cfg.Voters[id])})
		}
		if err := raft.BootstrapCluster(conf, st, st, snaps, cfg.Transport, raft.Configuration{Servers: servers}); err != nil {
			return fail(err)
		}
	}
	fsm := NewFSM()
	r, err := raft.NewRaft(conf, fsm, st, st, snaps, cfg.Transport)
	if err != nil {
		return fail(err)
	}
	// raftlog refuses an entry over its batch size (at most 8 MiB, and
	// at most a segment) less 169 bytes of framing; the rest of the
	// margin is for the headers raft's fields become.
	maxCommand := min(MaxCommandBytes, int(min(segBytes, 8<<20))-4096)
	return &Node{id: cfg.NodeID, fsm: fsm, store: st, raft: r, maxCommand: maxCommand}, nil
}

// checkVoters refuses (ErrVoters) voters whose ids are not those of the
// latest raft configuration in st and snaps, which it reads without
// starting raft: raft.GetConfiguration does what NewRaft does before it
// starts (the newest snapshot's configuration, then every configuration
// entry of the log after it) and no more. It reads the log after the
// snapshot once more than NewRaft will, and not the snapshot's data:
// NoSnapshotRestoreOnStart takes the configuration from the snapshot's
// meta without restoring the FSM. Its transport is one of its own, so
// the caller's gets no heartbeat handler from a raft that never runs,
// and its stable store drops writes: NewRaft stores again the term it
// has just read, and a refused start is to write nothing.
func checkVoters(conf *raft.Config, st *raftlog.Store, snaps raft.SnapshotStore, voters map[int32]string, dir string) error {
	c := *conf // GetConfiguration marks the Config it is given
	c.NoSnapshotRestoreOnStart = true
	// It logs the configuration it found at INFO, as NewRaft does next.
	c.Logger, c.LogOutput = nil, io.Discard
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	stored, err := raft.GetConfiguration(&c, NewFSM(), st, readOnlyStable{st}, snaps, trans)
	if err != nil {
		return fmt.Errorf("meta: reading the raft configuration in %s: %w", dir, err)
	}
	if len(stored.Servers) == 0 {
		// No configuration to compare with (raft's bootstrap stores
		// the term before the entry): raft starts as it would have.
		return nil
	}
	given := map[raft.ServerID]bool{}
	for id := range voters {
		given[serverID(id)] = true
	}
	same := len(stored.Servers) == len(given)
	for _, s := range stored.Servers {
		same = same && given[s.ID]
	}
	if same {
		return nil
	}
	servers := slices.Clone(stored.Servers)
	slices.SortFunc(servers, func(a, b raft.Server) int {
		ai, _ := strconv.Atoi(string(a.ID))
		bi, _ := strconv.Atoi(string(b.ID))
		return cmp.Compare(ai, bi)
	})
	var have, want []string
	for _, s := range servers {
		have = append(have, string(s.ID)+"@"+string(s.Address))
	}
	for _, id := range slices.Sorted(maps.Keys(voters)) {
		want = append(want, strconv.Itoa(int(id)))
	}
	return fmt.Errorf("%w: this node was given voters %s, and the metadata in %s holds voters %s (with their addresses at the cluster's first start)",
		ErrVoters, strings.Join(want, ","), dir, strings.Join(have, ","))
}

// readOnlyStable is a raft.StableStore that reads from its store and
// drops writes (checkVoters').
type readOnlyStable struct{ raft.StableStore }

func (readOnlyStable) Set([]byte, []byte) error       { return nil }
func (readOnlyStable) SetUint64([]byte, uint64) error { return nil }

// LastIndex returns the index of the last entry in this node's raft log
// or snapshot: 1 or less for a node that holds only its bootstrap.
func (n *Node) LastIndex() uint64 { return n.raft.LastIndex() }

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// ID returns this node's id.
func (n *Node) ID() int32 { return n.id }

// State returns the metadata as this node has applied it: on a follower
// it may lag the controller's by the entries not yet replicated.
func (n *Node) State() *State { return n.fsm.State() }

// Watch returns the state and a channel closed when it changes; see
// FSM.Watch. The server uses it to start and stop partition groups as
// topics come and go.
func (n *Node) Watch() (*State, <-chan struct{}) { return n.fsm.Watch() }

// Controller returns the metadata leader's node id, −1 when there is
// none known (an election is under way): Metadata's ControllerID.
func (n *Node) Controller() int32 {
	_, id := n.raft.LeaderWithID()
	v, err := strconv.ParseInt(string(id), 10, 32)
	if id == "" || err != nil {
		return -1
	}
	return int32(v)
}

// IsController reports whether this node is the metadata leader.
func (n *Node) IsController() bool { return n.raft.State() == raft.Leader }

// ControllerState returns the state a controller plans a command
// against (NewCreateTopic and the like): on the leader, once it has
// applied every entry committed before its term, so a command a deposed
// leader left uncertain is seen if it was committed. A node that is not
// the controller answers a *NotControllerError.
func (n *Node) ControllerState(ctx context.Context) (*State, error) {
	if err := n.catchUp(ctx); err != nil {
		return nil, err
	}
	return n.fsm.State(), nil
}

// catchUp makes sure, once per term, that this leader has applied the
// log up to the start of its term: a new leader's FSM may still lag the
// entries its predecessor committed (raft commits them with the new
// term's first entry), and a plan made on that state would be refused.
func (n *Node) catchUp(ctx context.Context) error {
	if n.raft.State() != raft.Leader {
		return &NotControllerError{Leader: n.Controller()}
	}
	n.barrierMu.Lock()
	defer n.barrierMu.Unlock()
	term := n.raft.CurrentTerm()
	if n.barrierTerm == term {
		return nil
	}
	if err := n.wait(ctx, n.raft.Barrier(timeoutOf(ctx))); err != nil {
		return err
	}
	n.barrierTerm = term
	return nil
}

// timeoutOf is ctx's time left as raft's enqueue timeout, 0 (none) for
// a ctx without a deadline.
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Nanosecond)
	}
	return 0
}

// wait waits for f or ctx, translating raft's leadership errors.
func (n *Node) wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	var err error
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err = <-done:
	}
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
		return &NotControllerError{Leader: n.Controller(), Err: err}
	}
	return err
}

// Propose replicates c and applies it, answering its Result once a
// majority holds it and this node has applied it; a refused command
// answers its Result with Err set (and changed nothing). A node that is
// not the controller refuses with a *NotControllerError; one that lost
// leadership while c was in flight answers one wrapping
// raft.ErrLeadershipLost, and c may yet be applied. If ctx ends first,
// Propose answers ctx's error and c may still be applied.
func (n *Node) Propose(ctx context.Context, c Command) (Result, error) {
	b, err := Encode(c)
	if err != nil {
		return Result{}, err
	}
	if len(b) > n.maxCommand {
		return Result{}, fmt.Errorf("%w: command of %d bytes, this node's log takes %d", ErrBadEncoding, len(b), n.maxCommand)
	}
	if err := n.catchUp(ctx); err != nil {
		return Result{}, err
	}
	f := n.raft.Apply(b, timeoutOf(ctx))
	if err := n.wait(ctx, f); err != nil {
		return Result{}, err
	}
	res, ok := f.Response().(Result)
	if !ok {
		return Result{}, fmt.Errorf("meta: unexpected apply response %T", f.Response())
	}
	return res, res.Err
}

// HandOver moves the controller's role to the most up-to-date other
// voter (hashicorp raft's leadership transfer) when this node holds it,
// and returns once the transfer is done or ctx ends: a node about to stop
// spares the cluster an election timeout without a controller. Nothing
// is done, and nil returned, on a node that is not the controller.
func (n *Node) HandOver(ctx context.Context) error {
	if !n.IsController() {
		return nil
	}
	return n.wait(ctx, n.raft.LeadershipTransfer())
}

// Close stops raft and closes the store. It does not remove the node from
// the voters: a node closed and opened again with the same Dir rejoins.
func (n *Node) Close() error {
	err := n.raft.Shutdown().Error()
	return errors.Join(err, n.store.Close())
}
