//go:build !race

package soak

// Race reports whether the race detector is on (see race.go).
const Race = false
