// Package latency counts durations into a histogram of atomics with fixed
// bounds: what the server's request timers and a cluster's commit timer
// share, so that every latency seglog reports has the same buckets and is
// recorded without a lock on the hot path.
package latency

import (
	"slices"
	"sync/atomic"
	"time"
)

// Bounds are the buckets' upper bounds in seconds: from half a millisecond
// (a metadata answer, a commit on an idle cluster) to the longest a parked
// fetch or a group join usually waits, as Kafka's request timers span.
var Bounds = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Histogram counts observations by bucket. Its zero value is ready; it is
// safe for concurrent use.
type Histogram struct {
	nanos atomic.Int64
	// buckets[i] counts observations at or under Bounds[i] and above the
	// bound before; the last slot, those above every bound. Their sum is
	// the count, so that a snapshot's count and buckets agree.
	buckets [len(Bounds) + 1]atomic.Int64
}

// Observe counts one duration.
func (h *Histogram) Observe(d time.Duration) {
	h.nanos.Add(int64(d))
	i, _ := slices.BinarySearch(Bounds[:], d.Seconds())
	h.buckets[i].Add(1)
}

// Snapshot returns, for each bound, the observations at or under it (as
// Prometheus' cumulative buckets), the count of all of them, and their
// sum in seconds. Observations made while it reads may be missed by the
// buckets and counted in the sum, or the reverse: the figures are a
// monitor's, not an audit's.
func (h *Histogram) Snapshot() (cumulative []uint64, count uint64, sum float64) {
	cumulative = make([]uint64, len(Bounds))
	for i := range h.buckets {
		count += uint64(h.buckets[i].Load())
		if i < len(Bounds) {
			cumulative[i] = count
		}
	}
	return cumulative, count, float64(h.nanos.Load()) / float64(time.Second)
}
