//go:build race

package soak

// Race reports whether the race detector is on: the reliability tests run
// a fraction of their CI size then (the race run repeats the whole suite,
// ten times slower), since their counts are met by the normal run.
const Race = true
