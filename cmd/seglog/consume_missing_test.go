package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// loseSegment empties (: > file) or deletes (all three files) the segment
// whose .log is path.
func loseSegment(t *testing.T, path, how string) {
	t.Helper()
	switch how {
	case "emptied":
		writeVFS(t, path, nil)
	case "deleted":
		for _, suf := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
			if err := vfs.Default.Remove(strings.TrimSuffix(path, segment.LogSuffix) + suf); err != nil {
				t.Fatal(err)
			}
		}
	default:
		t.Fatalf("unknown way %q", how)
	}
}

// baseOf is the base offset in a segment file's name.
func baseOf(t *testing.T, path string) int64 {
	t.Helper()
	base, _, ok := segment.ParseFileName(filepath.Base(path))
	if !ok {
		t.Fatalf("%s: not a segment file", path)
	}
	return base
}

// wantMissingExit checks that a consume stopped at missing data: status 3
// and the range on stderr.
func wantMissingExit(t *testing.T, what string, r cliResult, from, to int64) {
	t.Helper()
	if r.code != exitMissingData {
		t.Fatalf("%s: exit %d, want %d\nstderr: %s", what, r.code, exitMissingData, r.stderr)
	}
	if want := fmt.Sprintf("seglog: data missing: offsets %d–%d", from, to-1); !strings.HasPrefix(r.stderr, want) {
		t.Fatalf("%s: stderr %q, want it to start %q", what, r.stderr, want)
	}
}

// TestConsumeStopsAtMissingData: a middle segment emptied or deleted in a
// log that was never compacted. consume prints every record before the gap
// (text, --json, --raw), then "data missing: offsets X–Y" on stderr, and
// exits 3; asked for an offset in the gap it prints nothing.
func TestConsumeStopsAtMissingData(t *testing.T) {
	for _, how := range []string{"emptied", "deleted"} {
		t.Run(how, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			mustInvoke(t, numberedLines(0, 299), "produce", dir, "--batch", "7", "--segment-bytes", "1024", "--max-index-bytes", "4096")
			logs := storedLogs(t, dir)
			if len(logs) < 5 {
				t.Fatalf("%d segments, want 5 or more", len(logs))
			}
			var before []byte // the batches a fetch serves before the gap
			from, to := baseOf(t, logs[2]), baseOf(t, logs[3])
			for _, b := range storedBatches(t, dir) {
				if b.LastOffset() < from {
					before = append(before, b...)
				}
			}
			loseSegment(t, logs[2], how)

			r := invoke(t, "", "consume", dir)
			wantMissingExit(t, "consume", r, from, to)
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if int64(len(lines)) != from {
				t.Fatalf("consume printed %d records, want the %d before the gap", len(lines), from)
			}
			for i, line := range lines {
				if off, _, _ := strings.Cut(line, "\t"); off != strconv.Itoa(i) {
					t.Fatalf("line %d: %q", i, line)
				}
			}

			r = invoke(t, "", "consume", dir, "--json")
			wantMissingExit(t, "consume --json", r, from, to)
			if n := strings.Count(r.stdout, "\n"); int64(n) != from {
				t.Fatalf("consume --json printed %d records, want %d", n, from)
			}

			r = invoke(t, "", "consume", dir, "--raw")
			wantMissingExit(t, "consume --raw", r, from, to)
			if !bytes.Equal([]byte(r.stdout), before) {
				t.Fatalf("consume --raw wrote %d bytes, want the %d of the batches before the gap", len(r.stdout), len(before))
			}

			r = invoke(t, "", "consume", dir, "--from", strconv.FormatInt(from+1, 10))
			wantMissingExit(t, "consume --from in the gap", r, from, to)
			if r.stdout != "" {
				t.Fatalf("consume --from in the gap printed %q", r.stdout)
			}
		})
	}
}

// TestConsumeTopicStopsAtMissingData: the same through a store, consume
// --topic: the records of the partition before the gap, the error naming
// the partition's directory, status 3.
func TestConsumeTopicStopsAtMissingData(t *testing.T) {
	dir := t.TempDir()
	mustInvoke(t, "", "topics", "create", dir, "t", "--partitions", "1",
		"--config", "segment.bytes=2048", "--config", "max.message.bytes=1000")
	var in strings.Builder
	for i := range 300 {
		fmt.Fprintf(&in, "k%d\tvalue-%d\n", i, i)
	}
	mustInvoke(t, in.String(), "produce", dir, "--topic", "t", "--batch", "5")
	part := filepath.Join(dir, "t-0")
	logs := storedLogs(t, part)
	if len(logs) < 5 {
		t.Fatalf("%d segments, want 5 or more", len(logs))
	}
	from, to := baseOf(t, logs[2]), baseOf(t, logs[3])
	loseSegment(t, logs[2], "deleted")

	r := invoke(t, "", "consume", dir, "--topic", "t", "--from-beginning")
	wantMissingExit(t, "consume --topic", r, from, to)
	if !strings.Contains(r.stderr, part) {
		t.Fatalf("stderr %q does not name %s", r.stderr, part)
	}
	var want strings.Builder
	for i := range from {
		fmt.Fprintf(&want, "k%d\tvalue-%d\n", i, i)
	}
	if r.stdout != want.String() {
		t.Fatalf("consume --topic printed %d lines, want the %d before the gap", strings.Count(r.stdout, "\n"), from)
	}
}

// TestConsumeHelpNamesMissingDataStatus: --help says what status 3 means.
func TestConsumeHelpNamesMissingDataStatus(t *testing.T) {
	help := strings.Join(strings.Fields(mustInvoke(t, "", "consume", "--help").stdout), " ")
	for _, want := range []string{`"data missing: offsets X–Y"`, "exits with status 3"} {
		if !strings.Contains(help, want) {
			t.Errorf("consume --help does not say %s", want)
		}
	}
}
