package cluster

import (
	"slices"

	"github.com/seglog/seglog/internal/latency"
	"github.com/seglog/seglog/server"
)

// replicationCounter is what a partitions runner counts of its
// replication (partition.Manager does; the tests' fakes need not).
type replicationCounter interface {
	ReplicationCounts() (isrShrinks, isrExpands int64, commit *latency.Histogram)
}

var _ server.ReplicationCounter = (*Node)(nil)

// ReplicationCounts returns the in-sync sets' shrinks and expansions on
// the partitions this node led and its producer batches' commit latency
// (server.ReplicationCounter), zero when its partitions are not running.
func (n *Node) ReplicationCounts() (isrShrinks, isrExpands int64, commitLatency server.Histogram) {
	commitLatency.Bounds = slices.Clone(latency.Bounds[:])
	rc, ok := n.parts.(replicationCounter)
	if !ok {
		commitLatency.Cumulative = make([]uint64, len(latency.Bounds))
		return 0, 0, commitLatency
	}
	isrShrinks, isrExpands, h := rc.ReplicationCounts()
	commitLatency.Cumulative, commitLatency.Count, commitLatency.Sum = h.Snapshot()
	return isrShrinks, isrExpands, commitLatency
}
