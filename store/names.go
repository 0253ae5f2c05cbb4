package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
)

// Kafka's limits on topic names (org.apache.kafka.common.internals.Topic).
const (
	// MaxTopicNameLength is Kafka's limit: a partition directory
	// "topic-N" must fit a 255-byte file name.
	MaxTopicNameLength = 249
	// MaxPartitions bounds a topic's partition count. Kafka has no hard
	// limit; this one keeps a mistyped count from creating millions of
	// directories.
	MaxPartitions = 100_000
	// OffsetsTopic is the internal topic holding the groups' committed
	// offsets, named as Kafka names it.
	OffsetsTopic = "__consumer_offsets"
	// DefaultOffsetsPartitions is Kafka's offsets.topic.num.partitions.
	DefaultOffsetsPartitions = 50
)

var (
	// ErrInvalidTopic matches every error about a topic name.
	ErrInvalidTopic = errors.New("store: invalid topic name")
	// ErrInvalidPartitions reports a partition count out of range.
	ErrInvalidPartitions = errors.New("store: invalid partition count")
	// ErrTopicExists is returned when creating a topic that exists.
	ErrTopicExists = errors.New("store: topic already exists")
	// ErrUnknownTopic is returned for a topic the store does not hold.
	ErrUnknownTopic = errors.New("store: unknown topic")
	// ErrUnknownPartition is returned for a partition out of range.
	ErrUnknownPartition = errors.New("store: unknown partition")
	// ErrInternalTopic refuses user operations on __consumer_offsets.
	ErrInternalTopic = errors.New("store: internal topic")
	// ErrClosed is returned by a closed Store. It is seglog.ErrClosed
	// (vfs.ErrClosed), the one "closed" error of every layer.
	ErrClosed = seglog.ErrClosed
	// ErrUnknownGroup is returned for a group with no committed offsets.
	ErrUnknownGroup = errors.New("store: unknown group")
	// ErrReplicatedOffsets refuses a write of the groups' offsets to a
	// store whose offsets topic a cluster replicates
	// (Options.ReplicatedOffsets): the cluster's coordinator writes them
	// through the replication.
	ErrReplicatedOffsets = errors.New("store: the offsets topic is replicated by a cluster; commits go through its coordinator")
	// ErrClusterNode refuses to open a cluster node's log.dir (one
	// holding layout.ClusterNodeDir) for writing as a store of its own,
	// without Options.ReplicatedOffsets: its partitions are replicas
	// that only the node writes, through raft. Written beside it (a
	// single-node serve, seglog topics create, groups reset, produce),
	// the records would be overwritten by the cluster when the node
	// rejoins, or leave this replica disagreeing with the others.
	ErrClusterNode = errors.New("store: a cluster node's directory is written only by its node")
	// ErrInvalidGroup reports an empty group id, or one longer than a
	// Kafka string holds (32767 bytes).
	ErrInvalidGroup = errors.New("store: invalid group id")
)

// ValidateTopic checks a topic name as Kafka's Topic.validate does: not
// empty, not "." or "..", at most 249 characters of [a-zA-Z0-9._-].
func ValidateTopic(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopic)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not allowed", ErrInvalidTopic, name)
	case len(name) > MaxTopicNameLength:
		return fmt.Errorf("%w: %d characters, the limit is %d", ErrInvalidTopic, len(name), MaxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q contains %q; legal characters are ASCII letters, digits, '.', '_' and '-'", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// collisionKey is Kafka's Topic.unifyCollisionChars: '.' and '_' collide
// in metric names, so Kafka refuses a topic that differs from an existing
// one only by them.
func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }

func validatePartitions(n int) error {
	if n < 1 || n > MaxPartitions {
		return fmt.Errorf("%w: %d (must be 1..%d)", ErrInvalidPartitions, n, MaxPartitions)
	}
	return nil
}

// parsePartitionDir parses a directory name of a store's log.dir with
// Kafka's rule (layout.ParsePartitionDir) and accepts it as one of the
// store's partitions only when it is a live partition of a valid topic
// named as the store names it: "t-07" is partition 7 to Kafka's parser,
// but the store would open (and create) "t-7" for it.
func parsePartitionDir(name string) (topic string, p int32, ok bool) {
	d, ok := layout.ParsePartitionDir(name)
	if !ok || d.Suffix != "" || layout.PartitionDirName(d.Topic, d.Partition) != name || ValidateTopic(d.Topic) != nil {
		return "", 0, false
	}
	return d.Topic, d.Partition, true
}

// isDeleteDir reports a partition directory renamed for deletion, as
// Kafka's LocalLog.logDeleteDirName names it: topic-N.<uuid>-delete.
func isDeleteDir(name string) bool {
	d, ok := layout.ParsePartitionDir(name)
	return ok && d.Suffix == layout.DeleteDirSuffix
}
