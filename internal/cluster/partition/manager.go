// Package partition runs the partition raft groups a node replicates: it
// opens each assigned partition's raft log in the node's store (package
// replica, over store.Writer), adds it to the node's multiraft driver,
// keeps each partition's high watermark as entries commit, and serves the
// server's replicated paths (server.Cluster's Produce, State and
// EndOffsetForEpoch, and the leaders Metadata lists).
// docs/cluster-partitions.md describes it.
package partition

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/internal/cluster/replica"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
	pb "go.etcd.io/raft/v3/raftpb"
)

// Assignment is one partition of the cluster's metadata: its raft group
// and the node ids of its replicas (the group's voters).
type Assignment struct {
	Topic     string
	Partition int32
	Group     uint64
	Replicas  []int32
}

// Config sets up a Manager.
type Config struct {
	// NodeID is this node's id (its raft id and broker id).
	NodeID int32
	// Raft is the node's partition driver; the caller closes it after
	// the Manager.
	Raft *multiraft.Node
	// Store holds the partitions; the node creates a topic in it before
	// an assignment of it reaches Sync.
	Store *store.Store
	// Notify is called when a high watermark advances or a leader
	// changes, so that parked fetches wake; it must be quick (it runs on
	// the driver goroutine). Nil calls nothing.
	Notify func()
	// Logger receives what the Manager does to groups; nil discards it.
	Logger *slog.Logger
}

// statusTimeout bounds the wait for the driver's status of a group (for
// the in-sync replicas Metadata lists).
const statusTimeout = time.Second

type key struct {
	topic string
	part  int32
}

// Manager runs this node's replicas of the partitions assigned to it. Its
// methods are safe for concurrent use.
type Manager struct {
	cfg Config

	mu       sync.RWMutex
	parts    map[key]*part
	closed   bool
	observer atomic.Pointer[server.LogObserver]
	// stats is what the replication counts (stats.go).
	stats replStats
}

// part is one replica this node runs.
type part struct {
	a  Assignment
	st *replica.Store
	// w is the partition in the store, whose cleaning floor the apply
	// callback moves; floor is the floor last set (driver goroutine).
	w     store.Writer
	floor int64
	// hw is the high watermark: the end of the last batch applied here
	// (committed, so held by a majority).
	hw atomic.Int64
	// lead and term are the leader and term last seen at an apply, to
	// notify a change.
	lead, term atomic.Uint64

	// local waits for producer batches of acks 1 to be in this node's
	// log: the Storage wrapper (storage) answers them from Append.
	wmu     sync.Mutex
	waiting map[uint32][]*waiter
	nwait   atomic.Int32

	// isrSeen is the in-sync set last computed as leader (stats.go).
	isrSeen isrSeen
}

// New returns a Manager running no group yet: Sync starts them.
func New(cfg Config) (*Manager, error) {
	if cfg.NodeID <= 0 || cfg.Raft == nil || cfg.Store == nil {
		return nil, errors.New("partition: Config needs NodeID, Raft and Store")
	}
	if cfg.Notify == nil {
		cfg.Notify = func() {}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Manager{cfg: cfg, parts: make(map[key]*part)}, nil
}

// Sync makes the groups this node runs exactly the assignments that name
// it: for a new one it opens a replica store over
// store.Writer(topic, partition) (the node has created the topic in the
// store first) and adds the group with the assignment's replicas as its
// voters; it removes the groups no longer assigned here (or whose group id
// changed: a topic deleted and made again). It never deletes data: the
// node deletes a deleted topic's data itself. A group the driver stopped
// (a storage error) is started again. The first error is returned after
// every assignment was tried.
func (m *Manager) Sync(as []Assignment) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return multiraft.ErrClosed
	}
	want := make(map[key]Assignment)
	for _, a := range as {
		if slices.Contains(a.Replicas, m.cfg.NodeID) {
			want[key{a.Topic, a.Partition}] = a
		}
	}
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for k, p := range m.parts {
		a, ok := want[k]
		_, _, lerr := m.cfg.Raft.Leader(p.a.Group)
		stopped := errors.Is(lerr, multiraft.ErrGroupNotFound)
		if ok && a.Group == p.a.Group && !stopped {
			continue
		}
		if stopped && ok {
			m.cfg.Logger.Warn("partition: restarting a stopped group", "topic", k.topic, "partition", k.part, "group", p.a.Group)
		}
		note(m.remove(k, p))
	}
	// In as's order (the metadata's: topic by topic, partition by
	// partition), the same on every node: a new topic's groups start at
	// about the same time on each of their replicas, so the preferred
	// replica comes within its peers' first-election hold
	// (multiraft/preferred.go). Started in a map's order, a walk's nodes
	// started a 300-partition topic's groups up to 3.8 s apart, and up to
	// 35 of its partitions were first led off their preferred replica.
	for _, a := range as {
		k := key{a.Topic, a.Partition}
		a, ok := want[k]
		if _, started := m.parts[k]; !ok || started {
			continue
		}
		note(m.add(k, a))
	}
	return first
}

