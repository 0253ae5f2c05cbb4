package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testSegmentBytes is small, so a few dozen entries span several
// segments and their anchors.
const testSegmentBytes = 1 << 10

func openT(t testing.TB, fs vfs.FS, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{FS: fs, SegmentBytes: testSegmentBytes, Logger: quiet, maxIndexBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// producerBatch builds a producer's batch of n records (base offset 0,
// as a client sends it) whose values name index.
func producerBatch(t testing.TB, index uint64, n int, ts int64) []byte {
	t.Helper()
	bld := record.NewBuilder(record.None)
	for i := range n {
		if err := bld.Add(record.Record{Offset: int64(i), Timestamp: ts, Key: []byte("k"), Value: []byte(fmt.Sprintf("entry %d record %d", index, i))}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), b...)
}

// entries makes the entries [lo, hi] of term: mostly commands of one to
// three records (how many depends on the term too, so an entry re-appended
// in a newer term moves the offsets after it), with a no-op, a
// configuration and a barrier among them.
// AppendedAt is what the store gives back (whole milliseconds), so the
// oracle's entries compare equal.
func entries(t testing.TB, lo, hi, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := lo; i <= hi; i++ {
		ms := int64(1_700_000_000_000 + i)
		l := &raft.Log{Index: i, Term: term, AppendedAt: time.UnixMilli(ms)}
		switch i % 7 {
		case 3:
			l.Type = raft.LogNoop
		case 5:
			l.Type, l.Data, l.Extensions = raft.LogConfiguration, []byte(fmt.Sprintf("configuration %d", i)), []byte("ext")
		case 6:
			l.Type = raft.LogBarrier
		default:
			l.Type, l.Data = raft.LogCommand, producerBatch(t, i, int((i+term)%3)+1, ms)
		}
		out = append(out, l)
	}
	return out
}

// sameEntry compares an entry the store returned with the oracle's: a
// command's batch differs only by its stamped base offset and epoch.
func sameEntry(got, want *raft.Log) error {
	if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type || !got.AppendedAt.Equal(want.AppendedAt) || !bytes.Equal(got.Extensions, want.Extensions) {
		return fmt.Errorf("got index %d term %d type %v at %v ext %q, want %d %d %v %v %q",
			got.Index, got.Term, got.Type, got.AppendedAt, got.Extensions, want.Index, want.Term, want.Type, want.AppendedAt, want.Extensions)
	}
	if got.Type != raft.LogCommand {
		if !bytes.Equal(got.Data, want.Data) {
			return fmt.Errorf("entry %d: data %q, want %q", got.Index, got.Data, want.Data)
		}
		return nil
	}
	b := record.Batch(bytes.Clone(got.Data))
	if int64(b.PartitionLeaderEpoch()) != int64(got.Term) {
		return fmt.Errorf("entry %d: batch epoch %d, term %d", got.Index, b.PartitionLeaderEpoch(), got.Term)
	}
	b.AssignOffsets(0, record.Batch(want.Data).PartitionLeaderEpoch())
	if !bytes.Equal(b, want.Data) {
		return fmt.Errorf("entry %d: the batch's bytes changed beyond its base offset and epoch", got.Index)
	}
	return nil
}

// compareStores checks that s holds exactly the oracle's entries: bounds,
// every entry, and raft.ErrLogNotFound itself (raft compares with ==)
// just outside them.
func compareStores(t testing.TB, label string, s raft.LogStore, oracle raft.LogStore) {
	t.Helper()
	first, err := s.FirstIndex()
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	last, err := s.LastIndex()
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	wf, _ := oracle.FirstIndex()
	wl, _ := oracle.LastIndex()
	if first != wf || last != wl {
		t.Fatalf("%s: [%d, %d], oracle [%d, %d]", label, first, last, wf, wl)
	}
	for i := first; i <= last && last != 0; i++ {
		var got, want raft.Log
		if err := s.GetLog(i, &got); err != nil {
			t.Fatalf("%s: GetLog(%d): %v", label, i, err)
		}
		if err := oracle.GetLog(i, &want); err != nil {
			t.Fatalf("%s: oracle GetLog(%d): %v", label, i, err)
		}
		if err := sameEntry(&got, &want); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
	}
	for _, i := range []uint64{0, first - 1, last + 1, last + 1000} {
		var l raft.Log
		if i >= first && i <= last && last != 0 {
			continue
		}
		if err := s.GetLog(i, &l); err != raft.ErrLogNotFound { //nolint:errorlint // raft compares with ==
			t.Fatalf("%s: GetLog(%d) outside [%d, %d]: %v, want raft.ErrLogNotFound itself", label, i, first, last, err)
		}
	}
}

// copyInto stores every entry of s into dst (an InmemStore).
func copyInto(t testing.TB, s raft.LogStore, dst raft.LogStore) {
	t.Helper()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	for i := first; i <= last && last != 0; i++ {
		l := new(raft.Log)
		if err := s.GetLog(i, l); err != nil {
			t.Fatal(err)
		}
		// The oracle holds the bytes as given: undo the stamping.
		if l.Type == raft.LogCommand {
			record.Batch(l.Data).AssignOffsets(0, 0)
		}
		if err := dst.StoreLog(l); err != nil {
			t.Fatal(err)
		}
	}
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
				want = append(want, layout.EpochLine{Epoch: e.Batch.PartitionLeaderEpoch(), StartOffset: e.BaseOffset()})
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
