package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/crashtest"
	"github.com/seglog/seglog/internal/seglogtest"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// Both a plain Log (these tests) and a store's Writer (a node) hold a
// replica's partition.
var (
	_ Partition = (*seglog.Log)(nil)
	_ Partition = store.Writer{}
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testSegmentBytes is small, so a few dozen entries span several
// segments and their anchors.
const testSegmentBytes = 1 << 10

// openLog opens the partition in dir as a plain seglog Log (no sync on
// append: the Store syncs what it writes).
func openLog(t testing.TB, fs vfs.FS, dir string) *seglog.Log {
	t.Helper()
	l, err := seglog.Open(dir, seglog.Options{FS: fs, Logger: quiet, LogConfig: seglog.LogConfig{SegmentBytes: testSegmentBytes, MaxIndexBytes: 4 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// openT opens the partition in dir and a Store over it; closeT closes
// both.
func openT(t testing.TB, fs vfs.FS, dir string) *Store {
	t.Helper()
	l := openLog(t, fs, dir)
	s, err := Open(l, Options{FS: fs})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	return s
}

func closeT(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.p.(*seglog.Log).Close(); err != nil {
		t.Fatal(err)
	}
}

// producerBatch builds a producer's batch of n records (base offset 0,
// as a client sends it) whose values name index.
func producerBatch(t testing.TB, index uint64, n int) []byte {
	t.Helper()
	bld := record.NewBuilder(record.None)
	for i := range n {
		if err := bld.Add(record.Record{Offset: int64(i), Timestamp: 1_700_000_000_000 + int64(index), Key: []byte("k"), Value: fmt.Appendf(nil, "entry %d record %d", index, i)}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b...)
}

// entries makes the entries [lo, hi] of term, as raft makes them: mostly
// producer batches of one to three records (how many depends on the term
// too, so an entry re-appended in a newer term moves the offsets after
// it), with a leader's empty entry and configuration changes among them.
func entries(t testing.TB, lo, hi, term uint64) []*pb.Entry {
	var out []*pb.Entry
	for i := lo; i <= hi; i++ {
		e := &pb.Entry{Index: new(i), Term: new(term)}
		switch i % 7 {
		case 3:
			// The empty entry a new leader appends.
		case 5:
			e.Type, e.Data = pb.EntryConfChange.Enum(), fmt.Appendf(nil, "configuration %d", i)
		case 6:
			e.Type, e.Data = pb.EntryConfChangeV2.Enum(), fmt.Appendf(nil, "configuration v2 %d", i)
		default:
			e.Data = producerBatch(t, i, int((i+term)%3)+1)
		}
		out = append(out, e)
	}
	return out
}

// sameEntry compares an entry the store returned with the oracle's: a
// producer batch differs only by its stamped base offset and epoch; the
// sizes raft counts are the same.
func sameEntry(got, want *pb.Entry) error {
	if got.GetIndex() != want.GetIndex() || got.GetTerm() != want.GetTerm() || got.GetType() != want.GetType() {
		return fmt.Errorf("got index %d term %d type %v, want %d %d %v", got.GetIndex(), got.GetTerm(), got.GetType(), want.GetIndex(), want.GetTerm(), want.GetType())
	}
	if proto.Size(got) != proto.Size(want) {
		return fmt.Errorf("entry %d: size %d, want %d", got.GetIndex(), proto.Size(got), proto.Size(want))
	}
	if !isProducer(want) {
		if !bytes.Equal(got.GetData(), want.GetData()) {
			return fmt.Errorf("entry %d: data %q, want %q", got.GetIndex(), got.GetData(), want.GetData())
		}
		return nil
	}
	b := record.Batch(got.GetData())
	if int64(b.PartitionLeaderEpoch()) != int64(got.GetTerm()) {
		return fmt.Errorf("entry %d: batch epoch %d, term %d", got.GetIndex(), b.PartitionLeaderEpoch(), got.GetTerm())
	}
	// want's own stamps are whatever an Append stamped into it last.
	if !record.EqualUnstamped(b, want.GetData()) {
		return fmt.Errorf("entry %d: the batch's bytes changed beyond its base offset and epoch", got.GetIndex())
	}
	return nil
}

// compareStores checks that s answers every read as the oracle does:
// bounds, terms (and their errors) around them, every entry, the initial
// state and the snapshot's metadata.
func compareStores(t testing.TB, label string, s *Store, oracle raft.Storage) {
	t.Helper()
	if err := sameReads(s, oracle); err != nil {
		t.Fatalf("%s: %v", label, err)
	}
}

func sameReads(s *Store, oracle raft.Storage) error {
	first, err := s.FirstIndex()
	if err != nil {
		return err
	}
	last, err := s.LastIndex()
	if err != nil {
		return err
	}
	wf, _ := oracle.FirstIndex()
	wl, _ := oracle.LastIndex()
	if first != wf || last != wl {
		return fmt.Errorf("[%d, %d], oracle [%d, %d]", first, last, wf, wl)
	}
	for i := max(first, 2) - 2; i <= last+2; i++ {
		got, gerr := s.Term(i)
		want, werr := oracle.Term(i)
		if got != want || !errors.Is(gerr, werr) && !errors.Is(werr, gerr) {
			return fmt.Errorf("Term(%d) = %d, %v; oracle %d, %v", i, got, gerr, want, werr)
		}
	}
	if first <= last {
		got, err := s.Entries(first, last+1, ^uint64(0))
		if err != nil {
			return fmt.Errorf("Entries(%d, %d): %w", first, last+1, err)
		}
		want, _ := oracle.Entries(first, last+1, ^uint64(0))
		if len(got) != len(want) {
			return fmt.Errorf("Entries(%d, %d): %d entries, oracle %d", first, last+1, len(got), len(want))
		}
		for i := range got {
			if err := sameEntry(got[i], want[i]); err != nil {
				return err
			}
		}
	}
	if _, err := s.Entries(first-1, last+1, ^uint64(0)); first > 1 && !errors.Is(err, raft.ErrCompacted) {
		return fmt.Errorf("Entries from %d, below the first index %d: %v, want ErrCompacted", first-1, first, err)
	}
	hs, cs, err := s.InitialState()
	if err != nil {
		return err
	}
	whs, wcs, _ := oracle.InitialState()
	if hs.GetTerm() != whs.GetTerm() || hs.GetVote() != whs.GetVote() || hs.GetCommit() != whs.GetCommit() {
		return fmt.Errorf("HardState %v, oracle %v", hs, whs)
	}
	if !slices.Equal(cs.GetVoters(), wcs.GetVoters()) || !slices.Equal(cs.GetLearners(), wcs.GetLearners()) {
		return fmt.Errorf("ConfState %v, oracle %v", cs, wcs)
	}
	snap, err := s.Snapshot()
	if err != nil {
		return err
	}
	wsnap, _ := oracle.Snapshot()
	if snap.GetMetadata().GetIndex() != wsnap.GetMetadata().GetIndex() || snap.GetMetadata().GetTerm() != wsnap.GetMetadata().GetTerm() {
		return fmt.Errorf("snapshot at %d term %d, oracle %d term %d", snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm(), wsnap.GetMetadata().GetIndex(), wsnap.GetMetadata().GetTerm())
	}
	return nil
}

// checkEpochs checks that the partition's leader-epoch-checkpoint, kept
// up by appends and truncations, is what a rebuild from every batch's
// header gives: the first offset of each newer epoch.
func checkEpochs(t testing.TB, label string, fs vfs.FS, s *Store) {
	t.Helper()
	data, err := vfs.ReadFileLimit(fs, s.epochs.Path(), 1<<20)
	if errors.Is(err, iofs.ErrNotExist) {
		data, err = nil, nil // no epoch assigned yet
	}
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	got, err := layout.ParseLeaderEpochs(s.epochs.Path(), data)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	var want []layout.EpochLine
	if s.log.StartOffset() < s.log.EndOffset() {
		err = s.scan(s.log.StartOffset(), func(e *segment.Entry) bool {
			if n := len(want); n == 0 || e.Batch.PartitionLeaderEpoch() > want[n-1].Epoch {
				// A start inside the first batch starts its epoch (Kafka
				// truncates the cache from the start).
				want = append(want, layout.EpochLine{Epoch: e.Batch.PartitionLeaderEpoch(), StartOffset: max(e.BaseOffset(), s.log.StartOffset())})
			}
			return true
		})
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
	}
	for i := range got {
		got[i].Pos = 0
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: leader-epoch-checkpoint holds %v, the batches say %v", label, got, want)
	}
}

// bootSnap is multiraft's bootstrap snapshot: index 1, term 1, voters.
func bootSnap(voters ...uint64) *pb.Snapshot {
	return &pb.Snapshot{Metadata: &pb.SnapshotMetadata{ConfState: &pb.ConfState{Voters: voters}, Index: new(uint64(1)), Term: new(uint64(1))}}
}

// bootT applies the bootstrap snapshot of a one-voter group to s, as a
// new replica starts: its raft log then starts at index 2, at offset 0.
func bootT(t testing.TB, s *Store) {
	t.Helper()
	if err := s.ApplySnapshot(bootSnap(1)); err != nil {
		t.Fatal(err)
	}
}

// oracleBelow is the oracle of a booted store (bootT) that was given es,
// entries from index 2 on, and whose first index then moved up to first
// by retention or compaction, not by a snapshot: no commit rule
// (memOracle's) applies, and the commit index is the bootstrap
// snapshot's, 1.
func oracleBelow(t testing.TB, es []*pb.Entry, first uint64) memOracle {
	t.Helper()
	o := newOracle()
	if err := o.MemoryStorage.ApplySnapshot(snapAt(first-1, es[first-3].GetTerm())); err != nil {
		t.Fatal(err)
	}
	if err := o.SetHardState(&pb.HardState{Term: new(uint64(0)), Vote: new(uint64(0)), Commit: new(uint64(1))}); err != nil {
		t.Fatal(err)
	}
	if err := o.Append(es[first-2:]); err != nil {
		t.Fatal(err)
	}
	return o
}

// snapAt is a snapshot at index and term with one voter.
func snapAt(index, term uint64) *pb.Snapshot {
	return &pb.Snapshot{Metadata: &pb.SnapshotMetadata{ConfState: &pb.ConfState{Voters: []uint64{1}}, Index: new(index), Term: new(term)}}
}

// writesUnder matches the operations that change files below dir (not
// reads, stats, listings or sizes): the points a power loss may cut.
func writesUnder(dir string) func(vfs.Op) bool {
	return func(op vfs.Op) bool {
		return strings.HasPrefix(op.Path, dir) && op.Kind != vfs.OpRead && op.Kind != vfs.OpStat && op.Kind != vfs.OpList && op.Kind != vfs.OpSize
	}
}

// powerLosses is a filesystem on which, while armed, every operation that
// match accepts (all, when nil) records the machine's state as a power
// loss just before it would leave it (crashtest.Recorder: half the images
// keep random unsynced data).
type powerLosses struct {
	fs  vfs.FS
	mem *vfs.MemFS
	rec *crashtest.Recorder[struct{}]
}

func newPowerLosses(seed uint64, match func(vfs.Op) bool) *powerLosses {
	mem := vfs.NewMem()
	rec := crashtest.New(mem, struct{}{}, nil, crashtest.Options{Rand: rand.New(rand.NewPCG(seed, 1)), KeepUnsynced: 0.5})
	var inj vfs.Injector = rec
	if match != nil {
		inj = vfs.InjectorFunc(func(op vfs.Op) error {
			if match(op) {
				return rec.Inject(op)
			}
			return nil
		})
	}
	return &powerLosses{fs: vfs.Inject(mem, inj), mem: mem, rec: rec}
}

// images disarms p and returns the images recorded, then that of a power
// loss now.
func (p *powerLosses) images() []*vfs.MemFS {
	p.rec.Arm(false)
	var out []*vfs.MemFS
	for _, pt := range p.rec.Take() {
		out = append(out, pt.FS)
	}
	return append(out, p.mem.CrashClone())
}

// batchesIn returns s's batches whose base offset is in [lo, hi).
func batchesIn(t *testing.T, s *Store, lo, hi int64) [][]byte {
	t.Helper()
	var out [][]byte
	for _, b := range seglogtest.Batches(t, s.Log()) {
		if off := record.Batch(b).BaseOffset(); off >= lo && off < hi {
			out = append(out, b)
		}
	}
	return out
}

// sameList checks that got holds want's batches, byte for byte; what
// names the range compared.
func sameList(t *testing.T, label, what string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d batches %s, want %d", label, len(got), what, len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: batch %d %s (offset %d) differs", label, i, what, record.Batch(got[i]).BaseOffset())
		}
	}
}

// sameBatches checks that got's partition is want's, batch for batch,
// from the same start.
func sameBatches(t *testing.T, label string, got, want *Store) {
	t.Helper()
	if a, b := got.Log().StartOffset(), want.Log().StartOffset(); a != b {
		t.Fatalf("%s: the partition starts at %d, the leader's at %d", label, a, b)
	}
	sameList(t, label, "of the partition", seglogtest.Batches(t, got.Log()), seglogtest.Batches(t, want.Log()))
}

// sameFrom checks that s holds the leader's batches from off on.
func sameFrom(t *testing.T, label string, s, leader *Store, off int64) {
	t.Helper()
	sameList(t, label, fmt.Sprintf("from %d", off), batchesIn(t, s, off, math.MaxInt64), batchesIn(t, leader, off, math.MaxInt64))
}

// sameUpTo checks that s holds the leader's batches from the leader's
// start up to off, where it ends.
func sameUpTo(t *testing.T, label string, s, leader *Store, off int64) {
	t.Helper()
	if a, b := s.Log().StartOffset(), leader.Log().StartOffset(); a != b || s.Log().EndOffset() != off {
		t.Fatalf("%s: the partition holds [%d, %d), want the leader's from %d to %d", label, a, s.Log().EndOffset(), b, off)
	}
	sameList(t, label, fmt.Sprintf("below %d", off), seglogtest.Batches(t, s.Log()), batchesIn(t, leader, 0, off))
}

// keptBelow checks that s still holds, byte for byte, the batches it had
// below the cut before an install, from offset 0.
func keptBelow(t *testing.T, label string, s *Store, want [][]byte, cut int64) {
	t.Helper()
	if start := s.Log().StartOffset(); start != 0 {
		t.Fatalf("%s: the partition starts at %d, had its batches from 0", label, start)
	}
	sameList(t, label, fmt.Sprintf("below the cut %d", cut), batchesIn(t, s, 0, cut), want)
}

// installCase is pair's leader with its raft log moved past the
// follower's (CompactTo), its snapshot, and where the follower's
// committed entries end (the cut). With restart, the leader's retention
// first deleted its first two segments, past the follower's end, so the
// copy restarts the follower's partition at the leader's start.
func installCase(t *testing.T, fs vfs.FS, restart bool) (leader, follower *Store, es []*pb.Entry, snap *pb.Snapshot, cut int64) {
	t.Helper()
	leader, follower, es = pair(t, fs)
	if restart {
		segs := leader.Log().Segments()
		if _, err := leader.p.(*seglog.Log).DeleteBefore(segs[2].BaseOffset); err != nil {
			t.Fatal(err)
		}
		if end, start := follower.Log().EndOffset(), leader.Log().StartOffset(); end >= start {
			t.Fatalf("the follower ends at %d, the leader starts at %d", end, start)
		}
	}
	if _, err := leader.CompactTo(50); err != nil {
		t.Fatal(err)
	}
	snap, err := leader.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot ends past the log start: there is data to copy.
	if end, _ := decodeSnapData(snap.GetData()); end <= leader.Log().StartOffset() {
		t.Fatalf("the snapshot ends at %d, the leader's start", end)
	}
	if cut, err = follower.HighWatermark(10); err != nil {
		t.Fatal(err)
	}
	return leader, follower, es, snap, cut
}
