package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/compaction"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// recordFrom wraps fetch, noting the offset each request starts at.
func recordFrom(fetch multiraft.FetchFunc, froms *[]int64) multiraft.FetchFunc {
	return func(ctx context.Context, req []byte, recv func([]byte) error) error {
		*froms = append(*froms, int64(binary.BigEndian.Uint64(req)))
		return fetch(ctx, req, recv)
	}
}

// TestInstallAfterCutResumes: a copy that breaks off after the cut keeps
// every batch the follower had below it and the batches it copied; the
// raft log stays the committed entries (10), and the next copy resumes at
// the partition's end, in place or after a power loss.
func TestInstallAfterCutResumes(t *testing.T) {
	fs := vfs.NewMem()
	leader, follower, es, snap, cut := installCase(t, fs, false)
	defer closeT(t, leader)
	below := batchesIn(t, follower, 0, cut)
	crashed := crashDuring(t, fs, leader, follower, snap)
	keptBelow(t, "after the failed copy", follower, below, cut)
	copied := follower.Log().EndOffset()
	if copied <= cut {
		t.Fatalf("the copy stored nothing past %d", cut)
	}
	if last, _ := follower.LastIndex(); last != 10 {
		t.Fatalf("after the failed copy: last index %d, want the commit index 10", last)
	}
	var froms []int64
	fetch := recordFrom(serveFrom(leader, nil, -1), &froms)
	if err := follower.ReceiveSnapshot(context.Background(), snap, fetch); err != nil {
		t.Fatal(err)
	}
	if len(froms) != 1 || froms[0] != copied {
		t.Fatalf("the second copy asked from %v, want the partition's end %d", froms, copied)
	}
	if err := follower.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	afterSnap(t, "resumed", leader, follower, snap, es)
	checkEpochs(t, "resumed", fs, follower)
	closeT(t, follower)

	follower = openT(t, crashed, "/f/t-0")
	defer closeT(t, follower)
	keptBelow(t, "after a power loss", follower, below, cut)
	if last, _ := follower.LastIndex(); last != 10 {
		t.Fatalf("after a power loss: last index %d, want the commit index 10", last)
	}
	if hs, _, _ := follower.InitialState(); hs.GetCommit() != 10 {
		t.Fatalf("after a power loss: commit %d, want 10", hs.GetCommit())
	}
	froms = nil
	resumeAt := follower.Log().EndOffset()
	if !follower.SnapshotNeedsData(snap) {
		t.Fatal("an unfinished copy needs no data")
	}
	if err := follower.ReceiveSnapshot(context.Background(), snap, recordFrom(serveFrom(leader, nil, -1), &froms)); err != nil {
		t.Fatal(err)
	}
	if len(froms) != 1 || froms[0] != resumeAt || resumeAt <= cut {
		t.Fatalf("after a power loss the copy asked from %v, want the partition's end %d (past the cut %d)", froms, resumeAt, cut)
	}
	if err := follower.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	afterSnap(t, "resumed after a power loss", leader, follower, snap, es)
	checkEpochs(t, "resumed after a power loss", crashed, follower)
}

// TestInstallAbandonedForEntries: after a copy that broke off, raft may
// append the leader's entries after its commit index instead (a leader
// that still has them): the copied batches are replaced by the same
// entries, and the partition ends as the leader's, reopened too.
func TestInstallAbandonedForEntries(t *testing.T) {
	fs := vfs.NewMem()
	leader, follower, es, snap, cut := installCase(t, fs, false)
	defer closeT(t, leader)
	below := batchesIn(t, follower, 0, cut)
	if err := follower.ReceiveSnapshot(context.Background(), snap, serveFrom(leader, nil, 5)); err == nil {
		t.Fatal("a broken copy succeeded")
	}
	if err := follower.Append(es[9:]); err != nil {
		t.Fatal(err)
	}
	sameBatches(t, "appended", follower, leader)
	keptBelow(t, "appended", follower, below, cut)
	closeT(t, follower)
	follower = openT(t, fs, "/f/t-0")
	defer closeT(t, follower)
	if last, _ := follower.LastIndex(); last != 60 {
		t.Fatalf("reopened: last index %d, want 60", last)
	}
	if follower.SnapshotNeedsData(snap) {
		t.Fatal("reopened: the log holds the snapshot's index, but it needs data")
	}
	sameBatches(t, "reopened", follower, leader)
	checkEpochs(t, "reopened", fs, follower)
}

