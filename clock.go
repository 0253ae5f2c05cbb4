package seglog

import "time"

// Clock is the time source of every package of seglog that reads the
// time: a Log's record and roll times (Options.Clock), the store's commit
// times and its cleaner's schedule, the cleaner and its throttle, and the
// ui. Tests and simulations pass a fake one so that no test sleeps and a
// simulation moves time by hand; one value serves all of them, so records
// age exactly as the cleaner sees them age.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After delivers the time once d has passed, like time.After.
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// RealClock is the wall clock, the default wherever a Clock is left nil.
var RealClock Clock = realClock{}
