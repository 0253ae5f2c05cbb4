package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// cleanFixture writes a log of three sealed segments of 10 records each,
// stamped 30, 20 and 10 days ago, and an active segment of 10 records
// stamped a minute ago; it returns the directory.
func cleanFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bookings-0")
	l, err := seglog.Open(dir, seglog.Options{LogConfig: seglog.LogConfig{MaxIndexBytes: 1 << 12}})
	if err != nil {
		t.Fatal(err)
	}
	for _, days := range []int{30, 20, 10, 0} {
		recs := make([]record.Record, 10)
		ts := time.Now().Add(-time.Duration(days)*24*time.Hour - time.Minute).UnixMilli()
		for i := range recs {
			recs[i] = record.Record{Value: []byte(fmt.Sprintf("booking %d-%d", days, i)), Timestamp: ts}
		}
		if _, err := l.Append(recs...); err != nil {
			t.Fatal(err)
		}
		if days > 0 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// logState reopens dir and reports its start and end offsets and segments.
func logState(t *testing.T, dir string) (start, end int64, segments int) {
	t.Helper()
	l, err := seglog.Open(dir, seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.StartOffset(), l.EndOffset(), l.NumSegments()
}

func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, segment.DeletedSuffix) {
			out = append(out, n)
		}
	}
	return out
}

func TestCleanByTime(t *testing.T) {
	dir := cleanFixture(t)
	r := mustInvoke(t, "", "clean", dir, "--retention-ms", fmt.Sprint((15 * 24 * time.Hour).Milliseconds()))
	if strings.Contains(r.stderr, "cleaner: deleted segments") {
		t.Errorf("clean repeated its report on stderr: %q", r.stderr)
	}
	if !strings.HasPrefix(r.stdout, dir+": deleted 2 segments, 20 records, ") || !strings.HasSuffix(r.stdout, "bytes; start offset 20 (was 0)\n") {
		t.Fatalf("summary %q", r.stdout)
	}
	if start, end, n := logState(t, dir); start != 20 || end != 40 || n != 2 {
		t.Fatalf("after clean: start %d end %d, %d segments", start, end, n)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Fatalf(".deleted files left: %v", l)
	}
	// The records kept read back from the new start.
	out := mustInvoke(t, "", "consume", dir).stdout
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 20 || !strings.Contains(lines[0], "booking 10-0") {
		t.Fatalf("consume after clean: %d lines, first %q", len(lines), lines[0])
	}
	// Again: nothing left to delete.
	r = mustInvoke(t, "", "clean", dir, "--retention-ms", fmt.Sprint((15 * 24 * time.Hour).Milliseconds()))
	if !strings.Contains(r.stdout, "deleted 0 segments, 0 records, 0 bytes; start offset 20 (was 20)") {
		t.Fatalf("second clean: %q", r.stdout)
	}
}

// TestCleanRetentionMsLongMax: Kafka takes any long as retention.ms, and
// Long.MAX_VALUE is a common spelling of forever; past time.Duration's
// range (292 years) nothing expires, as with -1, where it was refused.
func TestCleanRetentionMsLongMax(t *testing.T) {
	dir := cleanFixture(t)
	for _, ms := range []string{"9223372036854775807", "9223372036855"} {
		r := mustInvoke(t, "", "clean", dir, "--retention-ms", ms)
		if !strings.Contains(r.stdout, "deleted 0 segments, 0 records, 0 bytes; start offset 0 (was 0)") {
			t.Fatalf("--retention-ms %s: %q", ms, r.stdout)
		}
	}
	if start, end, n := logState(t, dir); start != 0 || end != 40 || n != 4 {
		t.Fatalf("after clean: start %d end %d, %d segments", start, end, n)
	}
}

func TestCleanActiveSegmentAndSize(t *testing.T) {
	dir := cleanFixture(t)
	// Everything is older than 1 s: the active segment is rolled and
	// deleted too, and the log stays appendable.
	r := mustInvoke(t, "", "clean", dir, "--retention-ms", "1000")
	if !strings.Contains(r.stdout, "deleted 4 segments, 40 records") {
		t.Fatalf("summary %q", r.stdout)
	}
	if start, end, _ := logState(t, dir); start != 40 || end != 40 {
		t.Fatalf("start %d end %d, want 40 and 40", start, end)
	}
	mustInvoke(t, "more\n", "produce", dir)
	if start, end, _ := logState(t, dir); start != 40 || end != 41 {
		t.Fatalf("after produce: start %d end %d", start, end)
	}

	dir = cleanFixture(t)
	r = mustInvoke(t, "", "clean", dir, "--retention-bytes", "1")
	// Size retention never deletes the last segment's worth.
	if !strings.Contains(r.stdout, "deleted 3 segments, 30 records") {
		t.Fatalf("size summary %q", r.stdout)
	}
}

