package cluster

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/internal/cluster/partition"
	"github.com/seglog/seglog/server"
	"github.com/seglog/seglog/store"
)

// Assignment is one partition's replicas and raft group (GroupID), as
// the partition manager takes them: its Sync runs the groups of the
// assignments that name this node.
type Assignment = partition.Assignment

// partitions is the partition manager (*partition.Manager) as the node
// drives it; tests give a fake.
type partitions interface {
	Sync(as []Assignment) error
	Produce(ctx context.Context, topic string, p int32, batch []byte, acks int16) (int64, error)
	State(topic string, p int32) (server.PartitionState, error)
	Leader(topic string, p int32) (leader, epoch int32, isr []int32, ok bool)
	EndOffsetForEpoch(topic string, p int32, epoch int32) (int32, int64, error)
	SetObserver(o server.LogObserver)
	TopicDeleted(topic string)
	DeleteRecords(ctx context.Context, topic string, p int32, offset int64) (int64, error)
	TransferLeader(ctx context.Context, topic string, p, to int32) (bool, error)
	Close() error
}

var _ partitions = (*partition.Manager)(nil)

// GroupID is a partition's raft group id: the first 8 bytes of the
// SHA-256 of the topic id and the partition (big endian), never 0 (etcd
// raft's "none"). A topic deleted and created again under its name has
// a new id, and so new groups: no replica of the old topic can vote in
// the new one's.
func GroupID(topicID [16]byte, partition int32) uint64 {
	var b [20]byte
	copy(b[:], topicID[:])
	binary.BigEndian.PutUint32(b[16:], uint32(partition))
	sum := sha256.Sum256(b[:])
	if g := binary.BigEndian.Uint64(sum[:8]); g != 0 {
		return g
	}
	return 1
}

func assignments(st *meta.State) []Assignment {
	var out []Assignment
	for _, name := range st.TopicNames() {
		t, _ := st.Topic(name)
		for p, r := range t.Replicas {
			out = append(out, Assignment{Topic: name, Partition: int32(p), Group: GroupID(t.ID, int32(p)), Replicas: r})
		}
	}
	return out
}

// syncLoop makes the store and the partition manager match every
// metadata state this node applies.
func (n *Node) syncLoop() {
	defer n.wg.Done()
	// Nothing is written to the store and no replica started before the
	// controller accepts this node's registration: a DIR made again has
	// no raft state for the replicas the cluster remembers here, and
	// the registration is what refuses it (ErrDirectoryID). The cluster
	// id is checked before (the registration waits for it), so a DIR of
	// another cluster is told as that.
	registered := n.registered // nil once registered
	for {
		st, changed := n.meta.Watch()
		if err := st.Unreadable(); err != nil {
			// The State lacks what a newer build's entry did: acting on
			// it could delete topics that exist (docs/cluster.md,
			// "Upgrading").
			n.fail(err)
			return
		}
		ok := n.learnClusterID(st)
		if n.Err() != nil {
			return // another cluster's metadata is not synced into DIR
		}
		select {
		case <-registered:
			registered = nil
		default:
		}
		if registered == nil {
			n.recMu.Lock()
			ok = n.syncTopics(st) && ok
			n.recMu.Unlock()
			n.syncMu.Lock()
			n.synced = st.Index()
			close(n.syncedCh)
			n.syncedCh = make(chan struct{})
			n.syncMu.Unlock()
			n.wake()
		}
		// What failed (a store or manager error, logged) is tried
		// again after a while even if the metadata does not change, and
		// so is a group the driver stopped (the manager's Sync starts
		// it again).
		var retry <-chan time.Time
		if !ok {
			retry = time.After(syncRetry)
		}
	wait:
		for {
			select {
			case <-changed:
				break wait
			case <-registered:
				break wait
			case <-retry:
				break wait
			case <-n.failed:
				return
			case <-n.restart:
				// A retry already due restarts the group too.
				if retry == nil {
					n.mu.Lock()
					d := n.restartDelay
					n.mu.Unlock()
					retry = time.After(d)
				}
			case <-n.ctx.Done():
				return
			}
		}
	}
}

