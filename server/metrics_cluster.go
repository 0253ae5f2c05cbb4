package server

import "slices"

// ClusterMetrics is a cluster node's view of the cluster when the
// snapshot was taken: what Metadata answers with (Cluster.Partitions,
// Cluster.Brokers), counted as Kafka's replica manager and controller
// count it.
type ClusterMetrics struct {
	// Brokers is how many brokers are live; ActiveController whether
	// this node is the controller.
	Brokers          int
	ActiveController bool
	// LeaderPartitions is how many partitions this node leads.
	LeaderPartitions int
	// UnderReplicated is how many of the partitions this node leads have
	// fewer in-sync replicas than replicas: as in Kafka, each leader
	// reports its own, so the cluster's total is the sum over nodes.
	UnderReplicated int
	// Offline is how many partitions have no leader, in this node's view
	// (Kafka's controller reports it; here every node does).
	Offline int
	// Partitions has one entry per partition of the cluster, by topic
	// and partition.
	Partitions []ClusterPartitionMetrics
	// ISRShrinks and ISRExpands count the times an in-sync set of a
	// partition this node led lost or gained a member, and CommitLatency
	// times this node's proposals of producer batches from the proposal
	// to the commit, when the Cluster counts them (ReplicationCounter);
	// zero otherwise.
	ISRShrinks, ISRExpands int64
	CommitLatency          Histogram
}

// ReplicationCounter is implemented by a Cluster that counts its
// replication (internal/cluster's node does): Metrics then reports the
// counts in ClusterMetrics.
type ReplicationCounter interface {
	// ReplicationCounts returns the in-sync sets' shrinks and expansions
	// on the partitions this node led, counted since it started, and the
	// latency from proposing a producer batch to its commit.
	ReplicationCounts() (isrShrinks, isrExpands int64, commitLatency Histogram)
}

// ClusterPartitionMetrics is one partition as this node last knows it.
type ClusterPartitionMetrics struct {
	Topic     string
	Partition int32
	// Leader is the leader's node id, -1 when it has none. LeaderEpoch
	// goes up with every election: its changes are the leader changes.
	Leader, LeaderEpoch int32
	// Replicas and InSync count the partition's replicas and those in
	// sync.
	Replicas, InSync int
}

// clusterMetrics reads the cluster's view, or returns nil on a single
// node.
func (s *Server) clusterMetrics() *ClusterMetrics {
	if s.cluster == nil {
		return nil
	}
	brokers, controller := s.cluster.Brokers()
	topics := s.cluster.Topics()
	slices.Sort(topics)
	parts := make(map[string][]PartitionInfo, len(topics))
	for _, t := range topics {
		ps, err := s.cluster.Partitions(t)
		if err != nil {
			continue // deleted since the listing
		}
		parts[t] = ps
	}
	m := countCluster(s.cfg.NodeID, topics, parts)
	m.Brokers, m.ActiveController = len(brokers), controller == s.cfg.NodeID
	if rc, ok := s.cluster.(ReplicationCounter); ok {
		m.ISRShrinks, m.ISRExpands, m.CommitLatency = rc.ReplicationCounts()
	}
	return m
}

// countCluster counts what node leads, under-replicated and offline in
// the partitions of topics (in order).
func countCluster(node int32, topics []string, parts map[string][]PartitionInfo) *ClusterMetrics {
	m := &ClusterMetrics{}
	for _, t := range topics {
		for _, p := range parts[t] {
			switch {
			case p.Leader < 0:
				m.Offline++
			case p.Leader == node:
				m.LeaderPartitions++
				if len(p.ISR) < len(p.Replicas) {
					m.UnderReplicated++
				}
			}
			m.Partitions = append(m.Partitions, ClusterPartitionMetrics{Topic: t, Partition: p.Partition,
				Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, Replicas: len(p.Replicas), InSync: len(p.ISR)})
		}
	}
	return m
}
