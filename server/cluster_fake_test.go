package server

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// fakeCluster is a Cluster over the test server's own store, one node's
// view of it: the test flips leadership and leader epochs per partition,
// holds the high watermark or lets it follow the log end, and makes
// Produce fail, or block until released. Produce appends through the
// store's Writer as the node's replication would.
type fakeCluster struct {
	t testing.TB
	// st is the test server's store, set once it is open (ready closed):
	// the coordinator of a cluster node asks the Cluster about the
	// offsets partitions as soon as it starts.
	st    *store.Store
	ready chan struct{}

	mu         sync.Mutex
	notify     func()
	observer   LogObserver
	brokers    []Broker
	controller int32
	follower   map[tp]bool  // not the leader
	epochs     map[tp][]int // leader epoch i starts at offset epochs[i]; the last is current
	heldHW     map[tp]int64 // the high watermark while held; otherwise the log end
	produceErr error        // Produce's error, when set
	gate       chan struct{}
	produced   int   // Produce calls
	acks       int16 // the last Produce's acks
	deleteErr  error // DeleteRecords' error, when set
	deleteHang bool  // DeleteRecords waits for its ctx to end (no commit)
	// deleteGate, when set, holds every DeleteRecords until it closes;
	// deleting counts those held.
	deleteGate chan struct{}
	deleting   int
	deletes    []int64 // the offsets DeleteRecords was asked for
	created    []createCall
	createErr  error
	nextPID    int64
	// offsetsMissing hides the store's offsets topic until CreateTopic
	// creates it, as a cluster has none before the first FindCoordinator.
	offsetsMissing bool
	// leaders, where set, is the leader Partitions names (-1: none
	// known) instead of this node (1) or, on a follower, node 2: a
	// node's view of the leader can differ from its State (a leadership
	// lost mid-write, an election).
	leaders map[tp]int32
	looked  int // Partitions calls
	// offline, when set, is every partition's offline replicas instead
	// of node 3 alone.
	offline []int32
	// elects are the partitions ElectPreferredLeader was asked for, and
	// electErr what it answers for each (nil: none).
	elects   []tp
	electErr map[tp]error
}

type createCall struct {
	name       string
	partitions int32
	rf         int16
	configs    map[string]string
}

var _ Cluster = (*fakeCluster)(nil)

func newFakeCluster(t testing.TB) *fakeCluster {
	return &fakeCluster{t: t, controller: 2, nextPID: 1000, ready: make(chan struct{}),
		brokers:  []Broker{{NodeID: 1, Host: "h1", Port: 9001}, {NodeID: 2, Host: "h2", Port: 9002, Rack: "r2"}, {NodeID: 3, Host: "h3", Port: 9003}},
		follower: make(map[tp]bool), epochs: make(map[tp][]int), heldHW: make(map[tp]int64), leaders: make(map[tp]int32)}
}

// startCluster serves a store as node 1 of a fake three-node cluster.
func startCluster(t *testing.T, cfg Options) (*testServer, *fakeCluster) {
	t.Helper()
	return startClusterIn(t, "", cfg)
}

// startClusterIn is startCluster on the store in dir (a new temporary one
// when dir is empty): a node restarted on its directory.
func startClusterIn(t *testing.T, dir string, cfg Options) (*testServer, *fakeCluster) {
	t.Helper()
	fc := newFakeCluster(t)
	cfg.Cluster = fc
	cfg.NodeID = 1
	cfg.ClusterID = "fake-cluster"
	ts := startServer(t, dir, cfg)
	fc.st = ts.st
	close(fc.ready)
	// Node 1 is this server: clients connect to it where it listens.
	host, port, err := parseAdvertise(ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	fc.mu.Lock()
	fc.brokers[0].Host, fc.brokers[0].Port = host, port
	fc.mu.Unlock()
	return ts, fc
}

// store waits for the test server's store.
func (fc *fakeCluster) store() *store.Store {
	<-fc.ready
	return fc.st
}

// creates returns the CreateTopic calls so far.
func (fc *fakeCluster) creates() []createCall {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return slices.Clone(fc.created)
}

// set changes the fake's fields under its lock.
func (fc *fakeCluster) set(f func(fc *fakeCluster)) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	f(fc)
}

func (fc *fakeCluster) wake() {
	fc.mu.Lock()
	n := fc.notify
	fc.mu.Unlock()
	n()
}

// setLeader makes this node the partition's leader or a follower, in a new
// leader epoch starting at the log end, as a raft election would.
func (fc *fakeCluster) setLeader(topic string, partition int32, leader bool) {
	fc.mu.Lock()
	k := tp{topic, partition}
	fc.follower[k] = !leader
	fc.epochs[k] = append(fc.epochs[k], int(fc.endLocked(topic, partition)))
	fc.mu.Unlock()
	fc.wake()
}

