package server

import (
	"context"
	"errors"

	"github.com/seglog/seglog/server/acl"
)

// Cluster is the replicated cluster a server belongs to (seglog serve
// --voters, docs/cluster-design.md): which brokers are live, which node
// leads each partition, and the write path that replicates a batch before
// it counts. Options.Cluster nil is a single node, which leads every
// partition of its store.
//
// In a cluster the server still reads partitions from its own store: the
// node keeps every partition it replicates in the store's directory, a
// valid Kafka partition directory identical to the leader's up to the high
// watermark. It writes them only through Produce; the node's replication
// is the only writer of a replicated partition.
//
// Errors wrap the sentinels below (and store.ErrUnknownTopic,
// store.ErrTopicExists, store.ErrInvalidPartitions, store.ErrInvalidConfig
// for what the store would refuse), which the server answers with Kafka's
// codes.
type Cluster interface {
	// Brokers returns the live brokers with the addresses they advertise,
	// and the controller's node id (-1 when none is known).
	Brokers() (brokers []Broker, controller int32)
	// Topics returns the names of the cluster's topics, the internal
	// offsets topic included once it exists.
	Topics() []string
	// Partitions returns a topic's partitions as this node last knows
	// them, in partition order.
	Partitions(topic string) ([]PartitionInfo, error)
	// CreateTopic creates a topic through the controller, with the
	// store's topic config keys; replicationFactor -1 is the cluster's
	// default. It returns once this node's store holds the topic's
	// partitions it replicates. ErrNotController when this node does not
	// know the controller.
	CreateTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]string) error
	// DeleteTopic deletes a topic through the controller.
	DeleteTopic(ctx context.Context, name string) error
	// CreatePartitions grows a topic to total partitions through the
	// controller, the new ones assigned over the live brokers; it
	// returns once this node's store holds them.
	CreatePartitions(ctx context.Context, topic string, total int32) error
	// AlterTopicConfig makes overrides (store config names and values)
	// the whole of a topic's overrides through the controller; it
	// returns once this node's store applies them.
	AlterTopicConfig(ctx context.Context, topic string, overrides map[string]string) error
	// Produce replicates one producer batch, which the server has checked
	// and deduplicated, to a partition this node leads, and returns the
	// base offset every replica stamped on it. acks -1 returns once a
	// majority of the replicas hold it (the high watermark is past it),
	// acks 1 once this node's log holds it. ErrNotLeader when this node
	// does not lead the partition; ErrNotEnoughReplicas only when it
	// refuses the batch before storing any of it (Kafka's meaning: the
	// client may take it as not written); ctx's error when no majority
	// stored it in time (REQUEST_TIMED_OUT: it may still commit);
	// ErrNotEnoughReplicasAfterAppend when it committed but fewer than
	// the topic's min.insync.replicas, asked for more than a majority,
	// stayed in sync to confirm it. Once
	// it returns, whatever its answer, Produce
	// neither reads nor keeps batch: the server reuses the request's
	// frame for the next request.
	Produce(ctx context.Context, topic string, partition int32, batch []byte, acks int16) (baseOffset int64, err error)
	// State returns what this node knows of a partition it replicates:
	// whether it leads it, the leader epoch, and the high watermark,
	// below which consumers may read.
	State(topic string, partition int32) (PartitionState, error)
	// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-320) for a
	// partition this node leads, from its leader-epoch-checkpoint, by
	// Kafka's rule (LeaderEpochFileCache.endOffsetFor): the largest epoch
	// at or below epoch and the offset where it ended (the start of the
	// next epoch, or the log end for the current one); for an epoch
	// below every known one, epoch itself and the first epoch's start;
	// -1, -1 for an epoch above every known one.
	EndOffsetForEpoch(topic string, partition int32, epoch int32) (leaderEpoch int32, endOffset int64, err error)
	// DeleteRecords moves a partition's log start to offset on every
	// replica (Kafka's DeleteRecords; -1 is the high watermark) through
	// this node, its leader, and returns the log start afterwards, the
	// low watermark. ErrNotLeader when this node does not lead the
	// partition, seglog.ErrOffsetOutOfRange for an offset past the high
	// watermark, context.DeadlineExceeded when ctx ends first.
	DeleteRecords(ctx context.Context, topic string, partition int32, offset int64) (lowWatermark int64, err error)
	// ElectPreferredLeader hands a partition's leadership to its
	// preferred replica, its first (ElectLeaders of type PREFERRED),
	// through the partition's leader, on this node or another, and
	// returns once that replica leads it. ErrElectionNotNeeded when it
	// leads already; ErrPreferredLeaderNotAvailable when it is not
	// live, not in the ISR, or the partition has no leader now; ctx's
	// error when it has not taken over in time.
	ElectPreferredLeader(ctx context.Context, topic string, partition int32) error
	// AllocateProducerID returns a producer id no other node hands out.
	AllocateProducerID(ctx context.Context) (int64, error)
	// SetNotify gives the cluster a function to call whenever a high
	// watermark advances or a leader changes, so parked fetches wake.
	// The server calls it once, before serving.
	SetNotify(wake func())
	// SetObserver gives the cluster the observer to report every change
	// its replication makes to this node's partitions (LogObserver). The
	// server calls it once, before serving; the server's idempotent
	// produce relies on it: a batch stored and not reported would not be
	// found by its retry.
	SetObserver(o LogObserver)
	// ACLs returns the cluster's ACLs as this node has applied them,
	// sorted; the caller must not modify the list. Every node authorizes
	// requests against its own applied copy.
	ACLs() []acl.ACL
	// CreateACLs adds ACLs (validated by the server) through the
	// controller; ones already present are not an error. It returns
	// once this node has applied them.
	CreateACLs(ctx context.Context, acls []acl.ACL) error
	// DeleteACLs removes through the controller every ACL a filter
	// matches and returns, per filter, the ones it removed; it returns
	// once this node has applied the removal.
	DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.ACL, error)
}

