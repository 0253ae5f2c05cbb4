package replica

import (
	"bytes"
	"sync"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// TestEndOffsetForEpoch: Kafka's answers to OffsetForLeaderEpoch, from
// the epochs the entries' terms gave the partition.
func TestEndOffsetForEpoch(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/data/t-0")
	defer closeT(t, s)
	if ep, off, err := s.EndOffsetForEpoch(1); err != nil || ep != -1 || off != -1 {
		t.Fatalf("empty: %d, %d, %v", ep, off, err)
	}
	bootT(t, s)
	start4, start6 := appendThreeTerms(t, s)
	end := s.Log().EndOffset()
	for _, c := range []struct {
		ask, epoch int32
		off        int64
	}{
		{6, 6, end}, {5, 4, start6}, {4, 4, start6}, {3, 2, start4}, {2, 2, start4},
		{1, 1, 0}, {7, -1, -1}, {-1, -1, -1},
	} {
		ep, off, err := s.EndOffsetForEpoch(c.ask)
		if err != nil || ep != c.epoch || off != c.off {
			t.Errorf("EndOffsetForEpoch(%d) = %d, %d, %v; want %d, %d", c.ask, ep, off, err, c.epoch, c.off)
		}
	}
}

// TestReadersBesideAppends: the partition manager reads high watermarks
// and offsets on other goroutines while the driver appends; a high
// watermark is never past what the partition holds, and an entry's offset
// never changes (run with -race).
func TestReadersBesideAppends(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/data/t-0")
	defer closeT(t, s)
	bootT(t, s)
	const last = 200
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[uint64]int64{}
			for i := uint64(0); ; i++ {
				select {
				case <-done:
					return
				default:
				}
				top, _ := s.LastIndex()
				hw, err := s.HighWatermark(top)
				if err != nil {
					t.Error(err)
					return
				}
				if end := s.Log().EndOffset(); hw > end {
					t.Errorf("high watermark %d past the partition's end %d", hw, end)
					return
				}
				if top < 2 {
					continue
				}
				j := 2 + i%(top-1)
				off, err := s.Offset(j)
				if err != nil {
					t.Error(err)
					return
				}
				if was, ok := seen[j]; ok && was != off {
					t.Errorf("entry %d moved from offset %d to %d", j, was, off)
					return
				}
				seen[j] = off
			}
		}()
	}
	for lo := uint64(2); lo <= last; lo += 5 {
		if err := s.Append(entries(t, lo, lo+4, 1)); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
}

// TestEpochsFollowRetention: retention moves the partition's start
// without telling the Store. OffsetForLeaderEpoch answers as Kafka's
// trimmed cache would at once, without writing (a read), and the Store's
// next write trims the leader-epoch-checkpoint to match the batches.
func TestEpochsFollowRetention(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, "/data/t-0")
	defer closeT(t, s)
	bootT(t, s)
	start4, start6 := appendThreeTerms(t, s)
	// Retention's cut, a record into epoch 4.
	cut := start4 + 1
	if _, err := s.p.DeleteBefore(cut); err != nil {
		t.Fatal(err)
	}
	before := readEpochFile(t, fs, s)
	for _, c := range []struct {
		ask, epoch int32
		off        int64
	}{
		// Epochs 1 and 2 lie wholly below the start: below every epoch
		// kept, each is answered with itself and the start.
		{1, 1, cut}, {2, 2, cut}, {3, 3, cut}, {4, 4, start6}, {5, 4, start6},
		{6, 6, s.Log().EndOffset()},
	} {
		ep, off, err := s.EndOffsetForEpoch(c.ask)
		if err != nil || ep != c.epoch || off != c.off {
			t.Errorf("EndOffsetForEpoch(%d) after retention = %d, %d, %v; want %d, %d", c.ask, ep, off, err, c.epoch, c.off)
		}
	}
	if after := readEpochFile(t, fs, s); !bytes.Equal(after, before) {
		t.Fatalf("answering OffsetForLeaderEpoch rewrote the checkpoint:\n%s\nwas\n%s", after, before)
	}
	if err := s.Append(entries(t, 26, 30, 6)); err != nil {
		t.Fatal(err)
	}
	checkEpochs(t, "the next write after retention", fs, s)
}

func readEpochFile(t *testing.T, fs vfs.FS, s *Store) []byte {
	t.Helper()
	data, err := vfs.ReadFileLimit(fs, s.epochs.Path(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// appendThreeTerms appends entries 2 to 25 in terms 2, 4 and 6 (each term
// its epoch) and returns where epochs 4 and 6 start.
func appendThreeTerms(t *testing.T, s *Store) (start4, start6 int64) {
	t.Helper()
	for _, r := range [][3]uint64{{2, 10, 2}, {11, 20, 4}, {21, 25, 6}} {
		if err := s.Append(entries(t, r[0], r[1], r[2])); err != nil {
			t.Fatal(err)
		}
	}
	start4, _ = s.Offset(11)
	start6, _ = s.Offset(21)
	return start4, start6
}