// add opens a's replica and starts its group. Called with mu.
func (m *Manager) add(k key, a Assignment) error {
	w, err := m.cfg.Store.Writer(a.Topic, a.Partition)
	if err != nil {
		return fmt.Errorf("partition: %s-%d: %w", a.Topic, a.Partition, err)
	}
	tc, err := m.cfg.Store.TopicConfigOf(a.Topic)
	if err != nil {
		return fmt.Errorf("partition: %s-%d: %w", a.Topic, a.Partition, err)
	}
	st, err := replica.Open(&observed{Writer: w, m: m, topic: a.Topic, partition: a.Partition}, replica.Options{FS: m.cfg.Store.FS(), MaxBatchBytes: tc.MaxMessageBytes})
	if err != nil {
		return fmt.Errorf("partition: %s-%d: %w", a.Topic, a.Partition, err)
	}
	p := &part{a: a, st: st, w: w, waiting: make(map[uint32][]*waiter)}
	// What the log says was committed before a restart is the high
	// watermark until raft applies it again.
	if hs, _, err := st.InitialState(); err == nil {
		if hw, err := st.HighWatermark(hs.GetCommit()); err == nil {
			p.hw.Store(hw)
		}
	}
	// Until raft applies again, the cleaner keeps every entry of the raft
	// log: raft applies the committed entries again from the first one
	// after a restart, and etcd raft panics if one is gone. (A commit
	// index below 1 gives the first entry's offset.)
	floor, err := st.HighWatermark(0)
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("partition: %s-%d: %w", a.Topic, a.Partition, err)
	}
	p.floor = floor
	w.SetCleaningFloor(floor)
	peers := make([]uint64, len(a.Replicas))
	for i, r := range a.Replicas {
		peers[i] = uint64(r)
	}
	if err := m.cfg.Raft.AddGroup(a.Group, peers, storage{st, p}, func(ents []*pb.Entry) error { return m.apply(p, ents) }); err != nil {
		_ = st.Close()
		return fmt.Errorf("partition: %s-%d: group %d: %w", a.Topic, a.Partition, a.Group, err)
	}
	m.parts[k] = p
	m.cfg.Logger.Info("partition: replica started", "topic", a.Topic, "partition", a.Partition, "group", a.Group, "replicas", a.Replicas)
	return nil
}

// remove stops p's group and closes its replica store; the partition's
// data stays. Called with mu.
func (m *Manager) remove(k key, p *part) error {
	delete(m.parts, k)
	start := time.Now()
	err := m.cfg.Raft.RemoveGroup(p.a.Group)
	if errors.Is(err, multiraft.ErrGroupNotFound) || errors.Is(err, multiraft.ErrClosed) {
		err = nil
	}
	removed := time.Now()
	if cerr := p.st.Close(); err == nil && !errors.Is(cerr, replica.ErrClosed) {
		err = cerr
	}
	// The two waits, so that a slow stop says which it was (a walk saw
	// 0.4 s a replica once, not reproduced): the driver's removal of the
	// group, and the store's close, which flushes the log.
	m.cfg.Logger.Info("partition: replica stopped", "topic", k.topic, "partition", k.part, "group", p.a.Group,
		"raft", removed.Sub(start).Round(time.Millisecond), "close", time.Since(removed).Round(time.Millisecond))
	return err
}