// syncRetry is how long the sync loop waits before trying again what
// failed, and before starting again the first group the driver stopped.
const syncRetry = time.Second

// maxRestartDelay bounds the wait before a stopped group starts again,
// which doubles from syncRetry while groups keep stopping; restartCalm
// without a stop sets it back to syncRetry.
const (
	maxRestartDelay = 30 * time.Second
	restartCalm     = time.Minute
)

// groupStopped is told (on multiraft's driver goroutine) of a partition's
// group the driver stopped because its storage or apply failed: a full
// disk, an I/O error. Left alone, the replica would stay out of the
// ISR, silently, until the next metadata change or restart. It is
// logged, with the partition and the error, and:
//   - when the partition's Log refuses writes after a failed write or
//     sync (seglog.ErrWriteFailed, ErrSyncFailed: the segment may hold a
//     partial batch, which only the recovery of a reopen cuts), the
//     replica stays stopped and the message says to restart the node,
//     as Kafka takes a failed log directory offline until its broker
//     restarts;
//   - otherwise (a checkpoint that could not be written, say) the sync
//     loop starts the group again after restartDelay, which doubles
//     while stops keep coming, so that a disk that stays full is tried
//     again, not spun on; the leader then sends again what failed.
func (n *Node) groupStopped(group uint64, err error) {
	topic, part := "?", int32(-1)
	if st := n.meta.State(); st != nil {
		topic, part = groupPartition(st, group)
	}
	if errors.Is(err, multiraft.ErrRaftPanic) {
		// Not one replica's trouble: a DIR that lost acknowledged
		// entries may have lost them in every partition, and a replica
		// that lacks them can elect a leader that lacks them too.
		n.fail(fmt.Errorf("cluster: partition %s-%d: this node's DIR lacks raft entries it acknowledged, as a DIR restored from an older copy, "+
			"or one whose synced writes were lost, does; raft keeps its promises only if every acknowledged entry stays, so the node stops. "+
			"Bring back the DIR the node last ran with, or replace the node (docs/cluster.md, \"A node that lost its DIR\"): %w", topic, part, err))
		return
	}
	if errors.Is(err, seglog.ErrWriteFailed) || errors.Is(err, seglog.ErrSyncFailed) {
		n.log.Error("cluster: a partition's replica stopped: its log refuses writes until this node restarts (free space first if the disk is full)",
			"topic", topic, "partition", part, "group", group, "err", err)
		return
	}
	n.mu.Lock()
	now := time.Now()
	if now.Sub(n.lastStop) > restartCalm {
		n.restartDelay = syncRetry
	} else {
		n.restartDelay = min(2*n.restartDelay, maxRestartDelay)
	}
	n.lastStop = now
	delay := n.restartDelay
	n.mu.Unlock()
	n.log.Error("cluster: a partition's replica stopped on an error; starting it again", "topic", topic, "partition", part,
		"group", group, "after", delay, "err", err)
	select {
	case n.restart <- struct{}{}:
	default:
	}
}

// groupPartition names the partition whose raft group is group in st, or
// "?" and -1.
func groupPartition(st *meta.State, group uint64) (string, int32) {
	for _, a := range assignments(st) {
		if a.Group == group {
			return a.Topic, a.Partition
		}
	}
	return "?", -1
}

// learnClusterID records the cluster id once the metadata has one; false
// if writing meta.properties failed.
func (n *Node) learnClusterID(st *meta.State) bool {
	id := st.ClusterID()
	select {
	case <-n.ready:
		return true
	default:
	}
	if id == "" {
		return true
	}
	n.mu.Lock()
	p := n.props
	n.mu.Unlock()
	switch {
	case p.clusterID != "" && p.clusterID != id:
		n.clusterErr = fmt.Errorf("%w: %s names cluster.id=%s, and the cluster's metadata names %s", ErrClusterID, p.path, p.clusterID, id)
		n.fail(n.clusterErr)
	case p.clusterID == "":
		p.exists, p.nodeID, p.clusterID = true, n.cfg.NodeID, id
		if err := p.write(n.cfg.FS); err != nil {
			// Without meta.properties the node cannot prove its ids
			// after a restart; the sync loop tries again.
			n.log.Error("cluster: writing meta.properties", "path", p.path, "err", err)
			return false
		}
		n.mu.Lock()
		n.props = p
		n.mu.Unlock()
	}
	n.clusterID = id
	close(n.ready)
	return true
}

