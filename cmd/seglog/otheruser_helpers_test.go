package main

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog/vfs"
)

func chmodPath(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil { //vfs:allow the test sets up permissions, which vfs does not model
		t.Fatal(err)
	}
}

// readOnlyTree makes dir's files mode 0444 and dir itself 0555 (restored
// at the end, so that TempDir can remove it): a log its user may read,
// not write.
func readOnlyTree(t *testing.T, dir string) {
	t.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		chmodPath(t, filepath.Join(dir, name), 0o444)
	}
	chmodPath(t, dir, 0o555)
	t.Cleanup(func() { chmodPath(t, dir, 0o755) })
}

// invokeAsOtherUser runs seglog with args and stdin as a user who does not
// own base's files: under root (as in CI) a copy of the test binary runs
// as nobody (65534), for whom root's files are someone else's; otherwise
// the test's own user runs it, and only the mode bits the caller set deny
// writing. It returns the exit code, stdout and stderr.
func invokeAsOtherUser(t *testing.T, base, stdin string, args ...string) (int, string, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		r := invoke(t, stdin, args...)
		return r.code, r.stdout, r.stderr
	}
	var stderr lockedBuffer
	cmd := otherUserProcess(t, base, &stderr, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	return exitCode(t, cmd.Run(), &stderr), stdout.String(), stderr.String()
}

// otherUserProcess returns seglog with args as a process (not started) of
// a user who does not own base's files: nobody (65534) running a copy of
// the test binary when the test runs as root, else the test's own user
// (only mode bits then deny writing).
func otherUserProcess(t *testing.T, base string, stderr *lockedBuffer, args ...string) *exec.Cmd {
	t.Helper()
	if os.Geteuid() != 0 {
		return seglogProcess(t, stderr, args...)
	}
	// nobody must reach the directory and run a copy of this binary:
	// temporary directories are private (0700).
	chmodPath(t, base, 0o755)
	chmodPath(t, filepath.Dir(base), 0o755)
	binDir := t.TempDir()
	chmodPath(t, binDir, 0o755)
	chmodPath(t, filepath.Dir(binDir), 0o755)
	self, err := vfs.ReadFileLimit(vfs.Default, os.Args[0], math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "seglog")
	writeVFS(t, bin, self)
	chmodPath(t, bin, 0o755)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), runAsSeglog+"=1")
	cmd.Dir = binDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Stderr = stderr
	return cmd
}
