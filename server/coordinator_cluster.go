package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/internal/errlog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Groups in a cluster (docs/cluster-server.md, "Consumer groups"): a
// group's coordinator is the leader of its __consumer_offsets partition,
// which the cluster replicates like any other. Commits and memberships
// are written through Cluster.Produce with acks -1 and answered once a
// majority holds them. A node that becomes a partition's leader loads the
// partition's groups from its log, up to the high watermark, before it
// serves them (COORDINATOR_LOAD_IN_PROGRESS meanwhile); one that stops
// leading drops them (NOT_COORDINATOR). Followers keep nothing.

// errNotCoordinator is a write for a group whose partition this node
// does not serve now: it stopped leading it, or lost and regained it and
// has not reloaded it yet.
var errNotCoordinator = errors.New("server: not the group's coordinator")

const (
	// offsetsCommitTimeout is Kafka's offsets.commit.timeout.ms: how
	// long a commit or a membership waits for the replicas.
	offsetsCommitTimeout = 5 * time.Second
	// offsetsCreateTimeout bounds one attempt to create the offsets topic
	// through the controller.
	offsetsCreateTimeout = 10 * time.Second
)

// clusterGroups is a cluster node's groupStore: the committed offsets of
// the offsets partitions this node leads, each loaded in the leader epoch
// it leads it in.
type clusterGroups struct {
	c      *coordinator
	cl     Cluster
	st     *store.Store
	logger *slog.Logger
	// errs says, once a while, why the offsets topic is not made yet.
	errs  *errlog.Log
	clock clock
	// kick wakes run to look at the offsets partitions' leadership: the
	// server sends on it whenever the Cluster notifies (a leader or a
	// high watermark changed), and owner when it finds a partition to
	// load.
	kick   chan struct{}
	ctx    context.Context // ends at stop
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// n is the offsets topic's partition count once the cluster has the
	// topic (it never changes then), 0 before.
	n        atomic.Int32
	creating atomic.Bool

	// mu guards tables and writers; it is held for no call out.
	mu sync.Mutex
	// tables is each loaded partition's offsets.
	tables map[int32]*offsetsTable
	// writers serialize each partition's writes, so that its table
	// applies them in the log's order, and keep a load from starting
	// while a write of an earlier epoch is still under way.
	writers map[int32]*sync.Mutex
	// gone are the commits of deleted topics to tombstone, as they were
	// when the topic went (topicDeleted), by group.
	gone map[string]map[tp]store.Committed
	// scans are the deleted topics' commits still to read from this
	// node's replicas of offsets partitions it did not lead when the
	// topic went, and notes what they found, by partition, to tombstone
	// if this node comes to lead it (coordinator_gone.go).
	scans []goneScan
	notes map[int32]*goneNote
}

// offsetsTable is one offsets partition's committed offsets, loaded in
// leader epoch epoch.
type offsetsTable struct {
	epoch int32
	m     map[string]map[tp]store.Committed
}

func (t *offsetsTable) apply(group, topic string, partition int32, c *store.Committed) {
	k := tp{topic, partition}
	if c == nil {
		delete(t.m[group], k)
		if len(t.m[group]) == 0 {
			delete(t.m, group)
		}
		return
	}
	if t.m[group] == nil {
		t.m[group] = make(map[tp]store.Committed)
	}
	t.m[group][k] = *c
}

// newClusterCoordinator is the coordinator of a cluster node. kick is
// the channel the server's notify hook sends on.
func newClusterCoordinator(st *store.Store, cl Cluster, cfg coordinatorConfig, kick chan struct{}, logger *slog.Logger) *coordinator {
	cfg.withDefaults()
	c := &coordinator{st: st, cfg: cfg, groups: make(map[string]*group), emptied: make(map[string]string),
		writes: make(map[string]chan struct{})}
	g := &clusterGroups{c: c, cl: cl, st: st, logger: logger, errs: errlog.New(logger, nil), clock: cfg.clock, kick: kick,
		tables: make(map[int32]*offsetsTable), writers: make(map[int32]*sync.Mutex)}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	c.gs, c.cl = g, g
	g.wg.Add(1)
	go g.run()
	g.poke() // the node may lead offsets partitions already
	return c
}

// stop ends run and any creation of the offsets topic, and waits for
// them.
func (g *clusterGroups) stop() {
	g.cancel()
	g.wg.Wait()
}

func (g *clusterGroups) poke() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// partitions is the offsets topic's partition count, 0 while the cluster
// has no offsets topic.
func (g *clusterGroups) partitions() int {
	if n := g.n.Load(); n > 0 {
		return int(n)
	}
	ps, err := g.cl.Partitions(store.OffsetsTopic)
	if err != nil || len(ps) == 0 {
		return 0
	}
	g.n.Store(int32(len(ps)))
	return len(ps)
}

