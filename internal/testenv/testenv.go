// Package testenv decides what a test does when an outside program it
// needs (chromium, kcat) is not installed. `go test ./...` must pass on a
// machine with Go alone, so there such a test skips, naming the Debian
// package that provides the program; under CI, which must run every test
// and installs the programs (.ci/run), a missing program fails the test
// instead of letting a skip hide it.
package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// CI reports whether the tests run under CI: the environment variable CI
// holds a true value ("true", as CI services and .ci/run set it, or "1").
func CI() bool {
	ci, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && ci
}

// LookPath returns the path of program, found in PATH. When it is not
// there, the test skips with a message saying how to install it
// (apt-get install -y debPackage), or, under CI, fails with that message.
func LookPath(t testing.TB, program, debPackage string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err == nil {
		return path
	}
	msg := program + " is not installed (apt-get install -y " + debPackage + "): " + err.Error()
	if CI() {
		t.Fatalf("%s; CI=%s: a test may not skip under CI (.ci/run installs %s)", msg, os.Getenv("CI"), debPackage)
	}
	t.Skipf("%s; skipped (under CI=true it fails)", msg)
	return ""
}
