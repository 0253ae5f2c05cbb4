package replica

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/seglog/seglog/internal/cluster/multiraft"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// serveFrom is a FetchFunc that asks leader directly, as the driver's
// transport would, passing each payload through tamper (nil: as sent).
// With stopAfter >= 0 it hands on each batch as a payload of its own and
// breaks off after stopAfter payloads.
func serveFrom(leader *Store, tamper func(i int, p []byte) []byte, stopAfter int) multiraft.FetchFunc {
	return func(ctx context.Context, req []byte, recv func([]byte) error) error {
		i := 0
		pass := func(p []byte) error {
			if stopAfter >= 0 && i >= stopAfter {
				return errors.New("the connection broke")
			}
			p = bytes.Clone(p)
			if tamper != nil {
				p = tamper(i, p)
			}
			i++
			return recv(p)
		}
		return leader.ServeSnapshot(ctx, req, func(p []byte) error {
			if stopAfter < 0 || p[0] != payloadData {
				return pass(p)
			}
			for data := p[1:]; len(data) > 0; {
				size := record.Batch(data).Size()
				if err := pass(append([]byte{payloadData}, data[:size]...)); err != nil {
					return err
				}
				data = data[size:]
			}
			return nil
		})
	}
}

// pair is a leader's log of entries 2..60 in two terms and a follower
// that has entries 2..10 of it, committed, and a conflicting uncommitted
// tail 11..14 of term 2.
func pair(t *testing.T, fs vfs.FS) (leader, follower *Store, es []*pb.Entry) {
	t.Helper()
	leader, follower = openT(t, fs, "/l/t-0"), openT(t, fs, "/f/t-0")
	es = append(entries(t, 2, 30, 1), entries(t, 31, 60, 3)...)
	for _, s := range []*Store{leader, follower} {
		if err := s.ApplySnapshot(bootSnap(1, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.Append(es); err != nil {
		t.Fatal(err)
	}
	if err := follower.Append(append(es[:9:9], entries(t, 11, 14, 2)...)); err != nil {
		t.Fatal(err)
	}
	if err := follower.SetHardState(&pb.HardState{Term: new(uint64(2)), Commit: new(uint64(10))}); err != nil {
		t.Fatal(err)
	}
	return leader, follower, es
}

// take runs a whole install on follower from leader's snapshot, as the
// driver does: the copy, then raft's ApplySnapshot.
func take(t *testing.T, leader, follower *Store, snap *pb.Snapshot) {
	t.Helper()
	if !follower.SnapshotNeedsData(snap) {
		t.Fatal("the follower needs no data for a snapshot past its log")
	}
	if err := follower.ReceiveSnapshot(context.Background(), snap, serveFrom(leader, nil, -1)); err != nil {
		t.Fatal(err)
	}
	if follower.SnapshotNeedsData(snap) {
		t.Fatal("the snapshot still needs data after the copy")
	}
	// raft must find the snapshot's index absent, to take the snapshot.
	if _, err := follower.Term(snap.GetMetadata().GetIndex()); !errors.Is(err, raft.ErrUnavailable) {
		t.Fatalf("Term(%d) before ApplySnapshot: %v, want ErrUnavailable", snap.GetMetadata().GetIndex(), err)
	}
	if err := follower.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
}

// afterSnap checks follower's raft log is empty after snap, and that the
// next entries land at the offsets the leader gave them.
func afterSnap(t *testing.T, label string, leader, follower *Store, snap *pb.Snapshot, es []*pb.Entry) {
	t.Helper()
	i, term := snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm()
	if first, _ := follower.FirstIndex(); first != i+1 {
		t.Fatalf("%s: first index %d, want %d", label, first, i+1)
	}
	if got, err := follower.Term(i); err != nil || got != term {
		t.Fatalf("%s: Term(%d) = %d, %v; want %d", label, i, got, err, term)
	}
	if err := follower.Append(es[i-1:]); err != nil {
		t.Fatal(err)
	}
	sameBatches(t, label, follower, leader)
}

// TestReceiveSnapshotRestart: the leader's retention deleted past the
// follower's end: the follower's partition restarts at the leader's log
// start and holds the leader's batches from there; the raft log is empty
// after the snapshot; the entries after it get the leader's offsets; a
// reopen reads the same.
func TestReceiveSnapshotRestart(t *testing.T) {
	fs := vfs.NewMem()
	leader, follower, es, snap, _ := installCase(t, fs, true)
	defer closeT(t, leader)
	take(t, leader, follower, snap)
	afterSnap(t, "restarted", leader, follower, snap, es)
	checkEpochs(t, "restarted", fs, follower)
	closeT(t, follower)
	follower = openT(t, fs, "/f/t-0")
	defer closeT(t, follower)
	if last, _ := follower.LastIndex(); last != 60 {
		t.Fatalf("reopened: last index %d, want 60", last)
	}
	sameBatches(t, "reopened", follower, leader)
}

// TestReceiveSnapshotEntries: the leader's raft log moved past the
// follower's (CompactTo) with its partition whole: the follower's
// uncommitted tail is cut and the leader's batches follow its committed
// ones, byte for byte.
func TestReceiveSnapshotEntries(t *testing.T) {
	fs := vfs.NewMem()
	leader, follower, es, snap, _ := installCase(t, fs, false)
	defer closeT(t, leader)
	defer closeT(t, follower)
	if snap.GetMetadata().GetIndex() < 20 {
		t.Fatalf("the leader's snapshot is at %d", snap.GetMetadata().GetIndex())
	}
	take(t, leader, follower, snap)
	afterSnap(t, "copied", leader, follower, snap, es)
	checkEpochs(t, "copied", fs, follower)
}

// crashDuring runs an install from leader's snapshot on follower that a
// power loss cuts off after the fifth payload (the header and four
// batches), and returns the follower's filesystem as the power loss left
// it; the transfer itself then fails.
func crashDuring(t *testing.T, fs *vfs.MemFS, leader, follower *Store, snap *pb.Snapshot) *vfs.MemFS {
	t.Helper()
	var crashed *vfs.MemFS
	tamper := func(i int, p []byte) []byte {
		if i == 4 {
			crashed = fs.CrashClone()
		}
		return p
	}
	if err := follower.ReceiveSnapshot(context.Background(), snap, serveFrom(leader, tamper, 5)); err == nil {
		t.Fatal("a broken copy succeeded")
	}
	if crashed == nil {
		t.Fatal("the copy ended before the power loss")
	}
	return crashed
}

// TestReceiveSnapshotInterrupted: a copy that restarted the partition
// (the leader's log starts past the follower's end) and then broke off, or
// was cut by a power loss, keeps what it copied: the partition holds the
// leader's batches from its start, the raft log is empty after the commit
// index (the follower's own data is gone), and the next copy, in place, reopened or after the power loss, resumes at the
// partition's end; raft then takes the snapshot and the partition is the
// leader's batch for batch. (A copy after a cut: install_test.go.)
func TestReceiveSnapshotInterrupted(t *testing.T) {
	fs := vfs.NewMem()
	leader, follower, es, snap, _ := installCase(t, fs, true)
	defer closeT(t, leader)
	crashed := crashDuring(t, fs, leader, follower, snap)
	resumeAfterFailedCopy(t, "in place", leader, follower, snap, es)
	closeT(t, follower)
	for name, fsys := range map[string]*vfs.MemFS{"reopened": fs, "after a power loss": crashed} {
		// In place the copy went on and was taken; the power loss left
		// the batches synced before it.
		f := openT(t, fsys, "/f/t-0")
		if name == "reopened" {
			sameBatches(t, name, f, leader)
			closeT(t, f)
			continue
		}
		resumeAfterFailedCopy(t, name, leader, f, snap, es)
		closeT(t, f)
		f = openT(t, fsys, "/f/t-0")
		if last, _ := f.LastIndex(); last != 60 {
			t.Fatalf("%s, reopened: last index %d, want 60", name, last)
		}
		sameBatches(t, name+", reopened", f, leader)
		checkEpochs(t, name+", reopened", fsys, f)
		closeT(t, f)
	}
}

// resumeAfterFailedCopy checks a follower whose copy of snap, after a
// restart, stopped short: it holds the leader's batches from the leader's
// start, its raft log is empty after the commit index (10) and takes only
// entries that follow it; the next copy resumes at the partition's end, and once raft has
// taken the snapshot the entries after it land at the leader's offsets.
func resumeAfterFailedCopy(t *testing.T, label string, leader, follower *Store, snap *pb.Snapshot, es []*pb.Entry) {
	t.Helper()
	at := follower.Log().EndOffset()
	if at <= leader.Log().StartOffset() {
		t.Fatalf("%s: the copy stored nothing (the partition ends at %d)", label, at)
	}
	sameUpTo(t, label, follower, leader, at)
	first, _ := follower.FirstIndex()
	last, _ := follower.LastIndex()
	if first != 11 || last != 10 {
		t.Fatalf("%s: the raft log is [%d, %d], want empty after the commit index 10", label, first, last)
	}
	if hs, _, _ := follower.InitialState(); hs.GetCommit() != 10 {
		t.Fatalf("%s: commit %d, want 10", label, hs.GetCommit())
	}
	// Entries that do not follow the commit index are refused, the copy
	// kept.
	if err := follower.Append(es[10:12]); !errors.Is(err, ErrBadEntry) || follower.Log().EndOffset() != at {
		t.Fatalf("%s: Append of entries 12 and 13 after a failed copy: %v, the partition ends at %d; want ErrBadEntry and the copy kept", label, err, follower.Log().EndOffset())
	}
	if !follower.SnapshotNeedsData(snap) {
		t.Fatalf("%s: an unfinished copy needs no data", label)
	}
	var froms []int64
	if err := follower.ReceiveSnapshot(context.Background(), snap, recordFrom(serveFrom(leader, nil, -1), &froms)); err != nil {
		t.Fatal(err)
	}
	if len(froms) != 1 || froms[0] != at {
		t.Fatalf("%s: the copy asked from %v, want the partition's end %d", label, froms, at)
	}
	if err := follower.ApplySnapshot(snap); err != nil {
		t.Fatal(err)
	}
	afterSnap(t, label, leader, follower, snap, es)
	checkEpochs(t, label, follower.fs, follower)
}

// TestReceiveSnapshotRefusesBadData: a damaged batch, one at the wrong
// offset, a header past the snapshot, one whose batches begin below the
// offset asked for, one without where they begin, or no header at all is
// ErrBadTransfer, and the follower keeps nothing past the last batch
// checked.
func TestReceiveSnapshotRefusesBadData(t *testing.T) {
	cases := map[string]func(i int, p []byte) []byte{
		"damaged batch": func(i int, p []byte) []byte {
			if i == 1 {
				p[len(p)-1] ^= 0xff
			}
			return p
		},
		"wrong offset": func(i int, p []byte) []byte {
			if i == 1 {
				p[1+7]++ // the first batch's base offset, low byte
			}
			return p
		},
		"header past the end": func(i int, p []byte) []byte {
			if i == 0 {
				p[1] = 0x7f
			}
			return p
		},
		"batches begin below the ask": func(i int, p []byte) []byte {
			if i == 0 {
				binary.BigEndian.PutUint64(p[9:], binary.BigEndian.Uint64(p[9:])-1)
			}
			return p
		},
		"old header": func(i int, p []byte) []byte {
			if i == 0 {
				return p[:9]
			}
			return p
		},
		"no header": func(i int, p []byte) []byte {
			if i == 0 {
				p[0] = payloadData
			}
			return p
		},
		"cut short": func(i int, p []byte) []byte {
			if i == 1 {
				return p[:len(p)-3]
			}
			return p
		},
	}
	for name, tamper := range cases {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			leader, follower, _, snap, _ := installCase(t, fs, false)
			defer closeT(t, leader)
			defer closeT(t, follower)
			before := follower.Log().EndOffset()
			err := follower.ReceiveSnapshot(context.Background(), snap, serveFrom(leader, tamper, -1))
			if !errors.Is(err, ErrBadTransfer) {
				t.Fatalf("%v, want ErrBadTransfer", err)
			}
			if end := follower.Log().EndOffset(); end > before {
				t.Fatalf("the partition grew from %d to %d on bad data", before, end)
			}
		})
	}
}