// apply advances p's high watermark to the end of the last committed
// batch and notifies; entries after a restart that are already below it
// change nothing. A leader change is noticed here too: a new leader's
// first entry is an empty one it commits at once. It runs on the driver
// goroutine. A DeleteRecords entry moves the log start here
// (applyDelete).
func (m *Manager) apply(p *part, ents []*pb.Entry) error {
	for _, e := range ents {
		if off, ok := replica.DeleteRecordsOffset(e); ok {
			if err := m.applyDelete(p, e.GetIndex(), off); err != nil {
				return err
			}
		}
	}
	hw, err := p.st.HighWatermark(ents[len(ents)-1].GetIndex())
	if err != nil {
		return err
	}
	changed := false
	if hw > p.hw.Load() {
		p.hw.Store(hw)
		changed = true
	}
	if err := m.moveFloor(p, ents[len(ents)-1].GetIndex(), hw); err != nil {
		return err
	}
	// Raft has what it applies; the Store need not keep the batches.
	p.st.Applied(ents[len(ents)-1].GetIndex())
	if lead, term, err := m.cfg.Raft.Leader(p.a.Group); err == nil {
		if p.lead.Swap(lead) != lead || p.term.Swap(term) != term {
			changed = true
		}
	}
	if changed {
		m.cfg.Notify()
	}
	return nil
}

// moveFloor raises p's cleaning floor after the entries up to applied
// were applied here; hw is where they end. Retention may then delete what
// raft applied (a follower that still needs it gets a snapshot), never
// what raft must still apply. A compacting topic's floor is also the raft
// log's first entry: the raft log gives up its entries a segment at a
// time (replica.Store.CompactTo), so compaction, which removes batches,
// never renumbers an entry raft still reads. The policy is read at each
// move, so a topic altered to compact is covered from its next apply.
// On the driver goroutine.
func (m *Manager) moveFloor(p *part, applied uint64, hw int64) error {
	// Never past the last anchored batch either (replica.Store.LastAnchor:
	// a log whose anchored batches are all gone cannot be reopened).
	hw = min(hw, p.st.LastAnchor())
	if hw <= p.floor {
		return nil
	}
	floor := hw
	if tc, err := m.cfg.Store.TopicConfigOf(p.a.Topic); err != nil || tc.CleanupPolicy != cleaner.Delete {
		// A topic the store no longer knows is held as a compacting one.
		off, err := p.st.CompactTo(applied)
		if err != nil {
			return err
		}
		floor = min(off, hw)
	}
	if floor > p.floor {
		p.floor = floor
		p.w.SetCleaningFloor(floor)
	}
	return nil
}

// storage is the replica store as the driver sees it: its Append also
// answers the producers waiting for their batch to be in this node's log
// (acks 1).
type storage struct {
	*replica.Store
	p *part
}

// waiter is a producer batch of acks 1 waiting to be in this node's log.
type waiter struct {
	data []byte
	term uint64 // the term this node led in when it proposed it
	c    chan uint64
}

// waitKey is what a batch is looked up by: its CRC, which covers the rest
// of it (the whole bytes are compared after).
func waitKey(b []byte) uint32 {
	if len(b) < record.HeaderSize {
		return 0
	}
	return record.Batch(b).CRC()
}

// Append stores the entries, then tells each waiting producer the index
// its batch got. raft copies a proposal's bytes (and the Store stamps the
// copy with its offset and epoch), so a batch is recognized by its bytes
// but for those stamps, and its term: entries of a term are made by that term's
// leader alone, so one of the term a producer's batch was proposed in,
// with its bytes, is that batch (or one identical to it proposed here
// too, whose producer takes the next one).
func (s storage) Append(ents []*pb.Entry) error {
	if err := s.Store.Append(ents); err != nil {
		return err
	}
	if s.p.nwait.Load() == 0 {
		return nil
	}
	s.p.wmu.Lock()
	defer s.p.wmu.Unlock()
	for _, e := range ents {
		d := e.GetData()
		if len(d) == 0 {
			continue
		}
		k := waitKey(d)
		ws := s.p.waiting[k]
		for i, w := range ws {
			if w.term == e.GetTerm() && record.EqualUnstamped(w.data, d) {
				w.c <- e.GetIndex()
				s.p.dropWaiter(k, i)
				break
			}
		}
	}
	return nil
}

// wait registers a producer batch of acks 1 proposed in term; its channel
// receives the batch's index once this node's log holds it.
func (p *part) wait(batch []byte, term uint64) *waiter {
	w := &waiter{data: batch, term: term, c: make(chan uint64, 1)}
	k := waitKey(batch)
	p.wmu.Lock()
	p.waiting[k] = append(p.waiting[k], w)
	p.nwait.Add(1)
	p.wmu.Unlock()
	return w
}