func TestCleanDeleteRecords(t *testing.T) {
	dir := cleanFixture(t)
	r := mustInvoke(t, "", "clean", dir, "--delete-records-before", "15")
	if !strings.Contains(r.stdout, "deleted 1 segments, 15 records") || !strings.HasSuffix(r.stdout, "start offset 15 (was 0)\n") {
		t.Fatalf("summary %q", r.stdout)
	}
	if start, _, n := logState(t, dir); start != 15 || n != 3 {
		t.Fatalf("start %d, %d segments", start, n)
	}
	before := dirSnapshot(t, dir)
	r = invoke(t, "", "clean", dir, "--delete-records-before", "41")
	if r.code != 1 || !strings.Contains(r.stderr, "past the log end 40") {
		t.Fatalf("past the end: exit %d, %q", r.code, r.stderr)
	}
	// Refused before the log is opened for writing: not a byte, time or
	// entry changed (a writable open rewrites checkpoints and the marker).
	vfstest.Unchanged(t, "a refused clean", before, dirSnapshot(t, dir))
	if start, _, _ := logState(t, dir); start != 15 {
		t.Fatalf("a refused clean moved the start to %d", start)
	}
}

func TestCleanRefusesBadInput(t *testing.T) {
	dir := cleanFixture(t)
	empty := t.TempDir()
	snap := dirSnapshot(t, dir)
	// Usage errors exit 2, refused directories 1.
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"clean", dir}, 2, "nothing to do"},
		{[]string{"clean", dir, "--retention-ms", "-2"}, 2, "invalid --retention-ms -2"},
		{[]string{"clean", dir, "--retention-bytes", "-7"}, 2, "invalid --retention-bytes -7"},
		{[]string{"clean", dir, "--delete-records-before", "-1"}, 2, "invalid --delete-records-before -1"},
		{[]string{"clean", filepath.Join(dir, "missing"), "--retention-ms", "1"}, 1, "no such file or directory"},
		{[]string{"clean", empty, "--retention-ms", "1"}, 1, "not a log directory: " + empty + " holds no .log segment files"},
		// The directory holding the log's, as a Kafka log.dir holds its
		// partitions: named, as consume names them, with what to do.
		{[]string{"clean", filepath.Dir(dir), "--retention-ms", "1"}, 1, "is not a log directory: it holds directories (bookings-0); if it is a Kafka log.dir, open one partition directory inside it"},
		{[]string{"clean", filepath.Join(dir, segment.FileName(0, segment.LogSuffix)), "--retention-ms", "1"}, 1, "not a directory"},
		{[]string{"clean"}, 2, "accepts 1 arg"},
	}
	for _, c := range cases {
		r := invoke(t, "", c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("seglog %s: exit %d, stderr %q; want %d and %q", strings.Join(c.args, " "), r.code, r.stderr, c.code, c.want)
		}
	}
	vfstest.Unchanged(t, "refused cleans", snap, dirSnapshot(t, dir))
	if names, _ := vfs.Default.List(empty); len(names) != 0 {
		t.Fatalf("clean of an empty directory made %v", names)
	}
	if exists(filepath.Join(dir, "missing")) {
		t.Fatal("clean of a missing directory created it")
	}
}

