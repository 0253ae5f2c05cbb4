package replica

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// commandValues lists the record values of the command entries among ls,
// in order: what a Kafka consumer of the partition must read.
func commandValues(t *testing.T, ls []*raft.Log) []string {
	var out []string
	for _, l := range ls {
		if l.Type != raft.LogCommand {
			continue
		}
		for r, err := range record.Batch(l.Data).Records() {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(r.Value))
		}
	}
	return out
}

// TestConsumerView: a Kafka reader of the partition (Log.Records, which
// skips control batches as every client does) reads exactly the commands'
// records, at offsets that count every batch, raft's own included; and
// the high watermark of an index is the end of its batch.
func TestConsumerView(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/data/t-0")
	defer s.Close()
	ls := entries(t, 1, 40, 1)
	if err := s.StoreLogs(ls); err != nil {
		t.Fatal(err)
	}
	var got []string
	var offs []int64
	for r, err := range s.Log().Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(r.Value))
		offs = append(offs, r.Offset)
	}
	if want := commandValues(t, ls); !slices.Equal(got, want) {
		t.Fatalf("consumer read %q, want %q", got, want)
	}
	// Offsets: entry i's batch starts where entry i-1's ends, so they
	// can be computed from the entries alone, as every replica does.
	var next int64
	k := 0
	for _, l := range ls {
		hw, err := s.HighWatermark(l.Index)
		if err != nil {
			t.Fatal(err)
		}
		n := int64(1)
		if l.Type == raft.LogCommand {
			n = int64(record.Batch(l.Data).NumRecords())
			for i := range n {
				if offs[k] != next+i {
					t.Fatalf("entry %d record %d at offset %d, want %d", l.Index, i, offs[k], next+i)
				}
				k++
			}
		}
		next += n
		if hw != next {
			t.Fatalf("HighWatermark(%d) = %d, want %d", l.Index, hw, next)
		}
	}
	if hw, err := s.HighWatermark(0); err != nil || hw != 0 {
		t.Fatalf("HighWatermark(0) on a log from 1: %d, %v; want 0", hw, err)
	}
	if _, err := s.HighWatermark(41); err != raft.ErrLogNotFound { //nolint:errorlint // the sentinel itself
		t.Fatalf("HighWatermark past the end: %v", err)
	}
	// After a prefix delete, the index below the first still answers.
	if err := s.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	want, _ := s.HighWatermark(11)
	var e raft.Log
	if err := s.GetLog(11, &e); err != nil {
		t.Fatal(err)
	}
	if hw, err := s.HighWatermark(10); err != nil || hw != record.Batch(e.Data).BaseOffset() || hw >= want {
		t.Fatalf("HighWatermark(10) after deleting [1, 10]: %d, %v", hw, err)
	}
}

// TestReplicasIdentical: two stores fed the same entries, deletes
// included, hold byte-identical .log files; the checkpoint is a stray to
// fsck, which finds the partition clean.
func TestReplicasIdentical(t *testing.T) {
	fs := vfs.NewMem()
	dirs := []string{"/a/t-0", "/b/t-0"}
	for _, dir := range dirs {
		s := openT(t, fs, dir)
		for _, op := range []func() error{
			func() error { return s.StoreLogs(entries(t, 1, 30, 1)) },
			func() error { return s.StoreLogs(entries(t, 31, 50, 2)) },
			func() error { return s.DeleteRange(41, 50) },
			func() error { return s.StoreLogs(entries(t, 41, 60, 3)) },
			func() error { return s.DeleteRange(1, 20) },
			func() error { return s.StoreLogs(entries(t, 61, 70, 3)) },
		} {
			if err := op(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	read := func(dir string) map[string][]byte {
		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, n := range names {
			if strings.HasSuffix(n, ".log") || n == layout.RaftIndexFile {
				data, err := vfs.ReadFileLimit(fs, filepath.Join(dir, n), 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				out[n] = data
			}
		}
		return out
	}
	a, b := read(dirs[0]), read(dirs[1])
	if len(a) < 4 || len(a) != len(b) {
		t.Fatalf("%d files and %d files", len(a), len(b))
	}
	for n, data := range a {
		if !bytes.Equal(data, b[n]) {
			t.Fatalf("%s differs between the replicas", n)
		}
	}
	for _, dir := range dirs {
		rep, err := fsck.Check(fs, dir, fsck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Clean() {
			t.Fatalf("fsck %s: %+v", dir, rep.Problems)
		}
		if !slices.Contains(rep.Stats.Strays, layout.RaftIndexFile) {
			t.Fatalf("fsck %s: strays %v, want the raft-index checkpoint among them", dir, rep.Stats.Strays)
		}
	}
}

// TestRetentionBelow: segments that retention removed from below (here
// DeleteBefore on the partition opened as a plain log) leave a raft log
// that starts at the new log start's entry, numbered by its segment's
// anchor, with every later entry as it was.
func TestRetentionBelow(t *testing.T) {
	fs := vfs.NewMem()
	const dir = "/data/t-0"
	s := openT(t, fs, dir)
	ls := entries(t, 1, 60, 1)
	if err := s.StoreLogs(ls); err != nil {
		t.Fatal(err)
	}
	segs := s.Log().Segments()
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	cut := segs[2].BaseOffset
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := seglog.Open(dir, seglog.Options{FS: fs, Logger: quiet, LogConfig: seglog.LogConfig{MaxIndexBytes: 4 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteBefore(cut); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, fs, dir)
	defer s.Close()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first <= 1 || last != 60 {
		t.Fatalf("[%d, %d] after retention below offset %d", first, last, cut)
	}
	if hw, err := s.HighWatermark(first - 1); err != nil || hw != cut {
		t.Fatalf("the first entry starts at %d (%v), the log at %d", hw, err, cut)
	}
	oracle := raft.NewInmemStore()
	if err := oracle.StoreLogs(ls[first-1:]); err != nil {
		t.Fatal(err)
	}
	compareStores(t, "after retention", s, oracle)
}
