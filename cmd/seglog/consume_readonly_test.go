package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// dirSnapshot describes every entry below dir on the real filesystem
// (vfstest.Snapshot).
func dirSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	return vfstest.Snapshot(t, vfs.Default, dir)
}

// TestConsumeAndDumpWriteNothing: consume (every mode) and dump change no
// byte, mode, time or directory entry, of a clean log and of one left
// unclean with a torn tail and no indexes, which a writable open would
// recover, rebuild and mark.
func TestConsumeAndDumpWriteNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	mustInvoke(t, numberedLines(1, 300), "produce", dir, "--batch", "7", "--segment-bytes", "1024", "--max-index-bytes", "4096")
	if n := len(storedLogs(t, dir)); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	runAll := func(t *testing.T) {
		t.Helper()
		before := dirSnapshot(t, dir)
		for _, args := range [][]string{
			{"consume", dir},
			{"consume", dir, "--json", "--from", "-20"},
			{"consume", dir, "--from", "150", "--max", "3"},
			{"consume", dir, "--raw"},
			{"consume", dir, "--raw", "--from", "-1"},
			{"consume", dir, "--from", "100000"}, // fails: nothing written either
			{"dump", dir, "--records"},
			{"dump", storedLogs(t, dir)[0]},
		} {
			invoke(t, "", args...)
			vfstest.Unchanged(t, strings.Join(args[:1], " "), before, dirSnapshot(t, dir))
		}
	}
	t.Run("clean", runAll)

	t.Run("unclean", func(t *testing.T) {
		logs := storedLogs(t, dir)
		last := logs[len(logs)-1]
		for _, name := range []string{".kafka_cleanshutdown", strings.TrimSuffix(last, ".log") + ".index", strings.TrimSuffix(last, ".log") + ".timeindex"} {
			if !strings.HasPrefix(name, "/") {
				name = filepath.Join(dir, name)
			}
			if err := vfs.Default.Remove(name); err != nil {
				t.Fatal(err)
			}
		}
		data := readVFS(t, last)
		writeVFS(t, last, append(data, make([]byte, 40)...)) // a torn tail of zeros
		runAll(t)
		// What it printed is every record below the torn tail.
		checkLines(t, dir, 300)
	})
}

// TestConsumeBesideWriter: consume reads a log while an open writable Log
// in this process holds it, and while a produce process does.
func TestConsumeBesideWriter(t *testing.T) {
	t.Run("open log", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "log")
		l, err := seglog.Open(dir, seglog.Options{LogConfig: seglog.LogConfig{MaxIndexBytes: 4096}})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for i := 1; i <= 20; i++ {
			if _, err := l.Append(record.Record{Value: []byte(fmt.Sprintf("line-%d", i))}); err != nil {
				t.Fatal(err)
			}
		}
		checkLines(t, dir, 20)
	})
	t.Run("produce", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "log")
		var stderr lockedBuffer
		cmd, pw := startWithStdinPipe(t, &stderr, "produce", dir, "--linger", "0")
		if _, err := io.WriteString(pw, numberedLines(1, 50)); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, "produce stored 50 lines", func() bool { return completeBatches(t, dir) == 50 })
		checkLines(t, dir, 50)
		pw.Close()
		if code := exitCode(t, cmd.Wait(), &stderr); code != 0 {
			t.Fatalf("produce: exit %d: %s", code, stderr.String())
		}
	})
}

