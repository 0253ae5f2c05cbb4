package replica

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// producerValues lists the record values of the producer entries among
// es, in order: what a Kafka consumer of the partition must read.
func producerValues(t *testing.T, es []*pb.Entry) []string {
	var out []string
	for _, e := range es {
		if !isProducer(e) {
			continue
		}
		for r, err := range record.Batch(e.GetData()).Records() {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(r.Value))
		}
	}
	return out
}

// TestConsumerView: a Kafka reader of the partition (Log.Records, which
// skips control batches as every client does) reads exactly the producer
// entries' records, at offsets that count every batch, raft's own
// included; Offset is an entry's base offset and the high watermark of an
// index is the end of its batch. The bootstrap snapshot leaves the log
// starting at index 2 at offset 0.
func TestConsumerView(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/data/t-0")
	defer closeT(t, s)
	bootT(t, s)
	if first, _ := s.FirstIndex(); first != 2 {
		t.Fatalf("first index %d after the bootstrap snapshot", first)
	}
	es := entries(t, 2, 41, 1)
	if err := s.Append(es); err != nil {
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
	if want := producerValues(t, es); !slices.Equal(got, want) {
		t.Fatalf("consumer read %q, want %q", got, want)
	}
	// Offsets: entry i's batch starts where entry i-1's ends, so they
	// can be computed from the entries alone, as every replica does.
	var next int64
	k := 0
	for _, e := range es {
		if off, err := s.Offset(e.GetIndex()); err != nil || off != next {
			t.Fatalf("Offset(%d) = %d, %v; want %d", e.GetIndex(), off, err, next)
		}
		// A control batch takes one offset, an empty entry none.
		n := int64(1)
		if isEmpty(e) {
			n = 0
		}
		if isProducer(e) {
			n = int64(record.Batch(e.GetData()).NumRecords())
			for i := range n {
				if offs[k] != next+i {
					t.Fatalf("entry %d record %d at offset %d, want %d", e.GetIndex(), i, offs[k], next+i)
				}
				k++
			}
		}
		next += n
		hw, err := s.HighWatermark(e.GetIndex())
		if err != nil || hw != next {
			t.Fatalf("HighWatermark(%d) = %d, %v; want %d", e.GetIndex(), hw, err, next)
		}
	}
	if hw, err := s.HighWatermark(1); err != nil || hw != 0 {
		t.Fatalf("HighWatermark(1), the bootstrap snapshot: %d, %v; want 0", hw, err)
	}
	if hw, err := s.HighWatermark(1000); err != nil || hw != next {
		t.Fatalf("HighWatermark past the end: %d, %v; want the end %d", hw, err, next)
	}
	if _, err := s.Offset(42); !errors.Is(err, raft.ErrUnavailable) {
		t.Fatalf("Offset past the end: %v", err)
	}
}

// TestReplicasIdentical: two stores fed the same entries, truncations and
// snapshots included, hold byte-identical .log files and checkpoints; the
// checkpoints are strays to fsck, which finds the partition clean.
func TestReplicasIdentical(t *testing.T) {
	fs := vfs.NewMem()
	dirs := []string{"/a/t-0", "/b/t-0"}
	for _, dir := range dirs {
		s := openT(t, fs, dir)
		for _, op := range []func() error{
			func() error { return s.ApplySnapshot(bootSnap(1, 2)) },
			func() error { return s.Append(entries(t, 2, 30, 1)) },
			func() error { return s.Append(entries(t, 31, 50, 2)) },
			func() error { return s.Append(entries(t, 41, 60, 3)) },
			func() error { return s.ApplySnapshot(snapAt(20, 1)) },
			func() error { return s.Append(entries(t, 21, 30, 4)) },
			func() error {
				return s.SetHardState(&pb.HardState{Term: new(uint64(4)), Vote: new(uint64(1)), Commit: new(uint64(25))})
			},
		} {
			if err := op(); err != nil {
				t.Fatal(err)
			}
		}
		closeT(t, s)
	}
	read := func(dir string) map[string][]byte {
		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]byte{}
		for _, n := range names {
			if strings.HasSuffix(n, ".log") || n == layout.RaftIndexFile || n == layout.RaftStateFile || n == layout.LeaderEpochFile {
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
	if len(a) < 6 || len(a) != len(b) {
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
		for _, f := range []string{layout.RaftIndexFile, layout.RaftStateFile} {
			if !slices.Contains(rep.Stats.Strays, f) {
				t.Fatalf("fsck %s: strays %v, want %s among them", dir, rep.Stats.Strays, f)
			}
		}
	}
}

// TestRetentionBelow: segments that retention removes from below while
// the Store is open (DeleteBefore, as the store's cleaner) leave a raft
// log that starts at the new log start's entry, numbered by its segment's
// anchor, with Term(FirstIndex-1) still known from that anchor and every
// later entry as it was; the same after a reopen.
func TestRetentionBelow(t *testing.T) {
	fs := vfs.NewMem()
	const dir = "/data/t-0"
	s := openT(t, fs, dir)
	defer func() { closeT(t, s) }()
	bootT(t, s)
	es := append(entries(t, 2, 30, 1), entries(t, 31, 60, 2)...)
	if err := s.Append(es); err != nil {
		t.Fatal(err)
	}
	segs := s.Log().Segments()
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	// The cut is the first segment holding term 2, so the entry before the
	// new first one has term 1: only the anchor can say so.
	cut := segs[len(segs)-1].BaseOffset
	for _, seg := range segs {
		b, err := s.readBatch(seg.BaseOffset)
		if err != nil {
			t.Fatal(err)
		}
		if b.PartitionLeaderEpoch() == 2 {
			cut = seg.BaseOffset
			break
		}
	}
	if _, err := s.p.(interface {
		DeleteBefore(int64) (int, error)
	}).DeleteBefore(cut); err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first <= 2 || last != 60 {
		t.Fatalf("[%d, %d] after retention below offset %d", first, last, cut)
	}
	if off, err := s.Offset(first); err != nil || off != cut {
		t.Fatalf("the first entry starts at %d (%v), the log at %d", off, err, cut)
	}
	if term, err := s.Term(first - 1); err != nil || term != es[first-3].GetTerm() {
		t.Fatalf("Term(%d) below the first index: %d, %v; want %d", first-1, term, err, es[first-3].GetTerm())
	}
	if _, err := s.Term(first - 2); !errors.Is(err, raft.ErrCompacted) {
		t.Fatalf("Term(%d): %v, want ErrCompacted", first-2, err)
	}
	if hw, err := s.HighWatermark(first - 1); err != nil || hw != cut {
		t.Fatalf("HighWatermark(%d) = %d, %v; want %d", first-1, hw, err, cut)
	}
	compareStores(t, "after retention", s, oracleBelow(t, es, first))
	closeT(t, s)
	s = openT(t, fs, dir)
	compareStores(t, "after retention, reopened", s, oracleBelow(t, es, first))
	// It goes on: the next term's entries after the last.
	if err := s.Append(entries(t, 61, 65, 3)); err != nil {
		t.Fatal(err)
	}
}

// TestRetentionTakesAll: retention that deletes every batch (the log start
// moved to its end) under an open Store leaves an empty raft log after the
// last entry, as a snapshot there would, which appends go on from and a
// reopen reads back.
func TestRetentionTakesAll(t *testing.T) {
	fs := vfs.NewMem()
	const dir = "/data/t-0"
	s := openT(t, fs, dir)
	defer func() { closeT(t, s) }()
	bootT(t, s)
	if err := s.Append(entries(t, 2, 40, 2)); err != nil {
		t.Fatal(err)
	}
	end := s.Log().EndOffset()
	if _, err := s.p.(interface {
		DeleteBefore(int64) (int, error)
	}).DeleteBefore(end); err != nil {
		t.Fatal(err)
	}
	if start := s.Log().StartOffset(); start != end {
		t.Fatalf("the log starts at %d after deleting below its end %d", start, end)
	}
	check := func(label string) {
		t.Helper()
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		if first != 41 || last != 40 {
			t.Fatalf("%s: [%d, %d], want the empty log after 40", label, first, last)
		}
		if term, err := s.Term(40); err != nil || term != 2 {
			t.Fatalf("%s: Term(40) = %d, %v; want 2", label, term, err)
		}
		if hw, err := s.HighWatermark(40); err != nil || hw != end {
			t.Fatalf("%s: HighWatermark(40) = %d, %v; want %d", label, hw, err, end)
		}
	}
	check("after retention")
	closeT(t, s)
	s = openT(t, fs, dir)
	check("reopened")
	if err := s.Append(entries(t, 41, 45, 3)); err != nil {
		t.Fatal(err)
	}
	if off, err := s.Offset(41); err != nil || off != end {
		t.Fatalf("Offset(41) = %d, %v; want %d", off, err, end)
	}
}
