package server

import "time"

// clock is the coordinator's time: session timeouts, rebalance timeouts
// and the initial rebalance delay all run on it, so tests drive them with
// a fake clock instead of sleeping.
type clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d, unless stopped.
	AfterFunc(d time.Duration, f func()) timer
}

// timer is a scheduled call; Stop cancels it if it has not run.
type timer interface{ Stop() bool }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }
