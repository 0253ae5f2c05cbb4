package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
)

// runAsSeglog, set in a process's environment, makes the test binary run
// the command instead of the tests: tests that need a real process (signals,
// a kill, standard input as a pipe) re-execute themselves. It is the
// variable the bench's server children are started with (serveCommand).
const runAsSeglog = runAsSeglogEnv

// announceBlockedEnv, set beside runAsSeglog to a function name as a
// goroutine dump spells it (testutil.Blocked), makes the command's process
// print announceBlocked and that name on stderr once a goroutine is blocked
// in it: how a test learns that a child process has reached a wait, where
// it would otherwise sleep and hope.
const announceBlockedEnv = "SEGLOG_TEST_ANNOUNCE_BLOCKED"

// announceBlocked starts the line announceBlockedEnv prints.
const announceBlocked = "seglog test: blocked in "

// peakRSSFile, set beside runAsSeglog, names a file the command writes
// its peak resident memory to (VmHWM, in KiB) when it returns. The
// rusage of a child is no measure: Linux counts in it the resident set of
// the test process it was forked from.
const peakRSSFile = "SEGLOG_TEST_PEAK_RSS_FILE"

func TestMain(m *testing.M) {
	if os.Getenv(runAsSeglog) == "1" {
		if fn := os.Getenv(announceBlockedEnv); fn != "" {
			go func() {
				for testutil.Blocked(fn) == 0 {
					time.Sleep(2 * time.Millisecond)
				}
				fmt.Fprintf(os.Stderr, "%s%s\n", announceBlocked, fn)
			}()
		}
		code := run(os.Args[1:])
		if name := os.Getenv(peakRSSFile); name != "" {
			status, _ := os.ReadFile("/proc/self/status") //vfs:allow this process's own memory figures in /proc
			for _, line := range strings.Split(string(status), "\n") {
				if kib, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					_ = os.WriteFile(name, []byte(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kib), "kB"))), 0o644) //vfs:allow the test's scratch file
				}
			}
		}
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// seglogProcess returns the command as a process to start, with its
// standard error captured into stderr.
func seglogProcess(t testing.TB, stderr *lockedBuffer, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsSeglog+"=1")
	cmd.Stderr = stderr
	// The child dies with the test binary: a test killed by a signal or
	// its timeout leaves no serve behind holding a store and a port.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// startWithStdinPipe starts seglog with args in a child process whose
// stdin is a pipe, and returns the process and the pipe's write end (the
// test closes it; it is closed at the test's end too).
func startWithStdinPipe(t testing.TB, stderr *lockedBuffer, args ...string) (*exec.Cmd, *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pw.Close() })
	cmd := seglogProcess(t, stderr, args...)
	cmd.Stdin = pr
	if err := cmd.Start(); err != nil {
		pr.Close()
		t.Fatal(err)
	}
	pr.Close()
	return cmd, pw
}

// exitCode returns a finished process's exit status, failing the test if
// it did not exit on its own (a signal it did not handle killed it).
func exitCode(t testing.TB, err error, stderr *lockedBuffer) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("wait: %v", err)
	}
	if ee.ExitCode() < 0 {
		t.Fatalf("the process did not exit by itself: %v\nstderr: %s", err, stderr)
	}
	return ee.ExitCode()
}

// TestRunAsSeglog: the re-executed test binary is the command (it refuses
// an unknown subcommand as seglog does), so process tests test the real
// entry point.
func TestRunAsSeglog(t *testing.T) {
	var stderr lockedBuffer
	cmd := seglogProcess(t, &stderr, "no-such-command")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	code := exitCode(t, cmd.Run(), &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "no-such-command") || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the command's own refusal", code, stdout.String(), stderr.String())
	}
}
