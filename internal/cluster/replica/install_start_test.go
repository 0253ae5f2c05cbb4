package replica

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
)

// midBatch returns the offset of the second record of s's first producer
// batch of several records whose base offset is in [lo, hi): an offset
// inside a batch, where DeleteRecords may move a log start.
func midBatch(t *testing.T, s *Store, lo, hi int64) int64 {
	t.Helper()
	for _, b := range batchesIn(t, s, lo, hi) {
		if rb := record.Batch(b); !rb.IsControl() && rb.NumRecords() >= 2 && rb.BaseOffset() > 0 {
			return rb.BaseOffset() + 1
		}
	}
	t.Fatalf("no batch of several records in [%d, %d)", lo, hi)
	return 0
}

// installStartCase is installCase with the leader's log start moved
// inside a batch (as DeleteRecords may), before its raft log moved past
// the follower's: with restart, inside a batch past the follower's end, so
// the copy restarts the follower's partition at that batch's base offset;
// without, inside a batch below the follower's committed entries (the
// snapshot is past the DeleteRecords entry that moved it, which the
// follower then never applies). It returns the leader's start too.
func installStartCase(t *testing.T, fs vfs.FS, restart bool) (leader, follower *Store, es []*pb.Entry, snap *pb.Snapshot, cut, start int64) {
	t.Helper()
	leader, follower, es = pair(t, fs)
	if cut, err := follower.HighWatermark(10); err != nil {
		t.Fatal(err)
	} else if restart {
		start = midBatch(t, leader, leader.Log().Segments()[2].BaseOffset, leader.Log().EndOffset())
		if end := follower.Log().EndOffset(); end >= start-1 {
			t.Fatalf("the follower ends at %d, the batch holding the leader's start %d is not past it", end, start)
		}
	} else {
		start = midBatch(t, leader, 0, cut)
	}
	if _, err := leader.p.(*seglog.Log).DeleteBefore(start); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.CompactTo(50); err != nil {
		t.Fatal(err)
	}
	snap, err := leader.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := decodeSnapData(snap.GetData()); end <= start {
		t.Fatalf("the snapshot ends at %d, at or below the leader's start %d", end, start)
	}
	if cut, err = follower.HighWatermark(10); err != nil {
		t.Fatal(err)
	}
	return leader, follower, es, snap, cut, start
}

// fsckClean checks the follower's partition directory with fsck. After a
// power loss, recovery may have set aside a write the power cut before
// its sync (a quarantine file, a warning): with powerLoss that alone is
// allowed.
func fsckClean(t *testing.T, label string, fs vfs.FS, powerLoss bool) {
	t.Helper()
	rep, err := fsck.Check(fs, "/f/t-0", fsck.Options{})
	if err != nil {
		t.Fatalf("%s: fsck: %v", label, err)
	}
	for _, p := range rep.Problems {
		if !powerLoss || p.Kind != fsck.KindQuarantine || p.Severity != fsck.Warning {
			t.Fatalf("%s: fsck: %+v", label, rep.Problems)
		}
	}
}

// TestInstallTakesSenderStart: the leader's log start lies inside a batch.
// A follower behind it gets the whole batch holding it (the header says
// the batches begin at its base offset), restarts there, and takes the
// leader's start with the snapshot; a follower whose committed entries
// reach past it keeps its batches and takes the leader's start too (a
// snapshot past the DeleteRecords entry). Either way the partition is the
// leader's from the leader's start, batch for batch, reopened too, and
// fsck finds it clean.
func TestInstallTakesSenderStart(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "cut"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			leader, follower, es, snap, cut, start := installStartCase(t, fs, restart)
			defer closeT(t, leader)
			var header []byte
			fetch := serveFrom(leader, func(i int, p []byte) []byte {
				if i == 0 {
					header = p
				}
				return p
			}, -1)
			if err := follower.ReceiveSnapshot(context.Background(), snap, fetch); err != nil {
				t.Fatal(err)
			}
			gotStart, first := int64(binary.BigEndian.Uint64(header[1:])), int64(binary.BigEndian.Uint64(header[9:]))
			wantFirst := cut
			if restart {
				wantFirst = start - 1
			}
			if gotStart != start || first != wantFirst {
				t.Fatalf("the header says the start %d, the batches from %d; want %d, %d", gotStart, first, start, wantFirst)
			}
			if got := follower.Log().StartOffset(); restart && got != start-1 || !restart && got != 0 {
				t.Fatalf("before raft takes the snapshot, the partition starts at %d", got)
			}
			if err := follower.ApplySnapshot(snap); err != nil {
				t.Fatal(err)
			}
			afterSnap(t, name, leader, follower, snap, es)
			checkEpochs(t, name, fs, follower)
			closeT(t, follower)
			fsckClean(t, name, fs, false)
			follower = openT(t, fs, "/f/t-0")
			defer closeT(t, follower)
			if last, _ := follower.LastIndex(); last != 60 {
				t.Fatalf("reopened: last index %d, want 60", last)
			}
			sameBatches(t, "reopened", follower, leader)
		})
	}
}

// TestInstallSenderStartCrashEveryStep: a power loss at each filesystem
// operation of a whole install that takes the leader's start inside a
// batch, restarted or after a cut (the copy, then raft's ApplySnapshot,
// which moves the start): reopened, the Store opens; raft takes the
// snapshot again (or has), copying what it still lacks; the partition
// then starts at the leader's start and is the leader's batch for batch,
// the entries after the snapshot at the leader's offsets, the epochs
// right, fsck clean.
func TestInstallSenderStartCrashEveryStep(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "cut"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			pl := newPowerLosses(13, writesUnder("/f/"))
			leader, follower, es, snap, _, start := installStartCase(t, pl.fs, restart)
			defer closeT(t, leader)
			index := snap.GetMetadata().GetIndex()
			pl.rec.Arm(true)
			take(t, leader, follower, snap)
			clones := pl.images()
			closeT(t, follower)
			if len(clones) < 10 {
				t.Fatalf("only %d operations in an install", len(clones))
			}
			again := 0
			for i, c := range clones {
				label := fmt.Sprintf("%s: crash %d", name, i)
				f := openT(t, c, "/f/t-0")
				if first, _ := f.FirstIndex(); first != index+1 {
					if f.SnapshotNeedsData(snap) {
						if err := f.ReceiveSnapshot(context.Background(), snap, serveFrom(leader, nil, -1)); err != nil {
							t.Fatalf("%s: copying again: %v", label, err)
						}
					}
					if err := f.ApplySnapshot(snap); err != nil {
						t.Fatalf("%s: taking the snapshot again: %v", label, err)
					}
					again++
				}
				if got := f.Log().StartOffset(); got != start {
					t.Fatalf("%s: the partition starts at %d, the leader's at %d", label, got, start)
				}
				if hs, _, _ := f.InitialState(); hs.GetCommit() < index {
					t.Fatalf("%s: commit %d below the snapshot's %d", label, hs.GetCommit(), index)
				}
				if err := f.Append(es[index-1:]); err != nil {
					t.Fatalf("%s: appending after the snapshot: %v", label, err)
				}
				sameBatches(t, label, f, leader)
				checkEpochs(t, label, c, f)
				closeT(t, f)
				fsckClean(t, label, c, true)
			}
			if again == 0 {
				t.Fatalf("none of %d power losses left the snapshot to take again", len(clones))
			}
		})
	}
}
