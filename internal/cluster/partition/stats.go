package partition

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/internal/latency"
)

// What the replication counts for an operator (docs/metrics.md): the
// in-sync set's shrinks and expansions, as Kafka's ReplicaManager counts
// IsrShrinksPerSec and IsrExpandsPerSec, and how long a proposal takes to
// commit.
//
// A leader's in-sync set is not kept: etcd raft's progress tracker knows
// it, and Leader asks for it (every heartbeat interval for the partitions
// this node leads, and for each Metadata request). A change is counted
// when a fresh answer differs from the one before it in the same term:
// a new leader starts with nothing to compare, so an election is not a
// shrink, and a status the busy driver did not give in time (Leader then
// answers every replica) is not compared at all.
type replStats struct {
	isrShrinks, isrExpands atomic.Int64
	// commit times each proposal of a producer batch, from Propose to
	// the commit (acks=all and acks=1 alike: an acks=1 proposal is timed
	// after its answer went).
	commit latency.Histogram
}

// isrSeen is the in-sync set a leader last computed for a partition.
type isrSeen struct {
	mu   sync.Mutex
	term uint64
	isr  []int32
}

// noteISR counts the difference between isr, which this node computed as
// the partition's leader in term, and the set computed before it.
func (m *Manager) noteISR(p *part, term uint64, isr []int32) {
	s := &p.isrSeen
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.term == term && s.isr != nil {
		if !subset(s.isr, isr) {
			m.stats.isrShrinks.Add(1)
		}
		if !subset(isr, s.isr) {
			m.stats.isrExpands.Add(1)
		}
	}
	s.term, s.isr = term, slices.Clone(isr)
}

// subset reports whether every member of a is in b.
func subset(a, b []int32) bool {
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}

// timeCommit counts one proposal that committed, proposed at start.
func (m *Manager) timeCommit(start time.Time) {
	m.stats.commit.Observe(time.Since(start))
}

// ReplicationCounts returns the in-sync set's shrinks and expansions
// counted since the Manager started, and the commit latency histogram
// (the caller reads it, never observes into it).
func (m *Manager) ReplicationCounts() (isrShrinks, isrExpands int64, commit *latency.Histogram) {
	return m.stats.isrShrinks.Load(), m.stats.isrExpands.Load(), &m.stats.commit
}