// followLines starts consume --follow on dir and returns the values it
// prints, as they come.
// The returned function waits for it to exit, after a SIGINT if interrupt
// is set, and returns its exit status.
func followLines(t *testing.T, dir string, args ...string) (*lockedBuffer, chan string, func(interrupt bool) int) {
	t.Helper()
	var stderr lockedBuffer
	cmd := seglogProcess(t, &stderr, append([]string{"consume", dir, "--follow"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			v, err := strconv.Unquote(f[len(f)-1])
			if err != nil {
				v = "unparsable: " + sc.Text()
			}
			lines <- v
		}
	}()
	stop := func(interrupt bool) int {
		if interrupt {
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
		}
		<-scanDone
		return exitCode(t, cmd.Wait(), &stderr)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return &stderr, lines, stop
}

// expectLines reads n values from lines and checks they are line-from ..
// line-(from+n-1).
func expectLines(t *testing.T, lines chan string, from, n int, stderr *lockedBuffer) {
	t.Helper()
	timeout := time.After(time.Minute)
	for i := from; i < from+n; i++ {
		select {
		case v, ok := <-lines:
			if !ok {
				t.Fatalf("consume --follow ended before line-%d\nstderr: %s", i, stderr.String())
			}
			if want := fmt.Sprintf("line-%d", i); v != want {
				t.Fatalf("consume --follow printed %q, want %q", v, want)
			}
		case <-timeout:
			t.Fatalf("gave up waiting for line-%d from consume --follow\nstderr: %s", i, stderr.String())
		}
	}
}

// TestConsumeFollow: consume --follow prints the records there when it
// starts and those appended after, across a roll, and exits 0 on SIGINT
// having printed each exactly once.
func TestConsumeFollow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	l, err := seglog.Open(dir, seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: 2048, MaxIndexBytes: 4096}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendLines := func(from, to int) {
		for i := from; i <= to; i++ {
			if _, err := l.Append(record.Record{Value: []byte(fmt.Sprintf("line-%d", i))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendLines(1, 10)
	stderr, lines, stop := followLines(t, dir)
	expectLines(t, lines, 1, 10, stderr)
	appendLines(11, 12)
	expectLines(t, lines, 11, 2, stderr)
	segs := l.NumSegments()
	appendLines(13, 100) // several rolls
	if l.NumSegments() == segs {
		t.Fatalf("no roll: %d segments", segs)
	}
	expectLines(t, lines, 13, 88, stderr)
	if code := stop(true); code != 0 {
		t.Fatalf("exit %d after SIGINT, want 0\nstderr: %s", code, stderr.String())
	}
	if v, ok := <-lines; ok {
		t.Fatalf("printed %q after the last record", v)
	}
}

// TestConsumeFollowFromTheEnd: --follow --from -N starts N offsets before
// the end; --max stops the follower after that many records.
func TestConsumeFollowFromTheEnd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	mustInvoke(t, numberedLines(1, 30), "produce", dir)
	stderr, lines, stop := followLines(t, dir, "--from", "-5", "--max", "8")
	expectLines(t, lines, 26, 5, stderr)
	mustInvoke(t, numberedLines(31, 40), "produce", dir)
	expectLines(t, lines, 31, 3, stderr)
	// --max 8 reached: the follower exits by itself.
	if v, ok := <-lines; ok {
		t.Fatalf("printed %q past --max", v)
	}
	if code := stop(false); code != 0 {
		t.Fatalf("exit %d, want 0\nstderr: %s", code, stderr.String())
	}
}

// TestConsumeFollowEmptyLog: a follower started on a new, empty log (the
// usual way to watch a log before anything is produced) prints what a
// later produce stores.
func TestConsumeFollowEmptyLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	mustInvoke(t, "", "produce", dir)
	stderr, lines, stop := followLines(t, dir)
	mustInvoke(t, numberedLines(1, 3), "produce", dir)
	expectLines(t, lines, 1, 3, stderr)
	if code := stop(true); code != 0 {
		t.Fatalf("exit %d after SIGINT, want 0\nstderr: %s", code, stderr.String())
	}
}

// hasOpen reports whether process pid has file name open, from its
// /proc/PID/fd links.
func hasOpen(t *testing.T, pid int, name string) bool {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := vfs.Default.List(fdDir)
	if err != nil {
		return false // exited, or not there yet
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(fdDir, fd)); err == nil && target == name { //vfs:allow reading a child process's descriptor links in /proc
			return true
		}
	}
	return false
}

// TestConsumeFollowEmptyLogStops: a follower of a log with nothing in it
// yet (a new log, or one whose last segment is still empty) waits without
// spinning and exits 0 on SIGINT.
func TestConsumeFollowEmptyLogStops(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	mustInvoke(t, "", "produce", dir)
	var stderr lockedBuffer
	cmd := seglogProcess(t, &stderr, "consume", dir, "--follow")
	// The stop must come while the follower waits for more, not before it
	// starts to: the child says when it is blocked in the poll's wait.
	const wait = "seglog.(*Log).followWait("
	cmd.Env = append(cmd.Env, announceBlockedEnv+"="+wait)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	logFile := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
	testutil.WaitFor(t, "the follower opened the log", func() bool { return hasOpen(t, cmd.Process.Pid, logFile) })
	testutil.WaitFor(t, "the follower waits for more records", func() bool {
		return strings.Contains(stderr.String(), announceBlocked+wait)
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(t, err, &stderr); code != 0 {
			t.Fatalf("exit %d after SIGINT, want 0\nstderr: %s", code, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("consume --follow of an empty log did not stop a minute after SIGINT\nstderr: %s", stderr.String())
	}
}

// TestReadCommandsCreateNothing: only produce creates a log. The read
// commands (consume in every mode, dump, fsck without --repair, clean
// --dry-run) given an absent directory fail with a non-zero exit and
// create neither it nor its absent parent; given an empty directory they
// leave it empty.
func TestReadCommandsCreateNothing(t *testing.T) {
	base := t.TempDir()
	absent := filepath.Join(base, "parent", "log")
	empty := filepath.Join(base, "empty")
	if err := vfs.Default.MkdirAll(empty); err != nil {
		t.Fatal(err)
	}
	commands := [][]string{
		{"consume"}, {"consume", "--json", "--from", "-3"}, {"consume", "--raw"}, {"consume", "--from", "5"},
		{"dump"}, {"dump", "--records"}, {"fsck"}, {"fsck", "--json"},
		{"clean", "--dry-run", "--retention-ms", "1"},
	}
	for _, args := range commands {
		name := strings.Join(args, " ")
		r := invoke(t, "", append(args, absent)...)
		if r.code == 0 {
			t.Errorf("seglog %s on an absent directory: exit 0, want a failure", name)
		}
		if exists(filepath.Join(base, "parent")) {
			t.Fatalf("seglog %s created %s", name, filepath.Join(base, "parent"))
		}
		invoke(t, "", append(args, empty)...)
		if names, err := vfs.Default.List(empty); err != nil || len(names) != 0 {
			t.Fatalf("seglog %s on an empty directory left %v (%v)", name, names, err)
		}
	}
}
