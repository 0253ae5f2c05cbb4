package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// issueDir produces 2,900 records into a fresh directory, in segments of
// 16 KiB, and returns it with its segment bases.
func issueDir(t *testing.T) (string, []int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	var in strings.Builder
	for i := range 2900 {
		fmt.Fprintf(&in, "value %d\n", i)
	}
	mustInvoke(t, in.String(), "produce", dir, "--segment-bytes", "16384")
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, bases := layout.SegmentFiles(names)
	if len(bases) < 3 {
		t.Fatalf("%d segments, want several", len(bases))
	}
	return dir, bases
}

// listing is dir's file names with their sizes.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		fi, err := vfs.Default.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %d %d", n, fi.Size(), fi.ModTime().UnixNano()))
	}
	return out
}

// unclean makes dir look like a crash left it with recovery point 0.
func unclean(t *testing.T, dir string) {
	t.Helper()
	if err := vfs.Default.Remove(filepath.Join(dir, seglog.CleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	if err := layout.WriteCheckpoint(vfs.Default, filepath.Join(dir, seglog.RecoveryPointFile), []layout.CheckpointEntry{{Topic: "log", Offset: 0}}); err != nil {
		t.Fatal(err)
	}
}

// flip inverts the byte at pos of path.
func flip(t *testing.T, path string, pos int64) {
	t.Helper()
	b := readVFS(t, path)
	b[pos] ^= 0xff
	writeVFS(t, path, b)
}

// TestIssue26ProduceLogStartBeyondEnd is item 3a from the command line:
// `echo x | seglog produce DIR` with a log-start checkpoint beyond the end
// deleted all 2,900 records. Now it fails, naming the checkpoint, and
// changes nothing; consume fails the same way.
func TestIssue26ProduceLogStartBeyondEnd(t *testing.T) {
	dir, _ := issueDir(t)
	if err := layout.WriteCheckpoint(vfs.Default, filepath.Join(dir, seglog.LogStartOffsetFile), []layout.CheckpointEntry{{Topic: "log", Offset: 5000}}); err != nil {
		t.Fatal(err)
	}
	before := listing(t, dir)
	for _, args := range [][]string{{"produce", dir}, {"consume", dir}} {
		r := invoke(t, "x\n", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "starts at offset 5000, but its segments end at offset 2900") ||
			!strings.Contains(r.stderr, seglog.LogStartOffsetFile) {
			t.Fatalf("%s: exit %d\n%s", args[0], r.code, r.stderr)
		}
	}
	if after := listing(t, dir); !slices.Equal(before, after) {
		t.Fatalf("the directory changed:\n%v\n%v", before, after)
	}
}

// TestIssue26ProduceKeepsValidBatches is item 3b from the command line: no
// clean-shutdown marker, recovery point 0, a byte flipped early in the
// first segment. consume refuses (the damage is before the last segment)
// and changes nothing; produce appends after the cut and keeps the rest in
// quarantine files, which fsck lists (exit 4) and dump reads.
func TestIssue26ProduceKeepsValidBatches(t *testing.T) {
	dir, bases := issueDir(t)
	unclean(t, dir)
	first := filepath.Join(dir, layout.FileName(bases[0], layout.LogSuffix))
	flip(t, first, 200)
	before := listing(t, dir)
	r := invoke(t, "", "consume", dir)
	if r.code != 1 || !strings.Contains(r.stderr, first) || !strings.Contains(r.stderr, "quarantine") {
		t.Fatalf("consume: exit %d\n%s", r.code, r.stderr)
	}
	if after := listing(t, dir); !slices.Equal(before, after) {
		t.Fatal("consume changed the directory")
	}
	r = invoke(t, "x\n", "produce", dir)
	if r.code != 0 || strings.Count(r.stderr, "quarantine file") != len(bases) {
		t.Fatalf("produce: exit %d\n%s", r.code, r.stderr)
	}
	r = invoke(t, "", "fsck", dir)
	records := 0
	for _, m := range regexp.MustCompile(`with (\d+) records`).FindAllStringSubmatch(r.stdout, -1) {
		n, _ := strconv.Atoi(m[1])
		records += n
	}
	// All but the damaged batch's 100.
	if r.code != 4 || strings.Count(r.stdout, "warning quarantine") != len(bases) || records != 2800 {
		t.Fatalf("fsck: exit %d, %d records in quarantine\n%s%s", r.code, records, r.stdout, r.stderr)
	}
	q := filepath.Join(dir, layout.QuarantineName(bases[0], 0, 0))
	r = mustInvoke(t, "", "dump", q)
	if !strings.Contains(r.stdout, "position: 0 damaged") || !strings.Contains(r.stdout, "isvalid: true") || !strings.Contains(r.stdout, "Quarantine file") {
		t.Fatalf("dump %s:\n%s", q, r.stdout)
	}
	r = mustInvoke(t, "", "dump", dir)
	if !strings.Contains(r.stdout, "seglog dump "+q) {
		t.Fatalf("dump %s does not list the quarantine files:\n%s", dir, r.stdout)
	}
}

// TestConsumeSaysWhatItDidNotPrint: damage at the end of the last segment
// followed by valid batches is exit 3, named on stderr; a torn tail, and a
// .log of random bytes (issue 26 item 6: nothing printed, exit 0, not a
// word), is a warning on stderr and exit 0.
func TestConsumeSaysWhatItDidNotPrint(t *testing.T) {
	t.Run("valid batches after damage", func(t *testing.T) {
		dir, bases := issueDir(t)
		unclean(t, dir)
		last := filepath.Join(dir, layout.FileName(bases[len(bases)-1], layout.LogSuffix))
		flip(t, last, 200)
		r := invoke(t, "", "consume", dir)
		if r.code != exitUnserved || strings.Count(r.stdout, "\n") != int(bases[len(bases)-1]) ||
			!strings.Contains(r.stderr, last+" bytes 0-") || !strings.Contains(r.stderr, "offsets 2800-2899") {
			t.Fatalf("exit %d, %d lines\n%s", r.code, strings.Count(r.stdout, "\n"), r.stderr)
		}
	})
	t.Run("torn tail", func(t *testing.T) {
		dir, bases := issueDir(t)
		unclean(t, dir)
		last := filepath.Join(dir, layout.FileName(bases[len(bases)-1], layout.LogSuffix))
		b := readVFS(t, last)
		writeVFS(t, last, b[:len(b)-5])
		r := invoke(t, "", "consume", dir)
		if r.code != 0 || !strings.Contains(r.stderr, "warning: "+last) || !strings.Contains(r.stderr, "not printed") {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	})
	t.Run("random bytes", func(t *testing.T) {
		dir := t.TempDir()
		junk := make([]byte, 10_000)
		for i := range junk {
			junk[i] = byte(i*131 + i/7)
		}
		writeVFS(t, filepath.Join(dir, layout.FileName(0, layout.LogSuffix)), junk)
		r := invoke(t, "", "consume", dir)
		if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "bytes 0-10000 (10000 bytes) not printed") {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	})
}
