package replica

import (
	"bytes"
	"sync"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
)

// TestStampBeforeAppend: Stamp writes into a leader's new entries the
// offsets and epochs Append gives them, so that Append then stores them
// without writing into their bytes, which the driver's messages may be
// sending meanwhile (under -race, the reader below makes any write a
// reported race); the stored batches are the stamped bytes. Entries that
// are not the next ones are left alone.
func TestStampBeforeAppend(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, "/data/t-0")
	defer closeT(t, s)
	if err := s.ApplySnapshot(bootSnap(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(entries(t, 2, 10, 1)); err != nil {
		t.Fatal(err)
	}
	// Not the next entries: nothing is stamped.
	gap := entries(t, 20, 22, 2)
	before := cloneData(gap)
	s.Stamp(gap)
	for i, e := range gap {
		if !bytes.Equal(e.GetData(), before[i]) {
			t.Fatalf("entry %d stamped though it does not follow the log", e.GetIndex())
		}
	}

	next := entries(t, 11, 30, 2)
	s.Stamp(next)
	stamped := cloneData(next)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // a sender writing the entries to a peer
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, e := range next {
				_ = bytes.Clone(e.GetData())
			}
		}
	}()
	err := s.Append(next)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Entries(11, 31, ^uint64(0))
	if err != nil {
		t.Fatal(err)
	}
	off := int64(-1)
	for i, e := range next {
		if !bytes.Equal(e.GetData(), stamped[i]) {
			t.Fatalf("entry %d: Append wrote into a stamped batch", e.GetIndex())
		}
		if !isProducer(e) {
			if !isEmpty(e) && off >= 0 {
				off++ // raft's own entry: a control batch of one record
			}
			continue
		}
		b := record.Batch(e.GetData())
		if b.PartitionLeaderEpoch() != 2 || (off >= 0 && b.BaseOffset() != off) {
			t.Fatalf("entry %d: stamped at offset %d epoch %d, want offset %d epoch 2", e.GetIndex(), b.BaseOffset(), b.PartitionLeaderEpoch(), off)
		}
		if !bytes.Equal(got[i].GetData(), e.GetData()) {
			t.Fatalf("entry %d: stored %x, stamped %x", e.GetIndex(), got[i].GetData()[:16], e.GetData()[:16])
		}
		off = b.BaseOffset() + int64(b.LastOffsetDelta()) + 1
	}
	if off != s.log.EndOffset() {
		t.Fatalf("the stamps end at offset %d, the log at %d", off, s.log.EndOffset())
	}
}

func cloneData(ents []*pb.Entry) [][]byte {
	out := make([][]byte, len(ents))
	for i, e := range ents {
		out[i] = bytes.Clone(e.GetData())
	}
	return out
}
