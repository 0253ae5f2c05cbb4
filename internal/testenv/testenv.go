// Package testenv decides what a test does when an outside program it
// needs (chromium, kcat) is not installed. `go test ./...` must pass on a
// machine with Go alone, so there such a test skips, naming the Debian
// package that provides the program; under CI, which must run every test
// and installs the programs (.ci/run), a missing program fails the test
// instead of letting a skip hide it. Kcat runs the one such program that
// several packages' tests drive (the server's, the cluster's) under that
// rule.
package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
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

// kcatTimeout bounds one kcat run: a consumer with -e ends at the end of
// its partitions, but one that never gets there would hang the test.
const kcatTimeout = 60 * time.Second

// Kcat runs kcat (librdkafka's command-line client) against brokers with
// stdin and returns its standard output; a failed run fails the test with
// kcat's standard error. Without kcat the test skips, or fails under CI
// (LookPath; .ci/run installs it): a test that starts servers first calls
// LookPath(t, "kcat", "kcat") itself, so as not to start them for
// nothing. Metadata is refreshed every second, so a consumer or producer
// that raced a topic's creation or a leader's move finds it soon.
func Kcat(t testing.TB, brokers []string, stdin string, args ...string) string {
	t.Helper()
	path := LookPath(t, "kcat", "kcat")
	ctx, cancel := context.WithTimeout(context.Background(), kcatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"-b", strings.Join(brokers, ","), "-X", "topic.metadata.refresh.interval.ms=1000"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}