// holdHW holds the partition's high watermark at hw; -1 lets it follow the
// log end again.
func (fc *fakeCluster) holdHW(topic string, partition int32, hw int64) {
	fc.mu.Lock()
	if hw < 0 {
		delete(fc.heldHW, tp{topic, partition})
	} else {
		fc.heldHW[tp{topic, partition}] = hw
	}
	fc.mu.Unlock()
	fc.wake()
}

// replicate stores batch as the replication of another leader's write
// would on this node: appended, then reported to the observer. It returns
// the batch's base offset.
func (fc *fakeCluster) replicate(topic string, partition int32, batch []byte) int64 {
	fc.t.Helper()
	w, err := fc.store().Writer(topic, partition)
	if err != nil {
		fc.t.Fatal(err)
	}
	stored := bytes.Clone(batch)
	info, err := w.AppendBatch(stored)
	if err != nil {
		fc.t.Fatal(err)
	}
	record.Batch(stored).SetBaseOffset(info.FirstOffset)
	if obs := fc.logObserver(); obs != nil {
		obs.Appended(topic, partition, [][]byte{stored})
	}
	return info.FirstOffset
}

// truncate cuts the partition's log at offset as a replica replacing
// uncommitted entries does: reported to the observer, then cut.
func (fc *fakeCluster) truncate(topic string, partition int32, offset int64) {
	fc.t.Helper()
	w, err := fc.store().Writer(topic, partition)
	if err != nil {
		fc.t.Fatal(err)
	}
	if obs := fc.logObserver(); obs != nil {
		obs.Truncating(topic, partition, offset)
	}
	if err := w.TruncateTo(offset); err != nil {
		fc.t.Fatal(err)
	}
}

func (fc *fakeCluster) logObserver() LogObserver {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.observer
}

func (fc *fakeCluster) endLocked(topic string, partition int32) int64 {
	l, err := fc.store().Log(topic, partition)
	if err != nil {
		return 0
	}
	return l.EndOffset()
}

func (fc *fakeCluster) epochLocked(k tp) int32 {
	return int32(len(fc.epochs[k])) // epoch 0 before any election: 1 after the first
}

func (fc *fakeCluster) Brokers() ([]Broker, int32) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.brokers, fc.controller
}

func (fc *fakeCluster) Topics() []string {
	names := fc.store().Topics()
	if _, err := fc.store().Partitions(store.OffsetsTopic); err == nil {
		names = append(names, store.OffsetsTopic)
	}
	return names
}

