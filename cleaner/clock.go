package cleaner

import "time"

// Clock is the cleaner's time source. Tests inject a fake one so that no
// test sleeps: the check interval and the throttle wait on After.
type Clock interface {
	Now() time.Time
	// After delivers the time once d has passed, like time.After.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// RealClock is the wall clock, the default.
var RealClock Clock = realClock{}