// unwait drops w if Append did not answer it.
func (p *part) unwait(w *waiter) {
	k := waitKey(w.data)
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if i := slices.Index(p.waiting[k], w); i >= 0 {
		p.dropWaiter(k, i)
	}
}

// dropWaiter removes the i-th waiter of key k. Called with wmu.
func (p *part) dropWaiter(k uint32, i int) {
	ws := slices.Delete(p.waiting[k], i, i+1)
	if len(ws) == 0 {
		delete(p.waiting, k)
	} else {
		p.waiting[k] = ws
	}
	p.nwait.Add(-1)
}

func (m *Manager) part(topic string, partition int32) (*part, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, multiraft.ErrClosed
	}
	p := m.parts[key{topic, partition}]
	if p == nil {
		return nil, fmt.Errorf("%w: %s-%d has no replica on node %d", server.ErrNotLeader, topic, partition, m.cfg.NodeID)
	}
	return p, nil
}

// Produce proposes one producer batch (checked by the server; the leader
// checks and stamps nothing: every replica's Append stamps its copy) to a
// partition this node leads, and returns its base offset. With acks -1 it
// returns once the batch is committed (a majority holds it) and applied
// here; with acks 1 (or 0) once this node's own log holds it, which the
// replica store's Append reports (the entry may still be lost to a leader
// change, as in Kafka). Once it returns, whatever its answer, nothing reads
// batch again (raft copies it when it takes the proposal, and
// multiraft.Propose returns only after that or once it never will): the
// caller may reuse it. With acks 1 the proposal goes on after the return
// without its bytes.
//
// With acks -1 the topic's min.insync.replicas applies first (Kafka's
// check before an acks=all append): fewer replicas live than it, or than
// a majority, refuse the batch unwritten; a value above the majority also
// makes the answer wait for that many replicas to hold it (produceAll).
//
// Errors wrap server.ErrNotLeader (this node is not the leader, or lost
// the leadership before the batch committed), server.ErrNotEnoughReplicas
// (refused, nothing proposed), server.ErrNotEnoughReplicasAfterAppend
// (committed, but too few replicas stayed to reach min.insync.replicas),
// or ctx's error (its deadline came with no commit: the batch may still
// commit later).
func (m *Manager) Produce(ctx context.Context, topic string, partition int32, batch []byte, acks int16) (int64, error) {
	p, err := m.part(topic, partition)
	if err != nil {
		return 0, err
	}
	if len(batch) == 0 {
		return 0, fmt.Errorf("%w: an empty batch", replica.ErrBadEntry)
	}
	lead, term, err := m.cfg.Raft.Leader(p.a.Group)
	if err != nil || lead != uint64(m.cfg.NodeID) {
		return 0, fmt.Errorf("%w: %s-%d is led by node %d", server.ErrNotLeader, topic, partition, lead)
	}
	if acks == -1 {
		return m.produceAll(ctx, topic, partition, p, batch)
	}
	index, err := m.proposeLocal(ctx, p, batch, term)
	if err != nil {
		return 0, m.produceErr(topic, partition, err)
	}
	return p.st.Offset(index)
}

// proposeLocal proposes batch and returns its index once this node's log
// holds it, or the proposal's own answer if that comes first (an error,
// or a commit the Append report raced with).
func (m *Manager) proposeLocal(ctx context.Context, p *part, batch []byte, term uint64) (uint64, error) {
	w := p.wait(batch, term)
	defer p.unwait(w)
	type result struct {
		index uint64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		// The proposal goes on after an early return: it ends when the
		// batch commits or is lost, or ctx ends.
		start := time.Now()
		i, err := m.cfg.Raft.Propose(ctx, p.a.Group, batch)
		if err == nil {
			m.timeCommit(start)
		}
		done <- result{i, err}
	}()
	select {
	case i := <-w.c:
		return i, nil
	case r := <-done:
		return r.index, r.err
	}
}

// produceErr maps the driver's errors to the server's.
func (m *Manager) produceErr(topic string, partition int32, err error) error {
	var nl *multiraft.NotLeaderError
	switch {
	case errors.As(err, &nl), errors.Is(err, multiraft.ErrProposalDropped), errors.Is(err, multiraft.ErrGroupRemoved), errors.Is(err, multiraft.ErrGroupNotFound):
		return fmt.Errorf("%w: %s-%d: %w", server.ErrNotLeader, topic, partition, err)
	case errors.Is(err, context.DeadlineExceeded):
		// Not ErrNotEnoughReplicas, which tells a Kafka client its batch
		// was refused unwritten: this one was proposed, may be in the
		// leader's log already, and commits if a majority comes back
		// (REQUEST_TIMED_OUT: the outcome is unknown).
		return fmt.Errorf("partition: %s-%d: no majority stored the batch in time; it may still commit: %w", topic, partition, err)
	}
	return fmt.Errorf("partition: %s-%d: %w", topic, partition, err)
}

