package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A seglog serve child process, for the server benchmarks: bench serve
// (package bench/benchserve, one of the bench extras) and bench restart
// (RunRestart), which is in every build.

// ServeCommand is how a benchmark starts seglog serve as a child process:
// the seglog binary (cmd/seglog passes its own executable) and the
// environment it runs in.
type ServeCommand struct {
	Path string
	// Env is the child's whole environment; nil is this process's.
	Env []string
	// Stderr takes the child's standard error; nil is this process's.
	// bench cluster keeps each node's log apart, to quote it when the
	// cluster fails.
	Stderr io.Writer
}

// ServeChild is a seglog serve process StartServe started.
type ServeChild struct {
	cmd *exec.Cmd
	// Addr is where it listens.
	Addr string
}

// StartServe starts seglog serve on the store dir, listening on a free
// loopback port (--fetch-copy if fetchCopy), and returns once it says
// where.
func StartServe(ctx context.Context, sc ServeCommand, dir string, partitions int, fetchCopy bool) (*ServeChild, error) {
	args := []string{dir, "--listen", "127.0.0.1:0", "--num-partitions", strconv.Itoa(partitions)}
	if fetchCopy {
		args = append(args, "--fetch-copy")
	}
	return StartServeArgs(ctx, sc, args...)
}

// StartServeArgs starts `seglog serve ARGS...` (the store directory first)
// and returns once it says where it listens: how bench cluster starts the
// nodes of a cluster, whose command lines StartServe cannot say, and starts
// a killed node again with the same arguments.
func StartServeArgs(ctx context.Context, sc ServeCommand, args ...string) (*ServeChild, error) {
	cmd := exec.CommandContext(ctx, sc.Path, append([]string{"serve"}, args...)...)
	cmd.Env = sc.Env
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = sc.Stderr
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := bufio.NewScanner(out)
	if !s.Scan() {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("seglog serve printed nothing")
	}
	addr, _, ok := strings.Cut(strings.TrimPrefix(s.Text(), "seglog serve: listening on "), ",")
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("seglog serve said %q", s.Text())
	}
	go io.Copy(io.Discard, out)
	return &ServeChild{cmd: cmd, Addr: addr}, nil
}

// Kill ends the child with SIGKILL and waits for it: a crash.
func (c *ServeChild) Kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// Stop stops the child with SIGINT and waits for it, whatever its exit.
func (c *ServeChild) Stop() {
	c.cmd.Process.Signal(os.Interrupt)
	c.cmd.Wait()
}

// StopChecked stops the child with SIGINT and fails unless it exited 0
// (its store closed cleanly).
func (c *ServeChild) StopChecked() error {
	c.cmd.Process.Signal(os.Interrupt)
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("seglog serve did not stop cleanly: %w", err)
	}
	return nil
}

// CPU is the child's user+system CPU time so far, from /proc/PID/stat
// (in clock ticks of 1/100 s, Linux's USER_HZ).
func (c *ServeChild) CPU() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid)) //vfs:allow a /proc file says size 0, so ReadFileLimit reads nothing
	if err != nil {
		return 0, fmt.Errorf("server CPU time: %w", err)
	}
	// Fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14, stime 15.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("server CPU time: short /proc stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("server CPU time: bad /proc stat")
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// FlushDirtyPages writes back every dirty page of the machine (sync(2))
// before a produce phase: the phases before it leave hundreds of MB
// unwritten, and a writer that meets the kernel's dirty limit is made to
// wait for writeback, so without it a later phase ran against the earlier
// phases' data as well as its own.
func FlushDirtyPages() {
	unix.Sync() //vfs:allow a machine-wide writeback between benchmark phases, not file access
}

// CPUTime is this process's user+system CPU time so far (getrusage).
func CPUTime() time.Duration { return cpuTime() }

// LoadAverage is the machine's 1-minute load average, 0 if unknown: a
// benchmark of processes notes it, since other work on a shared machine
// takes their cores.
func LoadAverage() float64 { return loadAverage() }

// loadAverage is the machine's 1-minute load average, 0 if unknown.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg") //vfs:allow a /proc file says size 0, so ReadFileLimit reads nothing
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