// TestInstallFailedWrite: a write that fails during the copy, after the
// cut, fails the install and the partition (which refuses writes until
// reopened); reopened, the partition holds what it had below the cut, and
// raft takes the snapshot again.
func TestInstallFailedWrite(t *testing.T) {
	mem := vfs.NewMem()
	var mu sync.Mutex
	armed, writes := false, 0
	fs := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if armed && strings.HasPrefix(op.Path, "/f/") && strings.HasSuffix(op.Path, ".log") && (op.Kind == vfs.OpWrite || op.Kind == vfs.OpWriteAt) {
			if writes++; writes == 3 {
				return errors.New("no space left on device")
			}
		}
		return nil
	}))
	leader, follower, es, snap, cut := installCase(t, fs, false)
	defer closeT(t, leader)
	below := batchesIn(t, follower, 0, cut)
	mu.Lock()
	armed = true
	mu.Unlock()
	err := follower.ReceiveSnapshot(context.Background(), snap, serveFrom(leader, nil, 1<<20))
	mu.Lock()
	armed = false
	n := writes
	mu.Unlock()
	if !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("the copy with a failing write: %v (%d writes), want the injected error", err, n)
	}
	_ = follower.Close()
	_ = follower.p.(*seglog.Log).Close()
	follower = openT(t, fs, "/f/t-0")
	defer closeT(t, follower)
	keptBelow(t, "reopened", follower, below, cut)
	if last, _ := follower.LastIndex(); last != 10 {
		t.Fatalf("reopened: last index %d, want the commit index 10", last)
	}
	take(t, leader, follower, snap)
	afterSnap(t, "taken again", leader, follower, snap, es)
	checkEpochs(t, "taken again", fs, follower)
}

// TestInstallCrashEveryStep: a power loss at each filesystem operation of
// a whole install (the copy and raft's ApplySnapshot), unsynced data kept
// at random, for a copy after the cut and a copy that restarts the
// partition. Reopened, the Store opens; after a cut the partition keeps
// every batch it had below it; after a restart it holds the leader's
// batches from the leader's start up to where the copy got, the raft log
// empty after the commit index, and the next copy resumes at its end;
// raft takes the snapshot again (or has), the entries after it land at the
// leader's offsets, and the partition is the leader's batch for batch,
// never restarted at the snapshot's end.
func TestInstallCrashEveryStep(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "cut"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			pl := newPowerLosses(7, writesUnder("/f/"))
			leader, follower, es, snap, cut := installCase(t, pl.fs, restart)
			defer closeT(t, leader)
			index := snap.GetMetadata().GetIndex()
			end, _ := decodeSnapData(snap.GetData())
			below := batchesIn(t, follower, 0, cut)
			pl.rec.Arm(true)
			take(t, leader, follower, snap)
			clones := pl.images()
			closeT(t, follower)
			if len(clones) < 10 {
				t.Fatalf("only %d operations in an install", len(clones))
			}
			restarted, resumed := 0, 0
			for i, c := range clones {
				label := fmt.Sprintf("%s: crash %d", name, i)
				f := openT(t, c, "/f/t-0")
				if first, _ := f.FirstIndex(); first != index+1 {
					// Not taken: the committed entries (and what was
					// copied after them) are there, or, restarted, the
					// leader's batches copied since.
					v := f.Log()
					resumeAt := v.EndOffset()
					wasRestarted := restart && v.StartOffset() > cut
					if wasRestarted {
						sameUpTo(t, label, f, leader, resumeAt)
						if last, _ := f.LastIndex(); last != 10 || first != 11 {
							t.Fatalf("%s: restarted, the raft log is [%d, %d], want empty after the commit index 10", label, first, last)
						}
						if err := f.Append(es[10:12]); !errors.Is(err, ErrBadEntry) || f.Log().EndOffset() != resumeAt {
							t.Fatalf("%s: entries not after the commit index on a restarted partition: %v, the partition ends at %d; want ErrBadEntry and the copy kept", label, err, f.Log().EndOffset())
						}
					} else {
						keptBelow(t, label, f, below, cut)
					}
					if f.SnapshotNeedsData(snap) {
						var froms []int64
						if err := f.ReceiveSnapshot(context.Background(), snap, recordFrom(serveFrom(leader, nil, -1), &froms)); err != nil {
							t.Fatalf("%s: copying again: %v", label, err)
						}
						if wasRestarted {
							// What the copy stored before the power
							// loss is kept: this one goes on after it.
							if len(froms) != 1 || froms[0] != resumeAt {
								t.Fatalf("%s: the copy asked from %v, want the partition's end %d", label, froms, resumeAt)
							}
							if resumeAt > leader.Log().StartOffset() {
								resumed++
							}
						}
					}
					if err := f.ApplySnapshot(snap); err != nil {
						t.Fatalf("%s: taking the snapshot again: %v", label, err)
					}
				} else if !restart {
					keptBelow(t, label, f, below, cut)
				}
				if f.Log().StartOffset() == end {
					restarted++
				}
				if hs, _, _ := f.InitialState(); hs.GetCommit() < index {
					t.Fatalf("%s: commit %d below the snapshot's %d", label, hs.GetCommit(), index)
				}
				if err := f.Append(es[index-1:]); err != nil {
					t.Fatalf("%s: appending after the snapshot: %v", label, err)
				}
				// Batch for batch the leader's, from the leader's start
				// (a restart) or from 0 (a cut).
				sameBatches(t, label, f, leader)
				checkEpochs(t, label, c, f)
				closeT(t, f)
			}
			if restarted > 0 {
				t.Fatalf("%d of %d power losses restarted the partition at the snapshot's end", restarted, len(clones))
			}
			if restart && resumed == 0 {
				t.Fatalf("none of %d power losses left a restarted copy to resume", len(clones))
			}
		})
	}
}

