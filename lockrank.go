package seglog

import "fmt"

// The Log's lock order (the comment on the Log struct's locks) is written here once, as
// ranks: a goroutine holding a lock takes only locks of a higher rank. A
// lock's rank is part of its type (mutex[rankMuT]), so the struct that
// declares a lock also says where it stands. In a normal build mutex and
// rwMutex are sync.Mutex and sync.RWMutex and cost nothing more; built with
// the seglog_lockrank tag (lockrank_check.go) every Lock checks the ranks
// the goroutine already holds and panics, naming both locks, when the
// order is broken — before it blocks, so an inversion is reported even
// when the interleaving that would deadlock does not happen:
//
//	go test -tags seglog_lockrank -race . -run 'Concurr|Swap|Restart|ReadOnly|Truncat'

// lockRank is a lock's place in the order.
type lockRank int

// The ranks, in the order the locks are taken.
const (
	rankSwap  lockRank = iota + 1 // Log.swapMu
	rankCkpt                      // Log.ckptMu
	rankMu                        // Log.mu
	rankFlush                     // Log.flushMu
	rankView                      // readOnly.mu
	rankSegs                      // Log.segs
)

// String names the lock of rank r, for the checker's reports.
func (r lockRank) String() string {
	switch r {
	case rankSwap:
		return "swapMu"
	case rankCkpt:
		return "ckptMu"
	case rankMu:
		return "mu"
	case rankFlush:
		return "flushMu"
	case rankView:
		return "ro.mu"
	case rankSegs:
		return "segs"
	}
	return fmt.Sprintf("rank %d", int(r))
}

// ranked is a rank as a type, the type parameter of mutex and rwMutex.
type ranked interface{ rank() lockRank }

type (
	rankSwapT  struct{}
	rankCkptT  struct{}
	rankMuT    struct{}
	rankFlushT struct{}
	rankViewT  struct{}
	rankSegsT  struct{}
)

func (rankSwapT) rank() lockRank  { return rankSwap }
func (rankCkptT) rank() lockRank  { return rankCkpt }
func (rankMuT) rank() lockRank    { return rankMu }
func (rankFlushT) rank() lockRank { return rankFlush }
func (rankViewT) rank() lockRank  { return rankView }
func (rankSegsT) rank() lockRank  { return rankSegs }
