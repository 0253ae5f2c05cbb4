package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"golang.org/x/sys/unix"
)

// numberedLines returns lines "line-from" .. "line-to", each with its
// newline.
func numberedLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line-%d\n", i)
	}
	return b.String()
}

// consumedValues returns the values of every record consume prints.
func consumedValues(t *testing.T, dir string) []string {
	t.Helper()
	var vals []string
	for _, r := range parseConsumed(t, mustInvoke(t, "", "consume", dir, "--json").stdout) {
		if r.Value == nil {
			t.Fatalf("offset %d: null value", r.Offset)
		}
		v, err := base64.StdEncoding.DecodeString(*r.Value)
		if err != nil {
			t.Fatal(err)
		}
		vals = append(vals, string(v))
	}
	return vals
}

// checkLines fails unless dir holds exactly the records "line-1" ..
// "line-n".
func checkLines(t *testing.T, dir string, n int) {
	t.Helper()
	got := consumedValues(t, dir)
	if len(got) != n {
		t.Fatalf("the log holds %d records, want %d", len(got), n)
	}
	for i, v := range got {
		if want := fmt.Sprintf("line-%d", i+1); v != want {
			t.Fatalf("record %d is %q, want %q", i, v, want)
		}
	}
}

// pipeHolds returns how many bytes wait in the pipe whose write end is w.
func pipeHolds(t *testing.T, w *os.File) int {
	t.Helper()
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		t.Fatal(err)
	}
	if ierr != nil {
		t.Fatal(ierr)
	}
	return n
}

// completeBatches counts the records of the whole batches in dir's .log
// files, ignoring a batch still being written (and a log not yet created).
func completeBatches(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	if !exists(dir) {
		return 0
	}
	for _, name := range storedLogs(t, dir) {
		data := readVFS(t, name)
		for pos := 0; pos+record.PeekSize <= len(data); {
			size, _, err := record.PeekEntry(data[pos:])
			if err != nil || pos+size > len(data) {
				break
			}
			n += int(record.Batch(data[pos : pos+size]).NumRecords())
			pos += size
		}
	}
	return n
}

// TestProduceSignalStoresWhatItRead: SIGINT or SIGTERM while stdin is
// still open stores every line the command read (here held back by
// --linger and --batch, so only the signal can store them) and every line
// already waiting in the pipe, then exits 130 or 143 saying so. The
// unfinished last line is named, not stored.
func TestProduceSignalStoresWhatItRead(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			var stderr lockedBuffer
			cmd, pw := startWithStdinPipe(t, &stderr, "produce", dir, "--linger", "1h", "--batch", "1000")
			if _, err := io.WriteString(pw, numberedLines(1, 100)); err != nil {
				t.Fatal(err)
			}
			testutil.WaitFor(t, "the command read the first 100 lines", func() bool { return pipeHolds(t, pw) == 0 })
			if n := completeBatches(t, dir); n != 0 {
				t.Fatalf("%d records stored before the signal; the test needs them held back", n)
			}
			// These may or may not be read before the signal arrives;
			// either way they were written before it.
			if _, err := io.WriteString(pw, numberedLines(101, 150)+"line-151 unfini"); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			if code := exitCode(t, cmd.Wait(), &stderr); code != c.code {
				t.Fatalf("exit %d, want %d\nstderr: %s", code, c.code, stderr.String())
			}
			msg := stderr.String()
			for _, want := range []string{"interrupted by " + c.name, "stored lines 1-150 (150 records)", "line 151, 15 bytes without its newline yet, was not stored", "produced 150 records"} {
				if !strings.Contains(msg, want) {
					t.Errorf("stderr lacks %q:\n%s", want, msg)
				}
			}
			checkLines(t, dir, 150)
		})
	}
}

// TestProduceTooLongLineStoresTheLinesBefore: a line too long for a batch
// at line 150 (with --batch 100, so lines 101-149 are pending) stores lines
// 1-149 first, then fails naming line 150 and the 149 stored; nothing after
// it is stored. Both from an in-memory reader and through a pipe.
func TestProduceTooLongLineStoresTheLinesBefore(t *testing.T) {
	in := numberedLines(1, 149) + strings.Repeat("x", 2000) + "\n" + numberedLines(151, 200)
	args := func(dir string) []string {
		return []string{"produce", dir, "--max-batch-bytes", "1000", "--segment-bytes", "1048576"}
	}
	check := func(t *testing.T, dir string, code int, stderr string) {
		t.Helper()
		if code != 1 || !strings.Contains(stderr, "line 150: longer than") || !strings.Contains(stderr, "stored lines 1-149 (149 records), nothing from line 150 on") {
			t.Errorf("exit %d, stderr %q; want an error naming line 150 and the 149 lines stored", code, stderr)
		}
		checkLines(t, dir, 149)
	}
	t.Run("reader", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "log")
		r := invoke(t, in, args(dir)...)
		check(t, dir, r.code, r.stderr)
	})
	t.Run("pipe", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "log")
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer pr.Close()
		go func() {
			// The command stops reading at line 150; the write fails then.
			io.WriteString(pw, in)
			pw.Close()
		}()
		var stderr lockedBuffer
		code := runIO(args(dir), pr, io.Discard, &stderr)
		check(t, dir, code, stderr.String())
	})
}

// TestProduceLingerStoresFromSlowStdin: a line from a stdin that stays
// open is stored after --linger, before stdin closes.
func TestProduceLingerStoresFromSlowStdin(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	var stderr lockedBuffer
	done := make(chan int)
	go func() { done <- runIO([]string{"produce", dir}, pr, io.Discard, &stderr) }()
	if _, err := io.WriteString(pw, "line-1\n"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "line 1 was stored with stdin still open", func() bool { return completeBatches(t, dir) == 1 })
	if _, err := io.WriteString(pw, "line-2\n"); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	checkLines(t, dir, 2)
}

// TestProduceBatchesSignal: SIGINT while --batches - reads a pipe stores
// every whole batch read and says where the input stopped being stored;
// the half batch read is not stored.
func TestProduceBatchesSignal(t *testing.T) {
	batches := splitBatches(t, readVFS(t, filepath.Join(corpusDir, "none.batches")))
	if len(batches) < 4 {
		t.Fatalf("corpus has %d batches", len(batches))
	}
	var whole []byte
	for _, b := range batches[:3] {
		whole = append(whole, b...)
	}
	dir := filepath.Join(t.TempDir(), "log")
	var stderr lockedBuffer
	cmd, pw := startWithStdinPipe(t, &stderr, "produce", dir, "--batches", "-")
	if _, err := pw.Write(append(append([]byte(nil), whole...), batches[3][:len(batches[3])/2]...)); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the command read the input", func() bool { return pipeHolds(t, pw) == 0 })
	records := 0
	for _, b := range batches[:3] {
		records += int(b.NumRecords())
	}
	testutil.WaitFor(t, "three batches stored", func() bool { return completeBatches(t, dir) == records })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd.Wait(), &stderr); code != 130 {
		t.Fatalf("exit %d, want 130\nstderr: %s", code, stderr.String())
	}
	want := fmt.Sprintf("interrupted by SIGINT: stored the 3 batches before byte %d of stdin", len(whole))
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}
	if n := len(storedBatches(t, dir)); n != 3 {
		t.Errorf("%d batches stored, want 3", n)
	}
}