func (g *clusterGroups) partitionOf(group string) (int32, bool) {
	n := g.partitions()
	if n == 0 {
		return 0, false
	}
	return store.OffsetsPartitionFor(group, n), true
}

func (g *clusterGroups) owner(group string) int16 {
	p, ok := g.partitionOf(group)
	if !ok {
		return kerr.NotCoordinator.Code
	}
	st, err := g.cl.State(store.OffsetsTopic, p)
	if err != nil || !st.Leader {
		return kerr.NotCoordinator.Code
	}
	g.mu.Lock()
	t := g.tables[p]
	g.mu.Unlock()
	if t == nil || t.epoch != st.LeaderEpoch {
		g.poke()
		return kerr.CoordinatorLoadInProgress.Code
	}
	return 0
}

// findCoordinator answers a group's coordinator: the leader of its
// offsets partition, as this node knows it. COORDINATOR_NOT_AVAILABLE
// while the partition has no leader, or the cluster no offsets topic,
// which it then creates (as Kafka does on the first FindCoordinator).
func (g *clusterGroups) findCoordinator(key string, co *kmsg.FindCoordinatorResponseCoordinator) {
	co.NodeID, co.Port = -1, -1
	co.ErrorCode = kerr.CoordinatorNotAvailable.Code
	ps, err := g.cl.Partitions(store.OffsetsTopic)
	if err != nil || len(ps) == 0 {
		if errors.Is(err, store.ErrUnknownTopic) {
			g.create()
		}
		return
	}
	g.n.Store(int32(len(ps)))
	leader := ps[store.OffsetsPartitionFor(key, len(ps))].Leader
	brokers, _ := g.cl.Brokers()
	for _, b := range brokers {
		if b.NodeID == leader && leader >= 0 {
			co.NodeID, co.Host, co.Port, co.ErrorCode = b.NodeID, b.Host, b.Port, 0
			return
		}
	}
}

// create creates the offsets topic through the controller, once at a
// time, in the background: the store's partition count
// (store.Options.OffsetsPartitions) and its config (compacted, every
// write synced), the cluster's default replication factor.
func (g *clusterGroups) create() {
	if !g.creating.CompareAndSwap(false, true) {
		return
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.creating.Store(false)
		n, err := g.st.Partitions(store.OffsetsTopic)
		if err != nil {
			g.logger.Error("server: the store has no offsets topic to copy", "err", err)
			return
		}
		cfg, err := g.st.TopicConfigOf(store.OffsetsTopic)
		if err != nil {
			g.logger.Error("server: the store has no offsets topic to copy", "err", err)
			return
		}
		configs := make(map[string]string)
		for _, k := range cfg.Overrides() {
			configs[k] = cfg.Get(k)
		}
		ctx, cancel := context.WithTimeout(g.ctx, offsetsCreateTimeout)
		defer cancel()
		err = g.cl.CreateTopic(ctx, store.OffsetsTopic, int32(n), -1, configs)
		switch {
		case err == nil, errors.Is(err, store.ErrTopicExists):
		case errors.Is(err, ErrInvalidReplicationFactor):
			// Fewer brokers live than the default replication factor:
			// every group's FindCoordinator is answered
			// COORDINATOR_NOT_AVAILABLE, which clients retry for good,
			// until enough are. Only the log can tell the operator
			// (a walk's first group waited with nothing above Info).
			g.errs.Log(slog.LevelWarn, store.OffsetsTopic, "server: the offsets topic waits for enough live brokers; consumer groups wait for it", "err", err)
		default:
			// No controller yet, say: the next FindCoordinator tries
			// again.
			g.logger.Info("server: creating the offsets topic", "err", err)
		}
		g.poke()
	}()
}

// run follows the leadership of the offsets partitions: on every kick it
// drops the partitions this node no longer leads in the epoch it loaded
// them in, and loads those it leads.
func (g *clusterGroups) run() {
	defer g.wg.Done()
	for {
		select {
		case <-g.kick:
		case <-g.ctx.Done():
			return
		}
		g.check()
	}
}

func (g *clusterGroups) check() {
	defer g.tombstoneGone()
	g.scanGone()
	for p := range int32(g.partitions()) {
		if g.ctx.Err() != nil {
			return
		}
		st, err := g.cl.State(store.OffsetsTopic, p)
		lead := err == nil && st.Leader
		g.mu.Lock()
		t := g.tables[p]
		g.mu.Unlock()
		if t != nil && (!lead || t.epoch != st.LeaderEpoch) {
			g.drop(p)
			t = nil
		}
		if t == nil && lead {
			g.load(p, st.LeaderEpoch)
			g.loadedNotes(p)
		}
	}
}