func (fc *fakeCluster) Partitions(topic string) ([]PartitionInfo, error) {
	fc.mu.Lock()
	fc.looked++
	missing := fc.offsetsMissing && topic == store.OffsetsTopic
	fc.mu.Unlock()
	if missing {
		return nil, fmt.Errorf("fake: %w: %s", store.ErrUnknownTopic, topic)
	}
	n, err := fc.store().Partitions(topic)
	if err != nil {
		return nil, err
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	var out []PartitionInfo
	for p := range int32(n) {
		k := tp{topic, p}
		pi := PartitionInfo{Partition: p, Leader: 1, LeaderEpoch: fc.epochLocked(k),
			Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Offline: []int32{3}}
		if fc.offline != nil {
			pi.Offline = slices.Clone(fc.offline)
		}
		if fc.follower[k] {
			pi.Leader = 2
		}
		if l, ok := fc.leaders[k]; ok {
			pi.Leader = l
		}
		out = append(out, pi)
	}
	return out, nil
}

func (fc *fakeCluster) CreateTopic(ctx context.Context, name string, partitions int32, rf int16, configs map[string]string) error {
	fc.mu.Lock()
	fc.created = append(fc.created, createCall{name, partitions, rf, configs})
	err := fc.createErr
	if err == nil && name == store.OffsetsTopic {
		fc.offsetsMissing = false // the store has it, with the count asked for
	}
	fc.mu.Unlock()
	if err != nil || name == store.OffsetsTopic {
		return err
	}
	cfg := store.DefaultTopicConfig()
	for k, v := range configs {
		if err := cfg.Set(k, v); err != nil {
			return err
		}
	}
	return fc.store().CreateTopic(name, int(partitions), cfg)
}

func (fc *fakeCluster) DeleteTopic(ctx context.Context, name string) error {
	return fc.store().DeleteTopic(name)
}

func (fc *fakeCluster) Produce(ctx context.Context, topic string, partition int32, batch []byte, acks int16) (int64, error) {
	fc.mu.Lock()
	fc.produced++
	fc.acks = acks
	err, gate, follower := fc.produceErr, fc.gate, fc.follower[tp{topic, partition}]
	fc.mu.Unlock()
	switch {
	case err != nil:
		return 0, err
	case follower:
		return 0, fmt.Errorf("fake: %s-%d: %w", topic, partition, ErrNotLeader)
	}
	w, err := fc.store().Writer(topic, partition)
	if err != nil {
		return 0, err
	}
	info, err := w.AppendBatch(batch)
	if err != nil {
		return 0, err
	}
	// Reported as a replica reports a batch it stored: stamped, before
	// anyone is answered.
	stored := record.Batch(bytes.Clone(batch))
	stored.SetBaseOffset(info.FirstOffset)
	if obs := fc.logObserver(); obs != nil {
		obs.Appended(topic, partition, [][]byte{stored})
	}
	if gate != nil {
		// Appended here, not yet confirmed by the replicas.
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	fc.wake()
	return info.FirstOffset, nil
}

func (fc *fakeCluster) State(topic string, partition int32) (PartitionState, error) {
	l, err := fc.store().Log(topic, partition)
	if err != nil {
		return PartitionState{}, err
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	k := tp{topic, partition}
	hw, held := fc.heldHW[k]
	if !held {
		hw = l.EndOffset()
	}
	return PartitionState{Leader: !fc.follower[k], LeaderEpoch: fc.epochLocked(k), HighWatermark: hw}, nil
}

func (fc *fakeCluster) EndOffsetForEpoch(topic string, partition int32, epoch int32) (int32, int64, error) {
	end := fc.endLocked(topic, partition)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	starts := fc.epochs[tp{topic, partition}]
	// Epoch 0 spans from offset 0 to the first election.
	all := append([]int{0}, starts...)
	if epoch < 0 {
		return -1, -1, nil
	}
	e := min(int(epoch), len(all)-1)
	if e+1 < len(all) {
		return int32(e), int64(all[e+1]), nil
	}
	return int32(e), end, nil
}

// DeleteRecords moves the start of the store's partition as the leader's
// replication would, by the rules a node's applies: -1 is the high
// watermark, an offset past it is out of range.
func (fc *fakeCluster) DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (int64, error) {
	fc.mu.Lock()
	fc.deletes = append(fc.deletes, offset)
	err, hang, gate, follower := fc.deleteErr, fc.deleteHang, fc.deleteGate, fc.follower[tp{topic, partition}]
	if gate != nil {
		fc.deleting++
	}
	fc.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	switch {
	case hang:
		<-ctx.Done()
		return 0, fmt.Errorf("fake: waiting for the commit: %w", ctx.Err())
	case err != nil:
		return 0, err
	case follower:
		return 0, fmt.Errorf("fake: %s-%d: %w", topic, partition, ErrNotLeader)
	}
	st, err := fc.State(topic, partition)
	if err != nil {
		return 0, err
	}
	if offset == -1 {
		offset = st.HighWatermark
	}
	if offset < 0 || offset > st.HighWatermark {
		return 0, fmt.Errorf("fake: %w: %d past the high watermark %d", seglog.ErrOffsetOutOfRange, offset, st.HighWatermark)
	}
	return fc.store().DeleteRecords(topic, partition, offset)
}

func (fc *fakeCluster) AllocateProducerID(ctx context.Context) (int64, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.createErr != nil {
		return 0, fc.createErr
	}
	fc.nextPID++
	return fc.nextPID, nil
}

func (fc *fakeCluster) SetNotify(wake func()) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.notify != nil {
		fc.t.Error("SetNotify called twice")
	}
	fc.notify = wake
}

func (fc *fakeCluster) SetObserver(o LogObserver) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.observer != nil {
		fc.t.Error("SetObserver called twice")
	}
	fc.observer = o
}

func (fc *fakeCluster) CreatePartitions(ctx context.Context, topic string, total int32) error {
	return fc.st.AddPartitions(topic, int(total))
}

func (fc *fakeCluster) AlterTopicConfig(ctx context.Context, topic string, overrides map[string]string) error {
	return fc.st.UpdateTopicConfig(topic, false, func(store.TopicConfig) (store.TopicConfig, error) {
		cfg := store.DefaultTopicConfig()
		for k, v := range overrides {
			if err := cfg.Set(k, v); err != nil {
				return cfg, err
			}
		}
		return cfg, nil
	})
}

func (fc *fakeCluster) ElectPreferredLeader(ctx context.Context, topic string, partition int32) error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	k := tp{topic, partition}
	fc.elects = append(fc.elects, k)
	return fc.electErr[k]
}
