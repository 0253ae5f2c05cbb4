// Package sarama runs IBM sarama, an independent Go implementation of the
// Kafka protocol, against `seglog serve` (issue 27). It is a module of its
// own so that sarama and its dependencies stay out of seglog's go.mod, and
// it imports nothing of seglog: it starts the seglog binary (SEGLOG_BIN, or
// one built from ../.. by TestMain) as a client's operator would, talks to
// it only over the Kafka protocol, and reads back what a call changed with
// the seglog CLI (consume, dump, topics, groups, fsck), a second client
// that shares no code with sarama.
package sarama

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// seglogBin is the seglog binary every test runs.
var seglogBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	seglogBin = os.Getenv("SEGLOG_BIN")
	if seglogBin == "" {
		dir, err := os.MkdirTemp("", "seglog-sarama-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		seglogBin = filepath.Join(dir, "seglog")
		build := exec.Command("go", "build", "-o", seglogBin, "./cmd/seglog")
		build.Dir = filepath.Join("..", "..")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building seglog (set SEGLOG_BIN to use a built one):", err)
			return 1
		}
	}
	return m.Run()
}

// server is one `seglog serve DIR` process.
type server struct {
	t    *testing.T
	dir  string
	addr string
	cmd  *exec.Cmd
	done chan error
	out  *lockedBuffer
}

// listening matches the line seglog serve prints once its listener is bound.
var listening = regexp.MustCompile(`^seglog serve: listening on ([^,\s]+)`)

// startServer runs `seglog serve dir --listen 127.0.0.1:0` and returns once
// it has printed the address it listens on. The group's first rebalance
// does not wait for more members (the tests start one member at a time).
// A server still running when the test ends is stopped and must exit 0.
func startServer(t *testing.T, dir string) *server {
	t.Helper()
	s := &server{t: t, dir: dir, done: make(chan error, 1), out: &lockedBuffer{}}
	s.cmd = exec.Command(seglogBin, "serve", dir, "--listen", "127.0.0.1:0", "--group-initial-rebalance-delay", "0")
	// A test binary that panics or is killed runs no cleanup: the server
	// must not outlive it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw := io.Pipe()
	s.cmd.Stdout, s.cmd.Stderr = pw, pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			s.out.WriteString(line + "\n")
			if m := listening.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
	}()
	go func() {
		err := s.cmd.Wait()
		pw.Close()
		s.done <- err
	}()
	select {
	case s.addr = <-addr:
	case err := <-s.done:
		t.Fatalf("seglog serve %s exited before listening: %v\n%s", dir, err, s.out.String())
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Fatalf("seglog serve %s did not print its address in 30s\n%s", dir, s.out.String())
	}
	t.Cleanup(s.stop)
	return s
}

// stop sends SIGTERM (a clean shutdown: in-flight requests finish, the
// store is closed) and fails the test unless the server exits 0 within its
// default grace.
func (s *server) stop() {
	s.t.Helper()
	if s.done == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		s.done = nil
		if err != nil {
			s.t.Errorf("seglog serve exited with %v\n%s", err, s.out.String())
		}
	case <-time.After(40 * time.Second):
		_ = s.cmd.Process.Kill()
		s.done = nil
		s.t.Errorf("seglog serve did not stop within 40s of SIGTERM\n%s", s.out.String())
	}
}

// seglog runs a seglog command and returns its standard output, failing
// the test on a non-zero exit.
func seglog(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, seglogBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("seglog %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// fsckClean runs `seglog fsck dir` on a stopped server's store and fails
// the test unless every partition is clean.
func fsckClean(t *testing.T, dir string) {
	t.Helper()
	out := seglog(t, "fsck", dir)
	if !strings.Contains(out, " 0 problems (0 errors, 0 warnings)") {
		t.Errorf("seglog fsck %s is not clean:\n%s", dir, out)
	}
}

// lockedBuffer collects the server's output, written by the goroutine that
// reads its pipe and read by a failing test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