// State returns whether this node leads the partition, the leader epoch
// (the raft term this node knows) and the high watermark.
func (m *Manager) State(topic string, partition int32) (server.PartitionState, error) {
	p, err := m.part(topic, partition)
	if err != nil {
		return server.PartitionState{}, err
	}
	lead, term, err := m.cfg.Raft.Leader(p.a.Group)
	if err != nil {
		return server.PartitionState{}, m.produceErr(topic, partition, err)
	}
	return server.PartitionState{Leader: lead == uint64(m.cfg.NodeID), LeaderEpoch: int32(term), HighWatermark: p.hw.Load()}, nil
}

// Leader returns, for Metadata, the partition's leader as this node knows
// it (-1 if none), the leader epoch and the in-sync replicas: on the
// leader, the driver's caught-up set (itself and each follower recently
// heard from whose log matches up to the commit index); on a follower,
// which cannot know, the replicas; none while this node knows no leader
// (an election, or a quorum lost), since the ISR is the leader's view.
// ok is false when this node has no replica of the partition.
func (m *Manager) Leader(topic string, partition int32) (leader, epoch int32, isr []int32, ok bool) {
	p, err := m.part(topic, partition)
	if err != nil {
		return -1, -1, nil, false
	}
	lead, term, err := m.cfg.Raft.Leader(p.a.Group)
	if err != nil {
		return -1, -1, nil, false
	}
	if lead == 0 {
		// No ISR without a leader: the replicas, given here, read as
		// a full ISR beside leader "none" (in Metadata, and in the
		// record a node stopped during an election keeps).
		return -1, int32(term), nil, true
	}
	leader, epoch = int32(lead), int32(term)
	isr = slices.Clone(p.a.Replicas)
	if lead == uint64(m.cfg.NodeID) {
		ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
		st, err := m.cfg.Raft.Status(ctx, p.a.Group)
		cancel()
		if err == nil && len(st.CaughtUp) > 0 {
			isr = isr[:0]
			for _, id := range st.CaughtUp {
				isr = append(isr, int32(id))
			}
			slices.Sort(isr)
			m.noteISR(p, term, isr)
		}
	}
	return leader, epoch, isr, true
}

// TransferLeader starts moving the leadership of a partition this node
// leads to replica to (multiraft.Node.TransferLeader) and returns without
// waiting, reporting whether it started a transfer (not when one is under
// way already). Errors wrap server.ErrNotLeader when this node does not
// lead the partition.
func (m *Manager) TransferLeader(ctx context.Context, topic string, partition, to int32) (bool, error) {
	p, err := m.part(topic, partition)
	if err != nil {
		return false, err
	}
	started, err := m.cfg.Raft.TransferLeader(ctx, p.a.Group, uint64(to))
	if nl := (*multiraft.NotLeaderError)(nil); errors.As(err, &nl) {
		return false, fmt.Errorf("%w: %s-%d is led by node %d", server.ErrNotLeader, topic, partition, nl.Leader)
	}
	return started, err
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch for a partition this node
// leads (server.ErrNotLeader elsewhere), by Kafka's rule
// (replica.Store.EndOffsetForEpoch).
func (m *Manager) EndOffsetForEpoch(topic string, partition int32, epoch int32) (int32, int64, error) {
	p, err := m.part(topic, partition)
	if err != nil {
		return 0, 0, err
	}
	if lead, _, err := m.cfg.Raft.Leader(p.a.Group); err != nil || lead != uint64(m.cfg.NodeID) {
		return 0, 0, fmt.Errorf("%w: %s-%d is led by node %d", server.ErrNotLeader, topic, partition, lead)
	}
	return p.st.EndOffsetForEpoch(epoch)
}

// Close stops every group the Manager runs and closes their replica
// stores; the partitions stay in the store, and the driver (Config.Raft)
// is the caller's to close after.
func (m *Manager) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	var first error
	for k, p := range m.parts {
		if err := m.remove(k, p); err != nil && first == nil {
			first = err
		}
	}
	return first
}