// drop forgets an offsets partition's offsets and groups: their waiting
// JoinGroup and SyncGroup requests get NOT_COORDINATOR, and so does every
// request for them from now on.
func (g *clusterGroups) drop(p int32) {
	c := g.c
	c.mu.Lock()
	defer c.mu.Unlock()
	g.mu.Lock()
	delete(g.tables, p)
	g.mu.Unlock()
	n := g.partitions()
	for id, gr := range c.groups {
		if store.OffsetsPartitionFor(id, n) == p {
			gr.shutdown()
			delete(c.groups, id)
		}
	}
	for id := range c.emptied {
		if store.OffsetsPartitionFor(id, n) == p {
			delete(c.emptied, id)
		}
	}
}

func (g *clusterGroups) writer(p int32) *sync.Mutex {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.writers[p]
	if w == nil {
		w = new(sync.Mutex)
		g.writers[p] = w
	}
	return w
}

// load reads partition p, which this node leads in epoch, and installs
// its offsets and groups if it still leads it in that epoch. It waits
// for no write: a write of an earlier epoch finishes first (the
// partition's writer lock), and none starts until the table is
// installed (owner answers COORDINATOR_LOAD_IN_PROGRESS). Until the high
// watermark reaches the log's end, which it does once the new leader's
// first entry is committed, the log may hold entries of an earlier
// leader that are not committed yet: load leaves the partition to the
// next kick (the Cluster notifies when the high watermark moves).
func (g *clusterGroups) load(p, epoch int32) {
	w := g.writer(p)
	w.Lock()
	t, last, ok, err := g.read(p, epoch)
	w.Unlock()
	if err != nil {
		g.logger.Warn("server: loading the groups of an offsets partition", "partition", p, "err", err)
		return
	}
	if !ok {
		return
	}
	c := g.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if st, err := g.cl.State(store.OffsetsTopic, p); err != nil || !st.Leader || st.LeaderEpoch != epoch {
		return // lost meanwhile: the next kick sees it
	}
	g.mu.Lock()
	g.tables[p] = t
	g.mu.Unlock()
	c.restoreMemberships(last)
}

// read reads offsets partition p below its high watermark: the commits
// and each group's last membership. ok is false while the high watermark
// is below the log's end.
func (g *clusterGroups) read(p, epoch int32) (t *offsetsTable, last map[string]*kmsg.GroupMetadataValue, ok bool, err error) {
	st, err := g.cl.State(store.OffsetsTopic, p)
	if err != nil || !st.Leader || st.LeaderEpoch != epoch {
		return nil, nil, false, err
	}
	l, err := g.st.Log(store.OffsetsTopic, p)
	if err != nil {
		return nil, nil, false, err
	}
	if st.HighWatermark < l.EndOffset() {
		return nil, nil, false, nil
	}
	t = &offsetsTable{epoch: epoch, m: make(map[string]map[tp]store.Committed)}
	last = make(map[string]*kmsg.GroupMetadataValue)
	var bad int
	for r, err := range l.Records(l.StartOffset()) {
		if err != nil {
			return nil, nil, false, fmt.Errorf("server: reading %s: %w", l.Dir(), err)
		}
		if r.Offset >= st.HighWatermark {
			break
		}
		if isMembership(r.Key) {
			readMembership(last, r.Key, r.Value)
			continue
		}
		group, topic, part, cm, isCommit, err := store.DecodeCommit(r.Key, r.Value)
		switch {
		case err != nil:
			bad++ // skipped, as a membership that does not decode is
		case isCommit:
			t.apply(group, topic, part, cm)
		}
	}
	if bad > 0 {
		g.logger.Warn("server: offset commits that do not decode were skipped", "dir", l.Dir(), "count", bad)
	}
	return t, last, true, nil
}

// write replicates records of one group to its offsets partition with
// acks -1, and applies its commits to the partition's table once a
// majority holds them. The partition must be loaded in the epoch this
// node leads it in.
func (g *clusterGroups) write(group string, recs []record.Record) error {
	p, unlock, err := g.lockGroup(group)
	if err != nil {
		return err
	}
	defer unlock()
	return g.writeLocked(group, p, recs)
}

// lockGroup takes the writer lock of group's offsets partition and
// returns the partition and the lock's release.
func (g *clusterGroups) lockGroup(group string) (int32, func(), error) {
	p, ok := g.partitionOf(group)
	if !ok {
		return 0, nil, errNotCoordinator
	}
	w := g.writer(p)
	w.Lock()
	return p, w.Unlock, nil
}