// syncTopics (n.recMu held) makes the store hold exactly the metadata's topics this node
// created (topicRecord), then hands the manager the assignments. A
// deleted topic's groups stop before its data goes, and a topic's data
// exists before its groups start. The store's own __consumer_offsets is
// never created nor deleted here: the store makes it at Open, and the node
// adopts it as the cluster's offsets topic once the metadata has one
// (adoptOffsets). A store topic this node did
// not create (one the store had before it joined) is left alone, and a
// metadata topic of the same name is not created here: nothing destroys
// data the cluster did not write. It reports whether everything it
// tried succeeded.
func (n *Node) syncTopics(st *meta.State) bool {
	ok := true
	fail := func(msg string, args ...any) {
		// Once, then every errlog.Every while the same failure
		// lasts: the loop tries again every second.
		n.syncErrs.Error(fmt.Sprint(args...), msg, args...)
		ok = false
	}
	have := map[string]bool{}
	for _, name := range n.cfg.Store.Topics() {
		have[name] = true
	}
	rec := n.topics
	changed := false         // rec changed
	var gone, fresh []string // store topics to delete, metadata topics to create
	for name, id := range rec.ids {
		if st.Index() < rec.seen[name] {
			// Not replayed that far yet (a restart): absent is not
			// deleted (topicRecord).
			continue
		}
		if t, ok := st.Topic(name); (!ok || t.ID != id) && name != store.OffsetsTopic {
			gone = append(gone, name)
		}
	}
	for _, name := range st.TopicNames() {
		if name == store.OffsetsTopic {
			t, _ := st.Topic(name)
			if id, ok := rec.ids[name]; ok && id == t.ID {
				continue
			}
			if err := n.adoptOffsets(t); errors.Is(err, errNotAdoptable) {
				n.log.Error("cluster: not replicating the offsets topic on this node", "err", err)
				continue
			} else if err != nil {
				fail("cluster: reading the store's offsets topic", "err", err)
				continue
			}
			rec.ids[name] = t.ID
			rec.seen[name] = st.Index()
			changed = true
			continue
		}
		t, _ := st.Topic(name)
		id, mine := rec.ids[name]
		switch {
		case mine && id == t.ID && have[name]:
			if err := n.alterLocal(t); err != nil {
				fail("cluster: updating a topic", "topic", name, "err", err)
			}
		case mine || !have[name]:
			fresh = append(fresh, name)
		default:
			n.log.Error("cluster: the store holds a topic of this name it did not create for the cluster; leaving it, and not replicating the cluster's", "topic", name)
		}
	}
	slices.Sort(gone)
	as := assignments(st)
	if len(gone) > 0 {
		// Stop the groups of what goes before its data does.
		keep := slices.DeleteFunc(slices.Clone(as), func(a Assignment) bool { return slices.Contains(gone, a.Topic) })
		if err := n.parts.Sync(keep); err != nil {
			fail("cluster: stopping deleted partitions", "err", err)
		}
	}
	for _, name := range gone {
		if err := n.cfg.Store.DeleteTopic(name); err != nil && !errors.Is(err, store.ErrUnknownTopic) {
			fail("cluster: deleting a topic", "topic", name, "err", err)
			continue
		}
		// Before a topic of the same name is created below: groups'
		// commits for this one are noted for tombstones now.
		n.parts.TopicDeleted(name)
		delete(rec.ids, name)
		delete(rec.seen, name)
		changed = true
	}
	for _, name := range fresh {
		t, _ := st.Topic(name)
		if err := n.createLocal(t); err != nil {
			fail("cluster: creating a topic", "topic", name, "err", err)
			continue
		}
		rec.ids[name] = t.ID
		rec.seen[name] = st.Index()
		changed = true
	}
	if changed {
		if err := rec.save(); err != nil {
			fail("cluster: saving the topic record", "path", rec.path, "err", err)
		}
	}
	// Only partitions whose data is in place may run.
	as = slices.DeleteFunc(as, func(a Assignment) bool {
		t, _ := st.Topic(a.Topic)
		id, ok := rec.ids[a.Topic]
		return !ok || id != t.ID
	})
	if err := n.parts.Sync(as); err != nil {
		fail("cluster: syncing partitions", "err", err)
	}
	return ok
}