// TestReceiveSnapshotCompacted: the leader compacted the range a follower
// needs (CompactTo gave it up, then the cleaner removed records below):
// the copy stores the leader's batches at their offsets with the gaps
// compaction left, after the follower's own committed batches (a cut) or
// from the leader's start (a restart); the entries after the snapshot land
// at the leader's offsets; reopened, the same; fsck finds the partition
// clean.
func TestReceiveSnapshotCompacted(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "cut"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			leader, follower, es, snap, cut := installCase(t, fs, restart)
			defer closeT(t, leader)
			off, _ := decodeSnapData(snap.GetData())
			// Every record's key is "k": all but the last go.
			if _, err := compaction.Clean(leader.p.(*seglog.Log), compaction.NewOffsetMap(1<<20, 0), 0, off, compaction.Options{}); err != nil {
				t.Fatal(err)
			}
			from := cut
			if restart {
				from = leader.Log().StartOffset()
			}
			gaps := 0
			next := from
			for _, b := range batchesIn(t, leader, from, off) {
				rb := record.Batch(b)
				if rb.BaseOffset() != next || int64(rb.NumRecords()) != int64(rb.LastOffsetDelta())+1 {
					gaps++
				}
				next = rb.NextOffset()
			}
			if gaps == 0 {
				t.Fatalf("the leader's [%d, %d) has no gap to copy", from, off)
			}
			below := batchesIn(t, follower, 0, cut)
			take(t, leader, follower, snap)
			check := func(label string, f *Store) {
				t.Helper()
				if restart {
					sameBatches(t, label, f, leader)
				} else {
					keptBelow(t, label, f, below, cut)
					sameFrom(t, label, f, leader, cut)
				}
			}
			if err := follower.Append(es[snap.GetMetadata().GetIndex()-1:]); err != nil {
				t.Fatal(err)
			}
			check("copied", follower)
			checkEpochs(t, "copied", fs, follower)
			closeT(t, follower)
			rep, err := fsck.Check(fs, "/f/t-0", fsck.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Clean() {
				t.Fatalf("fsck: %+v", rep.Problems)
			}
			follower = openT(t, fs, "/f/t-0")
			defer closeT(t, follower)
			if last, _ := follower.LastIndex(); last != 60 {
				t.Fatalf("reopened: last index %d, want 60", last)
			}
			check("reopened", follower)
		})
	}
}