// writeLocked is write of group to its partition p, with p's writer
// lock held.
func (g *clusterGroups) writeLocked(group string, p int32, recs []record.Record) error {
	g.mu.Lock()
	t := g.tables[p]
	g.mu.Unlock()
	st, err := g.cl.State(store.OffsetsTopic, p)
	if t == nil || err != nil || !st.Leader || st.LeaderEpoch != t.epoch {
		return errNotCoordinator
	}
	bld := record.NewBuilder(record.None)
	now := g.clock.Now().UnixMilli()
	for i := range recs {
		ts := recs[i].Timestamp
		if ts == 0 {
			ts = now
		}
		if err := bld.AddAt(int64(i), ts, &recs[i]); err != nil {
			return err
		}
	}
	batch, err := bld.Build()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(g.ctx, offsetsCommitTimeout)
	defer cancel()
	if _, err := g.cl.Produce(ctx, store.OffsetsTopic, p, batch, -1); err != nil {
		err = fmt.Errorf("server: writing group %q to %s-%d: %w", group, store.OffsetsTopic, p, err)
		if !errors.Is(err, ErrNotLeader) && g.ctx.Err() == nil { // not for the node's stop
			g.logger.Warn("server: a group's write failed", "err", err)
		}
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tables[p] != t {
		return nil // dropped meanwhile; a reload reads it from the log
	}
	for _, r := range recs {
		if gr, topic, part, cm, ok, err := store.DecodeCommit(r.Key, r.Value); err == nil && ok {
			t.apply(gr, topic, part, cm)
		}
	}
	return nil
}

// table returns the loaded table holding group's offsets, or nil.
func (g *clusterGroups) table(group string) *offsetsTable {
	p, ok := g.partitionOf(group)
	if !ok {
		return nil
	}
	return g.tables[p]
}

func (g *clusterGroups) commit(group, topic string, offsets map[int32]int64) error {
	if group == "" || len(group) > math.MaxInt16 {
		return fmt.Errorf("%w: %d bytes", store.ErrInvalidGroup, len(group))
	}
	now := g.clock.Now().UnixMilli()
	parts := slices.Sorted(func(yield func(int32) bool) {
		for p := range offsets {
			if !yield(p) {
				return
			}
		}
	})
	recs := make([]record.Record, 0, len(parts))
	for _, p := range parts {
		recs = append(recs, store.EncodeCommit(group, topic, p, &store.Committed{Offset: offsets[p], Timestamp: now}))
	}
	if len(recs) == 0 {
		return nil
	}
	return g.write(group, recs)
}

func (g *clusterGroups) committed(group, topic string, partition int32) (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.table(group)
	if t == nil {
		return 0, false
	}
	c, ok := t.m[group][tp{topic, partition}]
	return c.Offset, ok
}

// committedAll lists a group's commits on topics the store holds (a
// deleted topic's commits are listed neither while their tombstones are
// being written, nor if the group's coordinator moved as the topic went
// and none were: topicDeleted).
func (g *clusterGroups) committedAll(group string) ([]store.PartitionLag, error) {
	g.mu.Lock()
	var rows []store.PartitionLag
	if t := g.table(group); t != nil {
		for k, c := range t.m[group] {
			rows = append(rows, store.PartitionLag{Topic: k.topic, Partition: k.partition, Committed: c.Offset})
		}
	}
	g.mu.Unlock()
	if rows == nil {
		return nil, fmt.Errorf("%w: %q", store.ErrUnknownGroup, group)
	}
	rows = slices.DeleteFunc(rows, func(r store.PartitionLag) bool {
		_, err := g.st.Partitions(r.Topic)
		return err != nil
	})
	slices.SortFunc(rows, func(a, b store.PartitionLag) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return rows, nil
}

func (g *clusterGroups) groups() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, t := range g.tables {
		for id := range t.m {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (g *clusterGroups) deleteGroup(group string) error {
	return g.tombstone(group, func(tp, store.Committed) bool { return true })
}

func (g *clusterGroups) deleteOffsets(group, topic string, partitions ...int32) error {
	return g.tombstone(group, func(k tp, _ store.Committed) bool {
		return k.topic == topic && slices.Contains(partitions, k.partition)
	})
}

// tombstone deletes the commits of group that pick chooses. It picks
// them with the partition's writer lock held, so no commit written
// meanwhile is deleted unseen.
func (g *clusterGroups) tombstone(group string, pick func(tp, store.Committed) bool) error {
	p, unlock, err := g.lockGroup(group)
	if err != nil {
		return err
	}
	defer unlock()
	g.mu.Lock()
	var recs []record.Record
	t := g.table(group)
	known := t != nil && t.m[group] != nil
	if known {
		for k, c := range t.m[group] {
			if pick(k, c) {
				recs = append(recs, store.EncodeCommit(group, k.topic, k.partition, nil))
			}
		}
	}
	g.mu.Unlock()
	switch {
	case !known:
		return fmt.Errorf("%w: %q", store.ErrUnknownGroup, group)
	case len(recs) == 0:
		return nil
	}
	return g.writeLocked(group, p, recs)
}

func (g *clusterGroups) writeMembership(group string, r record.Record) error {
	return g.write(group, []record.Record{r})
}