// errNotAdoptable: the store's offsets topic cannot be the cluster's,
// for good (the sync loop does not retry).
var errNotAdoptable = errors.New("cluster: the store's offsets topic cannot be adopted")

// adoptOffsets makes the store's own __consumer_offsets the replica of the
// cluster's offsets topic t: the store made it at Open, and the partition
// manager runs its partitions as it runs any topic's. It is adopted only
// if nothing but the replication can ever have written it: the store was
// opened with store.Options.ReplicatedOffsets (Start checks it), it has
// t's partition count, and every partition is empty (a DIR that never
// served as a single node). Otherwise this node does not replicate the
// offsets topic, and says so: nothing destroys the commits a single node
// kept there.
func (n *Node) adoptOffsets(t meta.Topic) error {
	info, err := n.cfg.Store.DescribeTopic(store.OffsetsTopic)
	if err != nil {
		return err
	}
	if len(info.Partitions) != len(t.Replicas) {
		return fmt.Errorf("%w: the store's %s has %d partitions and the cluster's %d (store.Options.OffsetsPartitions must be the same on every node)",
			errNotAdoptable, store.OffsetsTopic, len(info.Partitions), len(t.Replicas))
	}
	for _, p := range info.Partitions {
		if p.Err != nil {
			return p.Err
		}
		if p.EndOffset > 0 {
			return fmt.Errorf("%w: the store's %s-%d holds records this node wrote before it joined the cluster; they are kept, and this node does not replicate the cluster's offsets topic",
				errNotAdoptable, store.OffsetsTopic, p.Partition)
		}
	}
	return nil
}

// topicConfig is the store's config for t's overrides.
func topicConfig(t meta.Topic) (store.TopicConfig, error) {
	cfg := store.DefaultTopicConfig()
	for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
		if err := cfg.Set(k, t.Configs[k]); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// createLocal creates t in the store with its configs; every partition
// directory is made, those this node does not replicate stay empty.
func (n *Node) createLocal(t meta.Topic) error {
	cfg, err := topicConfig(t)
	if err != nil {
		return err
	}
	return n.cfg.Store.CreateTopic(t.Name, len(t.Replicas), cfg)
}

// alterLocal applies to the store a topic's config changes
// (AlterTopicConfig) and added partitions (CreatePartitions) that the
// metadata has and the store does not yet.
func (n *Node) alterLocal(t meta.Topic) error {
	want, err := topicConfig(t)
	if err != nil {
		return err
	}
	if have, err := n.cfg.Store.TopicConfigOf(t.Name); err != nil {
		return err
	} else if have != want {
		if err := n.cfg.Store.SetTopicConfig(t.Name, want); err != nil {
			return err
		}
	}
	parts, err := n.cfg.Store.Partitions(t.Name)
	if err != nil {
		return err
	}
	if parts < len(t.Replicas) {
		return n.cfg.Store.AddPartitions(t.Name, len(t.Replicas))
	}
	return nil
}

// waitSynced waits until the store and the manager match the metadata at
// index or later.
func (n *Node) waitSynced(ctx context.Context, index uint64) error {
	for {
		n.syncMu.Lock()
		done, ch := n.synced >= index, n.syncedCh
		n.syncMu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.ctx.Done():
			return ErrClosed
		}
	}
}

// Topics returns the cluster's topics as this node last applied them.
func (n *Node) Topics() []string { return n.meta.State().TopicNames() }