// TestInstallRestartOlderAnchors: a restart's copy cut by a power loss in
// a directory whose anchors are still the old log's (as a build before
// restartForSnapshot saved the empty log's anchor left it): nothing says
// the commit index's term, so Open moves the partition to the snapshot,
// restarted at its end, and the entries after it land at the leader's
// offsets.
func TestInstallRestartOlderAnchors(t *testing.T) {
	fs := vfs.NewMem()
	leader, follower, es, snap, _ := installCase(t, fs, true)
	defer closeT(t, leader)
	path := filepath.Join("/f/t-0", layout.RaftIndexFile)
	old, err := vfs.ReadFileLimit(fs, path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	crashed := crashDuring(t, fs, leader, follower, snap)
	closeT(t, follower)
	if err := vfs.WriteFileAtomic(crashed, path, old); err != nil {
		t.Fatal(err)
	}
	f := openT(t, crashed, "/f/t-0")
	defer closeT(t, f)
	i := snap.GetMetadata().GetIndex()
	end, _ := decodeSnapData(snap.GetData())
	if v := f.Log(); v.StartOffset() != end || v.EndOffset() != end {
		t.Fatalf("the partition holds [%d, %d), want it restarted at %d", v.StartOffset(), v.EndOffset(), end)
	}
	if first, _ := f.FirstIndex(); first != i+1 {
		t.Fatalf("first index %d, want %d", first, i+1)
	}
	if hs, _, _ := f.InitialState(); hs.GetCommit() < i {
		t.Fatalf("commit %d below the snapshot's %d", hs.GetCommit(), i)
	}
	if err := f.Append(es[i-1:]); err != nil {
		t.Fatal(err)
	}
	sameFrom(t, "appended", f, leader, end)
	checkEpochs(t, "appended", crashed, f)
}

// TestInstallRestartAbandonedForEntries: after a copy that restarted the
// partition broke off, in place or cut by a power loss, raft may append
// the entries after its commit index instead (a leader whose retention
// kept them): the partition restarts where the committed entries ended
// and takes them there, the copied batches replaced by the same batches,
// so it ends as the leader's did before its retention; reopened, the
// same.
func TestInstallRestartAbandonedForEntries(t *testing.T) {
	fs := vfs.NewMem()
	leader, follower, es, snap, cut := installCase(t, fs, true)
	defer closeT(t, leader)
	// A leader that still has every entry: the same entries, appended
	// to a log retention has not touched.
	whole := openT(t, fs, "/w/t-0")
	defer closeT(t, whole)
	bootT(t, whole)
	if err := whole.Append(es); err != nil {
		t.Fatal(err)
	}
	crashed := crashDuring(t, fs, leader, follower, snap)
	check := func(label string, fsys vfs.FS, f *Store) {
		t.Helper()
		if f.Log().EndOffset() <= leader.Log().StartOffset() {
			t.Fatalf("%s: the copy stored nothing", label)
		}
		if err := f.Append(es[9:]); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if last, _ := f.LastIndex(); last != 60 {
			t.Fatalf("%s: last index %d, want 60", label, last)
		}
		if start := f.Log().StartOffset(); start != cut {
			t.Fatalf("%s: the partition starts at %d, want the committed entries' end %d", label, start, cut)
		}
		sameFrom(t, label, f, whole, cut)
		if got, want := f.Log().EndOffset(), leader.Log().EndOffset(); got != want {
			t.Fatalf("%s: the partition ends at %d, the leader's at %d", label, got, want)
		}
		compareEntries(t, label, f, whole, 11, 61)
		checkEpochs(t, label, fsys, f)
		closeT(t, f)
		f = openT(t, fsys, "/f/t-0")
		defer closeT(t, f)
		if last, _ := f.LastIndex(); last != 60 {
			t.Fatalf("%s, reopened: last index %d, want 60", label, last)
		}
		sameFrom(t, label+", reopened", f, whole, cut)
		compareEntries(t, label+", reopened", f, whole, 11, 61)
	}
	check("in place", fs, follower)
	check("after a power loss", crashed, openT(t, crashed, "/f/t-0"))
}

// compareEntries checks that s answers Entries(lo, hi) as want does.
func compareEntries(t *testing.T, label string, s, want *Store, lo, hi uint64) {
	t.Helper()
	got, err := s.Entries(lo, hi, math.MaxUint64)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	w, err := want.Entries(lo, hi, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(w) {
		t.Fatalf("%s: %d entries, want %d", label, len(got), len(w))
	}
	for i := range got {
		if err := sameEntry(got[i], w[i]); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
	}
}

// TestInstallRestartAbandonCrash: a power loss at each filesystem
// operation of an Append that ends a restarted install (the partition
// restarted at the committed entries' end, the anchors, the state, then
// the entries): reopened, the Store takes the same entries again, and the
// partition ends as the leader's did before its retention.
func TestInstallRestartAbandonCrash(t *testing.T) {
	pl := newPowerLosses(11, writesUnder("/f/"))
	leader, follower, es, snap, cut := installCase(t, pl.fs, true)
	defer closeT(t, leader)
	whole := openT(t, pl.fs, "/w/t-0")
	defer closeT(t, whole)
	bootT(t, whole)
	if err := whole.Append(es); err != nil {
		t.Fatal(err)
	}
	crashDuring(t, pl.mem, leader, follower, snap)
	pl.rec.Arm(true)
	if err := follower.Append(es[9:]); err != nil {
		t.Fatal(err)
	}
	clones := pl.images()
	closeT(t, follower)
	if len(clones) < 5 {
		t.Fatalf("only %d operations", len(clones))
	}
	for i, c := range clones {
		label := fmt.Sprintf("crash %d", i)
		f := openT(t, c, "/f/t-0")
		if err := f.Append(es[9:]); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if start := f.Log().StartOffset(); start != cut {
			t.Fatalf("%s: the partition starts at %d, want %d", label, start, cut)
		}
		sameFrom(t, label, f, whole, cut)
		compareEntries(t, label, f, whole, 11, 61)
		checkEpochs(t, label, c, f)
		closeT(t, f)
	}
}
