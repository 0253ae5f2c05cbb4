package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A seglog serve child process, for the server benchmarks: bench serve
// (bench_serve.go, one of the bench extras) and bench restart, which is in
// every build.

// runAsSeglogEnv makes a test binary run as seglog (main_test.go): the
// bench's server child is this binary's serve command, in tests too.
const runAsSeglogEnv = "SEGLOG_TEST_RUN_MAIN"

// serveChild is a seglog serve process.
type serveChild struct {
	cmd  *exec.Cmd
	addr string
}

// startServeChild starts seglog serve on the store dir, listening on a free
// loopback port (--fetch-copy if fetchCopy), and returns once it says
// where.
func startServeChild(ctx context.Context, dir string, partitions int, fetchCopy bool) (*serveChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"serve", dir, "--listen", "127.0.0.1:0", "--num-partitions", strconv.Itoa(partitions)}
	if fetchCopy {
		args = append(args, "--fetch-copy")
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	// Tests run this through the test binary, which becomes seglog when
	// this variable is set; for the seglog binary it is harmless.
	cmd.Env = append(os.Environ(), runAsSeglogEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("seglog serve printed nothing")
	}
	addr, _, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "seglog serve: listening on "), ",")
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("seglog serve said %q", sc.Text())
	}
	go io.Copy(io.Discard, out)
	return &serveChild{cmd: cmd, addr: addr}, nil
}

// flushDirtyPages writes back every dirty page of the machine (sync(2))
// before a produce phase: the phases before it leave hundreds of MB
// unwritten, and a writer that meets the kernel's dirty limit is made to
// wait for writeback, so without it a later phase ran against the earlier
// phases' data as well as its own.
func flushDirtyPages() {
	unix.Sync() //vfs:allow a machine-wide writeback between benchmark phases, not file access
}