// Partitions describes a topic's partitions from the metadata and the
// partition manager. A partition this node does not replicate has the
// leader, epoch and ISR its leader reports in the liveness heartbeats
// (leaders.go), a few heartbeat intervals old; -1 while none is reported.
// A follower takes the ISR from that report too while it names the
// leader and epoch the follower knows.
func (n *Node) Partitions(topic string) ([]server.PartitionInfo, error) {
	v, err := n.viewTopic(topic)
	if err != nil {
		return nil, err
	}
	out := make([]server.PartitionInfo, len(v.t.Replicas))
	for p := range v.t.Replicas {
		out[p] = v.info(p)
	}
	return out, nil
}

// partitionInfo is Partitions' answer for one partition, without asking
// the partition manager about the topic's others (ElectLeaders asks this
// for each partition it moves).
func (n *Node) partitionInfo(topic string, partition int32) (server.PartitionInfo, error) {
	v, err := n.viewTopic(topic)
	if err != nil {
		return server.PartitionInfo{}, err
	}
	if partition < 0 || int(partition) >= len(v.t.Replicas) {
		return server.PartitionInfo{}, fmt.Errorf("%w: %s-%d", store.ErrUnknownPartition, topic, partition)
	}
	return v.info(int(partition)), nil
}

// topicView is what Partitions reads a topic's partitions from: the
// metadata, the live set, and the leaders' reports, read at the first
// partition that needs them.
type topicView struct {
	n        *Node
	st       *meta.State
	t        meta.Topic
	live     map[int32]bool
	reported map[uint64]leaderReport
	asked    bool
}

func (n *Node) viewTopic(topic string) (*topicView, error) {
	st := n.meta.State()
	t, ok := st.Topic(topic)
	if !ok {
		return nil, fmt.Errorf("%w: %s", store.ErrUnknownTopic, topic)
	}
	return &topicView{n: n, st: st, t: t, live: n.liveSet(st)}, nil
}

// report is partition p's leader as its leader reported it, if it did.
func (v *topicView) report(p int) (leaderReport, bool) {
	if !v.asked {
		v.reported, v.asked = v.n.reportedLeaders(v.st), true
	}
	l, ok := v.reported[GroupID(v.t.ID, int32(p))]
	return l, ok
}

// info describes partition p.
func (v *topicView) info(p int) server.PartitionInfo {
	n, r := v.n, v.t.Replicas[p]
	info := server.PartitionInfo{Partition: int32(p), Leader: -1, LeaderEpoch: -1, Replicas: r}
	if leader, epoch, isr, ok := n.parts.Leader(v.t.Name, int32(p)); ok {
		info.Leader, info.LeaderEpoch, info.ISR = leader, epoch, isr
		// A follower cannot see which replicas are caught up (its
		// ISR is the assignment's replicas); the leader's report of
		// the same term can. Until it comes (a few heartbeats after
		// an election), the live replicas: a dead one is not
		// claimed to be in sync.
		if leader >= 0 && leader != n.cfg.NodeID {
			if l, ok := v.report(p); ok && l.Leader == leader && l.Epoch == epoch && len(l.ISR) > 0 {
				info.ISR = slices.Clone(l.ISR)
			} else {
				info.ISR = followerISR(r, leader, v.live)
			}
		}
	} else if l, ok := v.report(p); ok {
		info.Leader, info.LeaderEpoch, info.ISR = l.Leader, l.Epoch, slices.Clone(l.ISR)
	}
	for _, id := range r {
		if !v.live[id] {
			info.Offline = append(info.Offline, id)
		}
	}
	return info
}

// followerISR is the ISR a follower names for a partition while it has no
// report of it from the leader: the replicas live, and the leader. It
// cannot know which of them are caught up, but a replica whose node is
// not live is not (before 2026-12-06 every replica was named, a dead one
// too).
func followerISR(replicas []int32, leader int32, live map[int32]bool) []int32 {
	var isr []int32
	for _, id := range replicas {
		if live[id] || id == leader {
			isr = append(isr, id)
		}
	}
	return isr
}

