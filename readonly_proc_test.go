package seglog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// roChildEnv makes the test binary a child process of the read-only tests:
// "reader:N:DIR" reads the log in DIR read-only and checks its N records;
// "writer:N:DIR" creates a log in DIR and appends N records across many
// segments. The child prints its result on stdout and exits.
const roChildEnv = "SEGLOG_READONLY_CHILD"

// followChildSegmentBytes makes the writer child roll every few dozen
// batches.
const followChildSegmentBytes = 16 << 10

func roChild(spec string) int {
	parts := strings.SplitN(spec, ":", 3)
	if len(parts) != 3 {
		fmt.Println("bad spec", spec)
		return 2
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		fmt.Println("bad count", parts[1])
		return 2
	}
	dir := parts[2]
	switch parts[0] {
	case "reader":
		err = roChildRead(dir, n)
	case "writer":
		err = roChildWrite(dir, n)
	default:
		err = fmt.Errorf("unknown role %q", parts[0])
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

// roChildRead proves that this process cannot write dir (a writable Open
// fails) and that a read-only Open reads all n records.
func roChildRead(dir string, n int) error {
	if w, err := Open(dir, Options{Logger: discardLogger()}); err == nil {
		w.Close()
		return errors.New("a writable Open succeeded: the directory is writable by this user")
	}
	l, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer l.Close()
	want := int64(0)
	for r, err := range l.Records(0) {
		if err != nil {
			return err
		}
		if r.Offset != want || !bytes.Equal(r.Value, recordsAt(want, 1)[0].Value) {
			return fmt.Errorf("offset %d: wrong record", want)
		}
		want++
	}
	fmt.Printf("read %d uid %d\n", want, os.Geteuid())
	if want != int64(n) {
		return fmt.Errorf("read %d records, want %d", want, n)
	}
	return nil
}

// roChildWrite appends n records to a new log in dir in batches of one to
// five, pausing now and then so that a follower in the parent sees the log
// grow batch by batch and roll many times.
func roChildWrite(dir string, n int) error {
	w, err := Open(dir, Options{LogConfig: LogConfig{SegmentBytes: followChildSegmentBytes, IndexIntervalBytes: 512, MaxIndexBytes: 64 << 10}, Logger: discardLogger()})
	if err != nil {
		return err
	}
	fmt.Println("open")
	for batches := 0; w.EndOffset() < int64(n); batches++ {
		off := w.EndOffset()
		if _, err := w.Append(recordsAt(off, int(min(int64(n)-off, 1+off%5)))...); err != nil {
			return err
		}
		if batches%8 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	fmt.Println("done", w.EndOffset())
	return nil
}

// chmod sets the permission bits of path.
func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil { //vfs:allow the test sets up permissions, which vfs does not model
		t.Fatal(err)
	}
}

// TestReadOnlyOtherUser reads a log in a directory of mode 0555 with files
// of mode 0444, owned by another user, read-only: every record, with an
// index missing and a torn tail (so indexes are rebuilt in memory), and
// nothing changed. Under root (as in CI) the reader is a child process
// running as nobody (65534), for which root's files are someone else's;
// otherwise the files are the test user's own, and the mode bits alone
// deny writing. Either way the reader first checks that a writable Open
// fails, so the test cannot pass on a directory it could write.
func TestReadOnlyOtherUser(t *testing.T) {
	const n = 300
	dir := t.TempDir()
	t.Cleanup(func() { chmod(t, dir, 0o755) }) // so that TempDir can remove it
	w := writeLog(t, vfs.Default, dir, n, 5)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bases := segmentBases(t, vfs.Default, dir)
	if err := vfs.Default.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	if err := vfs.Default.Remove(filepath.Join(dir, segment.FileName(bases[0], segment.IndexSuffix))); err != nil {
		t.Fatal(err)
	}
	appendBytes(t, vfs.Default, filepath.Join(dir, segment.FileName(bases[len(bases)-1], segment.LogSuffix)), producerBatch(t, 0, recordsAt(n, 2))[:70])
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		chmod(t, filepath.Join(dir, name), 0o444)
	}
	chmod(t, dir, 0o555)
	before := snapshotDir(t, vfs.Default, dir)
	awaitMtimeTick(t, vfs.Default, before)

	spec := fmt.Sprintf("reader:%d:%s", n, dir)
	if os.Geteuid() != 0 {
		if code := roChild(spec); code != 0 {
			t.Fatalf("reading as the owner of a read-only directory failed (%d)", code)
		}
	} else {
		// nobody must reach the directory and run a copy of this binary:
		// the temporary directories are private (0700) by default.
		chmod(t, filepath.Dir(dir), 0o755)
		binDir := t.TempDir()
		chmod(t, binDir, 0o755)
		chmod(t, filepath.Dir(binDir), 0o755)
		bin := filepath.Join(binDir, "seglog.test")
		self, err := vfs.ReadFileLimit(vfs.Default, os.Args[0], math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		vfstest.WriteFile(t, vfs.Default, bin, self)
		chmod(t, bin, 0o755)
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), roChildEnv+"="+spec)
		cmd.Dir = binDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("reader as nobody: %v\n%s", err, out)
		}
		if want := fmt.Sprintf("read %d uid 65534\n", n); string(out) != want {
			t.Fatalf("reader as nobody printed %q, want %q", out, want)
		}
	}
	sameDirState(t, before, snapshotDir(t, vfs.Default, dir))
}

// TestReadOnlyFollowsAnotherProcess follows, read-only, a log that another
// process (a child running this binary) creates and appends to across
// dozens of segment rolls: every record arrives, in order and byte for
// byte, and the follower stops when its context is cancelled. The view's
// batches, read through Read, then equal the writer's .log files exactly.
func TestReadOnlyFollowsAnotherProcess(t *testing.T) {
	const n = 2000
	dir := filepath.Join(t.TempDir(), "log")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=writer:%d:%s", roChildEnv, n, dir))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "open" {
		t.Fatalf("writer child: %q %v", lines.Text(), lines.Err())
	}
	l, err := Open(dir, roOptions(vfs.Default))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	followN(t, l, 0, n, nil)

	var rest bytes.Buffer
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil || rest.String() != fmt.Sprintf("done %d\n", n) {
		t.Fatalf("writer child: %v, %q", err, rest.String())
	}
	if segs := l.NumSegments(); segs < 10 {
		t.Fatalf("the follower saw %d segments; the test wants many rolls", segs)
	}

	// Byte for byte: what Read serves from the view, file by file, is the
	// whole of each .log the writer left.
	got := map[string][]byte{}
	for off := l.StartOffset(); off < l.EndOffset(); {
		sl, err := l.Read(off, 1<<20, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, sl.Len())
		if _, err := sl.ReadAt(buf, 0); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(sl.File())
		if int64(len(got[name])) != sl.Position() {
			t.Fatalf("read of %d starts at byte %d of %s, want %d", off, sl.Position(), name, len(got[name]))
		}
		got[name] = append(got[name], buf...)
		off = sl.LastOffset() + 1
		sl.Close()
	}
	bases := segmentBases(t, vfs.Default, dir)
	if len(got) != len(bases) {
		t.Fatalf("read %d segments, the directory has %d", len(got), len(bases))
	}
	for _, b := range bases {
		name := segment.FileName(b, segment.LogSuffix)
		if !bytes.Equal(got[name], vfstest.ReadFile(t, vfs.Default, filepath.Join(dir, name))) {
			t.Fatalf("%s: the bytes read differ from the file", name)
		}
	}
}
