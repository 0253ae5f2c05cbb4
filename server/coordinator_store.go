package server

import (
	"fmt"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupStore is where the coordinator keeps what outlives a member:
// committed offsets and memberships, as records of the group's
// __consumer_offsets partition. A single node keeps them in its store
// (localGroups); a cluster node in the offsets partitions it leads,
// written through the replication (clusterGroups, coordinator_cluster.go).
type groupStore interface {
	// owner is 0 when this node coordinates group, else the code a
	// request for it gets: NOT_COORDINATOR, or
	// COORDINATOR_LOAD_IN_PROGRESS while its partition loads. Called
	// with the coordinator's mutex held.
	owner(group string) int16
	// commit writes a group's committed offsets on partitions of a
	// topic, durably, before it returns.
	commit(group, topic string, offsets map[int32]int64) error
	// committed is a group's committed offset on a partition.
	committed(group, topic string, partition int32) (int64, bool)
	// committedAll is every committed offset of a group, sorted by topic
	// and partition (ErrUnknownGroup when it has none).
	committedAll(group string) ([]store.PartitionLag, error)
	// groups lists the groups with committed offsets, sorted.
	groups() []string
	// deleteGroup tombstones a group's offsets (ErrUnknownGroup when it
	// has none).
	deleteGroup(group string) error
	// deleteOffsets tombstones a group's offsets on partitions of a
	// topic (ErrUnknownGroup when it has none).
	deleteOffsets(group, topic string, partitions ...int32) error
	// writeMembership writes a GroupMetadata record (or its tombstone)
	// to the group's partition, durably.
	writeMembership(group string, r record.Record) error
}

// localGroups is a single node's groupStore: its store's offsets topic,
// whose committed-offset table the store keeps.
type localGroups struct{ st *store.Store }

func (l localGroups) owner(string) int16 { return 0 }

func (l localGroups) commit(group, topic string, offsets map[int32]int64) error {
	return l.st.Commit(group, topic, offsets)
}

func (l localGroups) committed(group, topic string, partition int32) (int64, bool) {
	c, ok := l.st.CommittedOffset(group, topic, partition)
	return c.Offset, ok
}

func (l localGroups) committedAll(group string) ([]store.PartitionLag, error) {
	rows, _, err := l.st.DescribeGroup(group)
	return rows, err
}

func (l localGroups) groups() []string { return l.st.Groups() }

func (l localGroups) deleteGroup(group string) error { return l.st.DeleteGroup(group) }

func (l localGroups) deleteOffsets(group, topic string, partitions ...int32) error {
	return l.st.DeleteOffsets(group, topic, partitions...)
}

func (l localGroups) writeMembership(group string, r record.Record) error {
	n, err := l.st.Partitions(store.OffsetsTopic)
	if err != nil {
		return err
	}
	w, err := l.st.Writer(store.OffsetsTopic, store.OffsetsPartitionFor(group, n))
	if err != nil {
		return err
	}
	if _, err := w.Append(r); err != nil {
		return fmt.Errorf("server: writing the membership of group %q: %w", group, err)
	}
	return nil
}

// isMembership reports whether a __consumer_offsets record key is a
// GroupMetadata key (version 2), the coordinator's own records.
func isMembership(key []byte) bool {
	return len(key) >= 2 && key[0] == 0 && key[1] == 2
}

// readMembership applies one GroupMetadata record to last, each group's
// latest membership: a tombstone or a value that does not decode removes
// the group (its members rejoin), a key that does not decode is skipped,
// as the store skips what it does not know.
func readMembership(last map[string]*kmsg.GroupMetadataValue, key, value []byte) {
	var k kmsg.GroupMetadataKey
	if k.ReadFrom(key) != nil {
		return
	}
	if value == nil {
		delete(last, k.Group)
		return
	}
	v := new(kmsg.GroupMetadataValue)
	// The decoded members' subscriptions and assignments alias what they
	// were read from, and a record's bytes are valid only while it is
	// read (Log.Records): decode a copy, since the value is kept.
	if v.ReadFrom(append([]byte(nil), value...)) != nil {
		delete(last, k.Group)
		return
	}
	last[k.Group] = v
}

// restoreMemberships brings back the groups of last (coordinator mutex
// held): those whose last generation had members as stable groups, and
// the protocol type of those left Empty.
func (c *coordinator) restoreMemberships(last map[string]*kmsg.GroupMetadataValue) {
	for id, v := range last {
		switch {
		case len(v.Members) > 0 && v.Protocol != nil:
			c.restoreGroup(id, v)
		case len(v.Members) == 0 && v.ProtocolType != "":
			c.emptied[id] = v.ProtocolType
		}
	}
}