// CreateTopic creates a topic through the controller and returns once
// this node's store holds it.
func (n *Node) CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]string) error {
	var id [16]byte
	if _, err := crand.Read(id[:]); err != nil {
		return err
	}
	id[6] = id[6]&0x0f | 0x40 // a version 4 UUID, as Kafka's topic ids
	id[8] = id[8]&0x3f | 0x80
	resp, err := n.forward(ctx, request{Op: opCreate, Broker: n.cfg.NodeID, Topic: name, Partitions: partitions, ReplicationFactor: replicationFactor, Configs: configs, TopicID: id})
	if errors.Is(err, meta.ErrInvalidReplicationFactor) {
		// The server's name for it, which it answers with Kafka's code.
		err = fmt.Errorf("%w: %w", server.ErrInvalidReplicationFactor, err)
	}
	if err != nil {
		return err
	}
	if err := n.waitSynced(ctx, resp.Index); err != nil {
		return err
	}
	topic, ok := n.meta.State().Topic(name)
	n.recMu.Lock()
	id, mine := n.topics.ids[name]
	n.recMu.Unlock()
	if !ok || !mine || id != topic.ID {
		return fmt.Errorf("cluster: topic %s was created, but this node's store does not hold it (see the node's log; a topic of the store's own may have the name)", name)
	}
	return nil
}

// DeleteTopic deletes a topic through the controller and returns once
// this node's store no longer holds it.
func (n *Node) DeleteTopic(ctx context.Context, name string) error {
	resp, err := n.forward(ctx, request{Op: opDelete, Broker: n.cfg.NodeID, Topic: name})
	if err != nil {
		return err
	}
	return n.waitSynced(ctx, resp.Index)
}

// AllocateProducerID hands out the next id of this node's block, asking
// the controller for a new block (KIP-730) when it is used up.
func (n *Node) AllocateProducerID(ctx context.Context) (int64, error) {
	// The controller hands blocks to registered brokers only.
	select {
	case <-n.registered:
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: this node has not registered with a controller yet: %w", server.ErrNotController, ctx.Err())
	case <-n.ctx.Done():
		return 0, ErrClosed
	}
	n.pidMu.Lock()
	defer n.pidMu.Unlock()
	if n.pidNext == n.pidLast {
		resp, err := n.forward(ctx, request{Op: opPIDs, Broker: n.cfg.NodeID})
		if err != nil {
			return 0, err
		}
		if resp.Size <= 0 || resp.First < 0 {
			return 0, fmt.Errorf("%w: producer id block [%d, +%d)", ErrRemote, resp.First, resp.Size)
		}
		n.pidNext, n.pidLast = resp.First, resp.First+resp.Size
	}
	id := n.pidNext
	n.pidNext++
	return id, nil
}

// Produce replicates a batch through the partition manager.
func (n *Node) Produce(ctx context.Context, topic string, partition int32, batch []byte, acks int16) (int64, error) {
	return n.parts.Produce(ctx, topic, partition, batch, acks)
}

// State is the partition manager's view of a partition.
func (n *Node) State(topic string, partition int32) (server.PartitionState, error) {
	return n.parts.State(topic, partition)
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch through the partition
// manager.
func (n *Node) EndOffsetForEpoch(topic string, partition int32, epoch int32) (int32, int64, error) {
	return n.parts.EndOffsetForEpoch(topic, partition, epoch)
}

// DeleteRecords moves a partition's log start on every replica through
// its leader's partition manager (partition.Manager.DeleteRecords). A
// topic or partition the metadata does not hold is
// store.ErrUnknownTopic or store.ErrUnknownPartition.
func (n *Node) DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error) {
	t, ok := n.meta.State().Topic(topic)
	switch {
	case !ok:
		return 0, fmt.Errorf("%w: %s", store.ErrUnknownTopic, topic)
	case partition < 0 || int(partition) >= len(t.Replicas):
		return 0, fmt.Errorf("%w: %s-%d", store.ErrUnknownPartition, topic, partition)
	}
	return n.parts.DeleteRecords(ctx, topic, partition, offset)
}
