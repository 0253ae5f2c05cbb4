// Package soak is what the reliability tests share with the soak runner
// (fuzz/soak.sh): flags that scale a test from its CI size to a long run,
// and a file the tests append their counts to, which the runner sums into
// its JSON summary.
package soak

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

var (
	scale = flag.Int("soak.scale", 1, "reliability tests: multiply crash points, faults, kills and iterations (soak runs raise it)")
	seed  = flag.Uint64("soak.seed", 0, "reliability tests: seed offset, so soak rounds explore new scenarios; a failure names it")
)

// Scale is the -soak.scale multiplier (at least 1).
func Scale() int { return max(*scale, 1) }

// Seed is the -soak.seed offset.
func Seed() uint64 { return *seed }

// CountsEnv names the file Count appends to; the soak runner sets it.
const CountsEnv = "SEGLOG_SOAK_COUNTS"

// Count appends "name n" to the counts file, when the runner set one.
func Count(t testing.TB, name string, n int) {
	path := os.Getenv(CountsEnv)
	if path == "" {
		return
	}
	// The counts file is the runner's, outside any log: not vfs business.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644) //vfs:allow the soak runner's counts file, not a log
	if err != nil {
		t.Errorf("soak counts: %v", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %d\n", name, n)
}

// Reduce divides n by div under the race detector (at least 1), and
// returns it unchanged otherwise.
func Reduce(n, div int) int {
	if Race {
		return max(1, n/div)
	}
	return n
}
