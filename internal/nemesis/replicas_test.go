package nemesis

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// replica writes a partition directory t-0 under a new temporary
// directory: one batch per entry of values (each a comma-separated list
// of record values), rolling segments every segBytes bytes, closed
// cleanly. Two replicas given the same values hold the same batches byte
// for byte, whatever their segments.
func replica(t *testing.T, segBytes int64, values ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, err := seglog.Open(dir, seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: segBytes}})
	if err != nil {
		t.Fatal(err)
	}
	for i, batch := range values {
		var recs []record.Record
		for _, v := range strings.Split(batch, ",") {
			recs = append(recs, record.Record{Timestamp: 1_700_000_000_000 + int64(i), Value: []byte(v)})
		}
		if _, err := l.Append(recs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompareReplicas compares hand-made replicas: the same batches in
// different segments agree; a batch that differs, a replica that stops
// short, one with a batch the first lacks, and damage below the offset
// are each reported at the offset where the replicas part.
func TestCompareReplicas(t *testing.T) {
	batches := []string{"a,b", "c", "d,e,f", "g", "h,i"} // offsets 0-1, 2, 3-5, 6, 7-8
	ref := replica(t, 0, batches...)
	rolled := replica(t, 100, batches...) // a segment of a batch or two
	longer := replica(t, 0, append(batches, "j")...)
	differs := replica(t, 0, "a,b", "c", "d,E,f", "g", "h,i")
	short := replica(t, 0, batches[:3]...)

	damaged := replica(t, 100, batches...)
	names, err := vfs.Default.List(damaged)
	if err != nil {
		t.Fatal(err)
	}
	// Flip a byte inside the second segment's first batch (a record, under
	// the CRC): the replica is damaged from that batch on.
	var logs []string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			logs = append(logs, n)
		}
	}
	if len(logs) < 3 {
		t.Fatalf("the rolled replica has %d segments, want 3 or more", len(logs))
	}
	f, err := vfs.Default.OpenReadWrite(filepath.Join(damaged, logs[1]))
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], 65); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b[:], 65); err != nil {
		t.Fatal(err)
	}
	f.Close()

	for _, c := range []struct {
		name string
		dirs []string
		upTo int64
		want []string // substrings, one per violation, in order
	}{
		{"identical", []string{ref, ref}, 9, nil},
		{"different segments", []string{ref, rolled, longer}, 9, nil},
		{"longer beyond upTo", []string{ref, longer}, 9, nil},
		{"upTo inside the log", []string{ref, short}, 3, nil},
		{"one replica", []string{ref}, 9, nil},
		{"a batch differs", []string{ref, rolled, differs}, 9,
			[]string{fmt.Sprintf("t-0 offset 3: replica %s's batch (offsets 3-5", differs)}},
		{"a replica short", []string{ref, short}, 9,
			[]string{fmt.Sprintf("t-0 offset 6: replica %s ends at offset 6; replica %s has a batch at offset 6", short, ref)}},
		{"the first replica short", []string{short, ref}, 9, []string{
			fmt.Sprintf("t-0 offset 6: replica %s has a batch at offset 6; replica %s ends at offset 6", ref, short),
			fmt.Sprintf("t-0 offset 6: replica %s ends at offset 6, short of 9", short),
		}},
		{"every replica short of upTo", []string{ref, rolled}, 10, []string{
			fmt.Sprintf("t-0 offset 9: replica %s ends at offset 9, short of 10", ref),
			fmt.Sprintf("t-0 offset 9: replica %s ends at offset 9, short of 10", rolled),
		}},
		{"a replica damaged", []string{ref, damaged}, 9,
			[]string{fmt.Sprintf("replicas differ: \"\" at t-0 offset %d: replica %s: ", firstOffsetOf(t, logs[1]), damaged)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs, err := CompareReplicas(vfs.Default, c.dirs, c.upTo)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range vs {
				got = append(got, v.String())
			}
			ok := len(got) == len(c.want)
			for i := 0; ok && i < len(got); i++ {
				ok = strings.Contains(got[i], c.want[i]) && strings.HasPrefix(got[i], string(RuleReplicasDiffer))
			}
			if !ok {
				t.Fatalf("violations:\n%s\nwant, in order, ones containing:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}

	// fsck: the clean replicas are clean; the damaged one is not, and
	// the violation names its directory and the damaged file.
	vs, err := FsckClean(vfs.Default, []string{ref, rolled, differs})
	if err != nil || len(vs) != 0 {
		t.Fatalf("fsck of clean replicas: %v, %v", vs, err)
	}
	vs, err = FsckClean(vfs.Default, []string{ref, damaged})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 || vs[0].Rule != RuleFsck || !strings.Contains(vs[0].Detail, damaged+": "+logs[1]) {
		t.Fatalf("fsck of a damaged replica: %v; want a violation naming %s", vs, filepath.Join(damaged, logs[1]))
	}
}

// firstOffsetOf is the base offset a segment's file name gives.
func firstOffsetOf(t *testing.T, name string) int64 {
	var base int64
	if _, err := fmt.Sscanf(name, "%020d.log", &base); err != nil {
		t.Fatal(err)
	}
	return base
}

// TestPartitionDirs lists a store's partitions of one topic in partition
// order, leaving out other topics and deleted partitions.
func TestPartitionDirs(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"t-10", "t-2", "t-0", "tt-1", "t-3.0123456789abcdef-delete"} {
		if err := vfs.Default.MkdirAll(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := PartitionDirs(vfs.Default, dir, "t")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "t-0"), filepath.Join(dir, "t-2"), filepath.Join(dir, "t-10")}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("PartitionDirs = %v, want %v", got, want)
	}
	if _, err := PartitionDirs(vfs.Default, dir, "none"); err == nil {
		t.Fatal("no error for a topic with no partitions")
	}
}
