package seglog

import (
	"bytes"
	"errors"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// sliceBatches reads a slice into memory and splits it into validated
// batches.
func sliceBatches(t *testing.T, s *Slice) []record.Batch {
	t.Helper()
	var buf bytes.Buffer
	n, err := s.WriteTo(&buf)
	if err != nil || n != s.Len() {
		t.Fatalf("WriteTo: %d of %d bytes, %v", n, s.Len(), err)
	}
	var out []record.Batch
	data := buf.Bytes()
	for len(data) > 0 {
		size, _, err := record.PeekEntry(data)
		if err != nil || size > len(data) {
			t.Fatalf("slice does not hold whole batches: size %d, %d left, %v", size, len(data), err)
		}
		b := record.Batch(data[:size])
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		data = data[size:]
	}
	return out
}

func TestReadBoundaries(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 6 << 10, IndexIntervalBytes: 300, MaxIndexBytes: 4096}, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for l.NumSegments() < 4 {
			if _, err := l.Append(recordsAt(l.EndOffset(), 1+int(l.EndOffset()%5))...); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.DeleteBefore(3); err != nil {
			t.Fatal(err)
		}
		start, end := l.StartOffset(), l.EndOffset()
		bases := map[int64]bool{}
		l.segs.tree.Ascend(func(it segItem) bool { bases[it.base] = true; return true })

		for off := start; off < end; off++ {
			// maxBytes below any batch: exactly the batch holding off.
			s, err := l.Read(off, 1, ReadOptions{})
			if err != nil {
				t.Fatalf("Read(%d): %v", off, err)
			}
			bs := sliceBatches(t, s)
			if len(bs) != 1 || bs[0].BaseOffset() > off || bs[0].LastOffset() < off {
				t.Fatalf("Read(%d, 1): %d batches, first [%d, %d]", off, len(bs), bs[0].BaseOffset(), bs[0].LastOffset())
			}
			if s.FirstOffset() != bs[0].BaseOffset() || s.LastOffset() != bs[0].LastOffset() {
				t.Fatalf("Read(%d): slice says [%d, %d], holds [%d, %d]", off, s.FirstOffset(), s.LastOffset(), bs[0].BaseOffset(), bs[0].LastOffset())
			}
			s.Close()

			// Unlimited: to the end of the segment holding off, never past.
			s, err = l.Read(off, 1<<30, ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			bs = sliceBatches(t, s)
			lastB := bs[len(bs)-1]
			if nb := lastB.NextOffset(); nb != end && !bases[nb] {
				t.Fatalf("Read(%d) ends at %d: neither a segment boundary nor the end", off, nb)
			}
			if bases[off] && s.Position() != 0 {
				t.Fatalf("Read(%d) at a segment base starts at byte %d", off, s.Position())
			}
			s.Close()

			// Bounded: never reaches the bound, ends on a batch.
			bound := off + 3
			s, err = l.Read(off, 1<<30, ReadOptions{UpperBound: bound, Bounded: true})
			if err != nil {
				t.Fatal(err)
			}
			if s.Len() > 0 {
				bs = sliceBatches(t, s)
				if bs[len(bs)-1].LastOffset() >= bound || s.LastOffset() >= bound {
					t.Fatalf("Read(%d) bounded by %d reaches %d", off, bound, bs[len(bs)-1].LastOffset())
				}
			}
			s.Close()
		}
		// A maxBytes between batch sizes ends on a whole batch.
		s, err := l.Read(start, 700, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if bs := sliceBatches(t, s); s.Len() > 700 && len(bs) > 1 {
			t.Fatalf("Read(max 700) returned %d bytes in %d batches", s.Len(), len(bs))
		}
		s.Close()
		for _, off := range []int64{start - 1, end + 1} {
			if _, err := l.Read(off, 100, ReadOptions{}); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("Read(%d) outside [%d, %d]: %v", off, start, end, err)
			}
		}
		s, err = l.Read(end, 100, ReadOptions{})
		if err != nil || s.Len() != 0 {
			t.Fatalf("Read(end): %d bytes, %v", s.Len(), err)
		}
	})
}

// TestSliceOutlivesRemoval: a slice keeps sending the bytes of a segment
// that retention removed; the files go when the slice is closed. A slice
// cut by TruncateTo refuses to send.
func TestSliceOutlivesRemoval(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 4 << 10, MaxIndexBytes: 4096}, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for l.NumSegments() < 3 {
			if _, err := l.Append(recordsAt(l.EndOffset(), 3)...); err != nil {
				t.Fatal(err)
			}
		}
		s, err := l.Read(0, 1<<20, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var before bytes.Buffer
		if _, err := s.WriteTo(&before); err != nil {
			t.Fatal(err)
		}
		path := s.File()
		if _, err := l.DeleteBefore(l.EndOffset() - 1); err != nil {
			t.Fatal(err)
		}
		if l.StartOffset() != l.EndOffset()-1 {
			t.Fatalf("start %d", l.StartOffset())
		}
		var after bytes.Buffer
		if _, err := s.WriteTo(&after); err != nil {
			t.Fatalf("WriteTo after removal: %v", err)
		}
		if !bytes.Equal(before.Bytes(), after.Bytes()) {
			t.Fatal("slice bytes changed after its segment was removed")
		}
		if _, err := fs.Stat(path); err == nil {
			t.Fatalf("%s still exists under its old name", path)
		}
		deleted := s.File()
		s.Close()
		// The background flusher may hold the last reference for a moment.
		testutil.WaitFor(t, deleted+" is unlinked after the last slice closed", func() bool {
			_, err := fs.Stat(deleted)
			return err != nil
		})

		// Truncation below a slice in flight.
		for l.NumSegments() < 2 {
			if _, err := l.Append(recordsAt(l.EndOffset(), 3)...); err != nil {
				t.Fatal(err)
			}
		}
		s, err = l.Read(l.EndOffset()-1, 1<<20, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.TruncateTo(s.FirstOffset()); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteTo(&bytes.Buffer{}); !errors.Is(err, ErrSliceTruncated) {
			t.Fatalf("WriteTo of a truncated slice: %v, want ErrSliceTruncated", err)
		}
		s.Close()
	})
}

// TestSliceOutlivesClose: a slice made before Close still sends its bytes
// afterwards (the segment keeps its descriptor while the slice holds it),
// and closing the slice then releases the descriptor.
func TestSliceOutlivesClose(t *testing.T) {
	dir := t.TempDir()
	fds := openFds(t)
	l, err := Open(dir, Options{LogConfig: LogConfig{MaxIndexBytes: 4096}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recordsAt(0, 5)...); err != nil {
		t.Fatal(err)
	}
	s, err := l.Read(0, 1<<20, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var before bytes.Buffer
	if _, err := s.WriteTo(&before); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var after bytes.Buffer
	if _, err := s.WriteTo(&after); err != nil {
		t.Fatalf("WriteTo after the log closed: %v", err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) || after.Len() == 0 {
		t.Fatal("slice bytes changed when the log closed")
	}
	s.Close()
	if got := openFds(t); got > fds {
		t.Fatalf("%d descriptors open after the last slice closed, %d before", got, fds)
	}
	fscktest.CheckClean(t, vfs.Default, dir)
}
