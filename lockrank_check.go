//go:build seglog_lockrank

package seglog

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"sync"
)

// mutex is a sync.Mutex of rank R whose Lock checks the lock order
// (lockrank.go).
type mutex[R ranked] struct{ m sync.Mutex }

func (m *mutex[R]) Lock() {
	var r R
	g := rankAcquire(r.rank(), m)
	m.m.Lock()
	rankHeld(g, r.rank(), m)
}

func (m *mutex[R]) Unlock() {
	rankRelease(m)
	m.m.Unlock()
}

// lockUnchecked and unlockUnchecked take and release m outside the order
// check, for a test that holds a lock to stall the Log's background work
// (the flusher) while it appends.
func (m *mutex[R]) lockUnchecked()   { m.m.Lock() }
func (m *mutex[R]) unlockUnchecked() { m.m.Unlock() }

// rwMutex is a sync.RWMutex of rank R whose Lock and RLock check the lock
// order (lockrank.go). A shared lock taken twice by one goroutine is
// reported too: a writer waiting between the two deadlocks it.
type rwMutex[R ranked] struct{ m sync.RWMutex }

func (m *rwMutex[R]) Lock() {
	var r R
	g := rankAcquire(r.rank(), m)
	m.m.Lock()
	rankHeld(g, r.rank(), m)
}

func (m *rwMutex[R]) Unlock() {
	rankRelease(m)
	m.m.Unlock()
}

func (m *rwMutex[R]) RLock() {
	var r R
	g := rankAcquire(r.rank(), m)
	m.m.RLock()
	rankHeld(g, r.rank(), m)
}

func (m *rwMutex[R]) RUnlock() {
	rankRelease(m)
	m.m.RUnlock()
}

type heldLock struct {
	rank lockRank
	lock any
}

var rankState struct {
	sync.Mutex
	held map[uint64][]heldLock // by goroutine
}

// rankAcquire panics if the calling goroutine holds a lock of rank r or
// higher, and returns the goroutine's id.
func rankAcquire(r lockRank, lock any) uint64 {
	g := goid()
	rankState.Lock()
	defer rankState.Unlock()
	for _, h := range rankState.held[g] {
		if h.rank >= r {
			panic(fmt.Sprintf("seglog: lock order violated: taking %s (rank %d) while holding %s (rank %d); the order is written in lockrank.go",
				r, int(r), h.rank, int(h.rank)))
		}
	}
	return g
}

func rankHeld(g uint64, r lockRank, lock any) {
	rankState.Lock()
	defer rankState.Unlock()
	if rankState.held == nil {
		rankState.held = map[uint64][]heldLock{}
	}
	rankState.held[g] = append(rankState.held[g], heldLock{r, lock})
}

// rankRelease forgets lock. It is looked for in every goroutine: a
// sync.Mutex may be unlocked by another goroutine than the one that
// locked it.
func rankRelease(lock any) {
	g := goid()
	rankState.Lock()
	defer rankState.Unlock()
	if drop(g, lock) {
		return
	}
	for other := range rankState.held {
		if drop(other, lock) {
			return
		}
	}
}

func drop(g uint64, lock any) bool {
	hs := rankState.held[g]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].lock == lock {
			hs = append(hs[:i], hs[i+1:]...)
			if len(hs) == 0 {
				delete(rankState.held, g)
			} else {
				rankState.held[g] = hs
			}
			return true
		}
	}
	return false
}

// goid is the calling goroutine's id, read from its stack header
// ("goroutine 42 [running]:"): slow, and for this debug build only.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	id, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		panic("seglog: lockrank: cannot read the goroutine id: " + err.Error())
	}
	return id
}
