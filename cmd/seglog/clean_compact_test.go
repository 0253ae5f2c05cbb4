package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// compactFixture writes a log of prices: three sealed segments updating
// keys a, b and c (b deleted by a tombstone at the end, one record
// without a key), and an active segment with one more update of a.
func compactFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "prices-0")
	l, err := seglog.Open(dir, seglog.Options{LogConfig: seglog.LogConfig{MaxIndexBytes: 1 << 12}})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(k, v string) record.Record {
		r := record.Record{}
		if k != "" {
			r.Key = []byte(k)
		}
		if v != "" {
			r.Value = []byte(v)
		}
		return r
	}
	segs := [][]record.Record{
		{rec("a", "1"), rec("b", "1"), rec("c", "1"), rec("", "orphan")},
		{rec("a", "2"), rec("b", "2"), rec("c", "2")},
		{rec("a", "3"), rec("b", "")},
		{rec("a", "4")},
	}
	for i, s := range segs {
		if _, err := l.Append(s...); err != nil {
			t.Fatal(err)
		}
		if i < len(segs)-1 {
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

// contents reads dir's records as "offset:key=value" ("-" for null).
func contents(t *testing.T, dir string) string {
	t.Helper()
	l, err := seglog.Open(dir, seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []string
	for r, err := range l.Records(l.StartOffset()) {
		if err != nil {
			t.Fatal(err)
		}
		k, v := "-", "-"
		if r.Key != nil {
			k = string(r.Key)
		}
		if r.Value != nil {
			v = string(r.Value)
		}
		out = append(out, fmt.Sprintf("%d:%s=%s", r.Offset, k, v))
	}
	return strings.Join(out, " ")
}

func TestCleanCompact(t *testing.T) {
	dir := compactFixture(t)
	// The first pass: superseded values and the keyless record go, the
	// tombstone stays (its horizon, now + 0 ms, is set by this pass).
	r := mustInvoke(t, "", "clean", dir, "--compact", "--delete-retention-ms", "0")
	if !strings.HasPrefix(r.stdout, dir+": compacted 3 segments into 1; removed 6 records (5 superseded, 0 tombstones, 0 transaction markers, 0 aborted, 1 without a key)") ||
		!strings.HasSuffix(r.stdout, "compacted up to offset 9\n") {
		t.Fatalf("first pass said %q", r.stdout)
	}
	if got, want := contents(t, dir), "6:c=2 7:a=3 8:b=- 9:a=4"; got != want {
		t.Fatalf("after the first pass: %s, want %s", got, want)
	}
	// The second pass: nothing is dirty, but the tombstone's horizon has
	// passed, so its segment is rewritten without it.
	r = mustInvoke(t, "", "clean", dir, "--compact")
	if !strings.Contains(r.stdout, "removed 1 records (0 superseded, 1 tombstones,") {
		t.Fatalf("second pass said %q", r.stdout)
	}
	if got, want := contents(t, dir), "6:c=2 7:a=3 9:a=4"; got != want {
		t.Fatalf("after the second pass: %s, want %s", got, want)
	}
	// Offsets are unchanged: the log still ends at 10.
	if _, end, _ := logState(t, dir); end != 10 {
		t.Fatalf("end %d, want 10", end)
	}
}

func TestCleanCompactMinLag(t *testing.T) {
	dir := compactFixture(t)
	before := contents(t, dir)
	r := mustInvoke(t, "", "clean", dir, "--compact", "--min-compaction-lag-ms", "3600000")
	if !strings.Contains(r.stdout, "compacted 0 segments into 0; removed 0 records") {
		t.Fatalf("said %q", r.stdout)
	}
	if got := contents(t, dir); got != before {
		t.Fatalf("young records compacted: %s, was %s", got, before)
	}
}

func TestCleanCompactWithRetention(t *testing.T) {
	dir := compactFixture(t)
	r := mustInvoke(t, "", "clean", dir, "--compact", "--delete-records-before", "4")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "deleted 1 segments") || !strings.Contains(lines[1], "compacted 2 segments into 1") {
		t.Fatalf("said %q", r.stdout)
	}
	if got, want := contents(t, dir), "6:c=2 7:a=3 8:b=- 9:a=4"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestCleanCompactRefusals(t *testing.T) {
	dir := compactFixture(t)
	before := contents(t, dir)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"clean", dir, "--delete-retention-ms", "5"}, "--delete-retention-ms only applies with --compact"},
		{[]string{"clean", dir, "--compact", "--delete-retention-ms", "-1"}, "invalid --delete-retention-ms -1"},
		{[]string{"clean", dir, "--compact", "--min-compaction-lag-ms", "-3"}, "invalid --min-compaction-lag-ms -3"},
	}
	for _, c := range cases {
		r := invoke(t, "", c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("seglog %s: exit %d, stderr %q; want 2 (usage) and %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
	if got := contents(t, dir); got != before {
		t.Fatalf("refused cleans changed the log: %s", got)
	}
}

// TestCleanStoreCompactNow: clean STORE --compact runs a round on a
// compacted topic its dirty ratio leaves alone, under the topic's config;
// a delete topic named is refused, and so is --delete-records-before.
func TestCleanStoreCompactNow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "c", "--config", "cleanup.policy=compact", "--config", "min.cleanable.dirty.ratio=0.99",
		"--config", "segment.bytes=2000")
	mustInvoke(t, "", "topics", "create", dir, "d")
	var lines strings.Builder
	for i := range 30 {
		fmt.Fprintf(&lines, "k%d\t%s\n", i%3, strings.Repeat("x", 200))
	}
	mustInvoke(t, lines.String(), "produce", dir, "--topic", "c", "--batch", "1")
	// The first round (everything dirty) runs by the ratio; a second
	// run finds nothing dirty.
	mustInvoke(t, "", "clean", dir, "--topic", "c")
	mustInvoke(t, lines.String(), "produce", dir, "--topic", "c", "--batch", "1")
	if out := mustInvoke(t, "", "clean", dir, "--topic", "c").stdout; !strings.Contains(out, "compacted 0 partitions") {
		t.Fatalf("clean under the topic's ratio compacted:\n%s", out)
	}
	out := mustInvoke(t, "", "clean", dir, "--topic", "c", "--compact").stdout
	if !strings.Contains(out, "c-0: compacted ") || strings.Contains(out, "removed 0 records") ||
		!strings.Contains(out, "compacted 1 of 1 partitions now, each by its topic's config, whatever its dirty ratio") {
		t.Fatalf("clean --topic c --compact:\n%s", out)
	}
	if r := invoke(t, "", "clean", dir, "--topic", "d", "--compact"); r.code != 1 || !strings.Contains(r.stderr, "d has cleanup.policy=delete") {
		t.Fatalf("--compact on a delete topic: exit %d, %q", r.code, r.stderr)
	}
	if r := invoke(t, "", "clean", dir, "--compact", "--topic", "c", "--partition", "0", "--delete-records-before", "5"); r.code != 2 ||
		!strings.Contains(r.stderr, "--compact on a store does not take --delete-records-before") {
		t.Fatalf("--compact --delete-records-before on a store: exit %d, %q", r.code, r.stderr)
	}
}