// TestCleanRemovesSegmentsLeftBelowTheStart: a clean interrupted (Ctrl-C,
// a crash) after it checkpointed the new start and before it removed the
// segments below leaves them on disk; the next clean removes them, whatever
// rule it is given, and moves nothing.
func TestCleanRemovesSegmentsLeftBelowTheStart(t *testing.T) {
	dir := cleanFixture(t)
	// The state an interrupted clean leaves: the checkpoint of a clean
	// that moved the start to 15 (the fixtures share their directory
	// name, so the checkpoint's partition line matches), every segment
	// still there.
	moved := cleanFixture(t)
	mustInvoke(t, "", "clean", moved, "--delete-records-before", "15")
	writeVFS(t, filepath.Join(dir, seglog.LogStartOffsetFile), readVFS(t, filepath.Join(moved, seglog.LogStartOffsetFile)))
	if start, _, n := logState(t, dir); start != 15 || n != 4 {
		t.Fatalf("fixture: start %d, %d segments; want 15 and 4", start, n)
	}
	r := mustInvoke(t, "", "clean", dir, "--retention-ms", "-1")
	if !strings.Contains(r.stdout, "deleted 1 segments, 0 records") || !strings.HasSuffix(r.stdout, "start offset 15 (was 15)\n") {
		t.Fatalf("summary %q", r.stdout)
	}
	if exists(filepath.Join(dir, segment.FileName(0, segment.LogSuffix))) {
		t.Fatal("the segment wholly below the start is still there")
	}
	if start, end, n := logState(t, dir); start != 15 || end != 40 || n != 3 {
		t.Fatalf("after clean: start %d end %d, %d segments", start, end, n)
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Fatalf(".deleted files left: %v", l)
	}
}

// TestCleanDryRun: --dry-run says what the same clean would delete, as the
// real one then does, and changes nothing at all.
func TestCleanDryRun(t *testing.T) {
	dir := cleanFixture(t)
	before := dirSnapshot(t, dir)
	fifteenDays := fmt.Sprint((15 * 24 * time.Hour).Milliseconds())
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--retention-ms", fifteenDays}, []string{
			": would delete 2 segments, 20 records, ", "start offset 20 (now 0); nothing changed (dry run)\n",
			"  segment 0 [0, 10), ", "  segment 10 [10, 20), "}},
		{[]string{"--retention-ms", "1000"}, []string{": would delete 4 segments, 40 records, ", "(the active segment: rolled first)"}},
		{[]string{"--delete-records-before", "15"}, []string{": would delete 1 segments, 15 records, ", "bytes: log-start-offset\n"}},
		{[]string{"--retention-bytes", "1"}, []string{": would delete 3 segments, 30 records, ", "bytes: retention.bytes\n"}},
	} {
		r := mustInvoke(t, "", append([]string{"clean", dir, "--dry-run"}, c.args...)...)
		for _, w := range c.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("clean --dry-run %v: %q lacks %q", c.args, r.stdout, w)
			}
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--delete-records-before", "41"}, 1, "past the log end 40"},
		{[]string{"--compact"}, 2, "--dry-run does not apply with --compact"},
	} {
		if r := invoke(t, "", append([]string{"clean", dir, "--dry-run"}, c.args...)...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("clean --dry-run %v: exit %d, %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
	vfstest.Unchanged(t, "dry runs", before, dirSnapshot(t, dir))
	// The real run does what the dry run said.
	dry := mustInvoke(t, "", "clean", dir, "--dry-run", "--retention-ms", fifteenDays).stdout
	real := mustInvoke(t, "", "clean", dir, "--retention-ms", fifteenDays).stdout
	said := strings.TrimPrefix(strings.SplitN(dry, ";", 2)[0], dir+": would delete ")
	if !strings.HasPrefix(real, dir+": deleted "+said+";") {
		t.Fatalf("dry run said %q, the clean did %q", dry, real)
	}
}

// TestCleanOtherUsersLog: clean of a log the user may not write (as
// another user, or mode bits alone) fails, says why and that --dry-run
// only reads, and changes nothing; --dry-run then works.
func TestCleanOtherUsersLog(t *testing.T) {
	dir := cleanFixture(t)
	readOnlyTree(t, dir)
	before := dirSnapshot(t, dir)
	base := filepath.Dir(dir)
	code, _, stderr := invokeAsOtherUser(t, base, "", "clean", dir, "--retention-ms", "1000")
	if code != 1 || !strings.Contains(stderr, "permission denied") || !strings.Contains(stderr, "--dry-run only reads them") {
		t.Fatalf("clean as another user: exit %d, %q", code, stderr)
	}
	code, stdout, stderr := invokeAsOtherUser(t, base, "", "clean", dir, "--retention-ms", "1000", "--dry-run")
	if code != 0 || !strings.Contains(stdout, ": would delete 4 segments, 40 records, ") {
		t.Fatalf("clean --dry-run as another user: exit %d, %q, %q", code, stdout, stderr)
	}
	vfstest.Unchanged(t, "clean as another user", before, dirSnapshot(t, dir))
}
