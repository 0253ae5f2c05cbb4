//go:build !seglog_lockrank

package seglog

import "sync"

// mutex is a sync.Mutex of rank R (lockrank.go); unchecked in this build.
type mutex[R ranked] struct{ sync.Mutex }

// rwMutex is a sync.RWMutex of rank R (lockrank.go); unchecked in this
// build.
type rwMutex[R ranked] struct{ sync.RWMutex }

// lockUnchecked and unlockUnchecked take and release m outside the order
// check, for a test that holds a lock to stall the Log's background work
// (the flusher) while it appends.
func (m *mutex[R]) lockUnchecked()   { m.Mutex.Lock() }
func (m *mutex[R]) unlockUnchecked() { m.Mutex.Unlock() }