// Broker is a live broker of a cluster, as Metadata lists it.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string
}

// PartitionInfo is one partition of a topic in a cluster, as Metadata
// lists it: its leader (-1 when it has none), the leader's epoch, its
// replicas, the in-sync replicas and the replicas on brokers not live.
type PartitionInfo struct {
	Partition   int32
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
}

// PartitionState is what a node knows of a partition it replicates.
type PartitionState struct {
	// Leader reports whether this node leads the partition.
	Leader bool
	// LeaderEpoch is the partition's current leader epoch (the raft term).
	LeaderEpoch int32
	// HighWatermark is the end offset of the last batch a majority holds.
	HighWatermark int64
}

// Errors a Cluster's methods wrap.
var (
	// ErrNotLeader: this node does not lead the partition
	// (NOT_LEADER_OR_FOLLOWER; the client refreshes its metadata).
	ErrNotLeader = errors.New("server: not the partition's leader")
	// ErrNotController: this node is not the controller and cannot reach
	// it (NOT_CONTROLLER).
	ErrNotController = errors.New("server: not the controller")
	// ErrInvalidReplicationFactor: a topic's replication factor below 1
	// or above the live brokers (INVALID_REPLICATION_FACTOR).
	ErrInvalidReplicationFactor = errors.New("server: invalid replication factor")
	// ErrNotEnoughReplicas: too few of the partition's replicas are in
	// sync to store a batch, which was refused before any of it was
	// stored (NOT_ENOUGH_REPLICAS, retriable). A batch proposed and not
	// committed in time is not this but a deadline: it may still commit.
	ErrNotEnoughReplicas = errors.New("server: not enough replicas")
	// ErrNotEnoughReplicasAfterAppend: a batch committed by a majority,
	// which a topic's min.insync.replicas above the majority asked more
	// replicas to confirm, while too few of them stayed in sync to
	// (NOT_ENOUGH_REPLICAS_AFTER_APPEND, retriable: the batch is stored,
	// and an idempotent producer's retry is recognised).
	ErrNotEnoughReplicasAfterAppend = errors.New("server: not enough replicas after append")
)
