package segment

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// FuzzRecover feeds arbitrary bytes to recovery as a segment's .log, with
// no index files: it must never panic, must keep exactly a prefix of whole
// valid batches with increasing offsets, and must leave a segment whose
// lookups agree with a scan of that prefix; what it cuts is kept byte for
// byte in a quarantine file whenever a valid entry follows the damage.
func FuzzRecover(f *testing.F) {
	for _, codec := range []string{"none", "zstd"} {
		data := readCorpus(f, filepath.Join("..", "testdata", "kafka-client", codec+".broker-log"))
		f.Add(data[:min(len(data), 40000)])
		f.Add(data[:min(len(data), 3000)])
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/s"); err != nil {
			t.Fatal(err)
		}
		w, err := fs.Create(filepath.Join("/s", FileName(0, LogSuffix)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		opts := Options{IndexIntervalBytes: 256, MaxIndexBytes: 4096, MaxBatchBytes: 1 << 20}
		s, err := Open(fs, "/s", 0, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.Recover(RecoverOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.ValidBytes < 0 || res.ValidBytes > int64(len(data)) || res.ValidBytes+res.TruncatedBytes != int64(len(data)) {
			t.Fatalf("recovered %d + truncated %d of %d bytes", res.ValidBytes, res.TruncatedBytes, len(data))
		}
		if s.Size() != res.ValidBytes {
			t.Fatalf("size %d after recovery, valid %d", s.Size(), res.ValidBytes)
		}
		// What stays is whole batches, each valid, offsets increasing.
		var batches []BatchPosition
		last := int64(-1)
		for b, err := range s.Batches(0, s.Size()) {
			if err != nil {
				t.Fatalf("recovered segment does not read back: %v", err)
			}
			if b.LastOffset() <= last {
				t.Fatalf("offsets do not increase: %d after %d", b.LastOffset(), last)
			}
			last = b.LastOffset()
			batches = append(batches, BatchPosition{BaseOffset: b.BaseOffset(), LastOffset: b.LastOffset()})
		}
		if last >= 0 && s.NextOffset() != last+1 {
			t.Fatalf("next offset %d, last batch ends at %d", s.NextOffset(), last)
		}
		for _, b := range batches {
			bp, ok, err := s.FindPosition(b.LastOffset)
			if err != nil || !ok || bp.LastOffset != b.LastOffset {
				t.Fatalf("FindPosition(%d) = %+v, %v, %v", b.LastOffset, bp, ok, err)
			}
		}
		if !bytes.Equal(vfstest.ReadFile(t, fs, s.LogPath()), data[:res.ValidBytes]) {
			t.Fatal("recovery changed bytes it kept")
		}
		// What it cut is either a torn tail (no valid entry in it) or kept
		// byte for byte in a quarantine file.
		if keep := res.Reason != nil && res.AfterDamage.HoldsValid(); keep != (res.Quarantine != nil) {
			t.Fatalf("after damage %+v, quarantine %+v", res.AfterDamage, res.Quarantine)
		} else if keep && !bytes.Equal(vfstest.ReadFile(t, fs, res.Quarantine.File), data[res.ValidBytes:]) {
			t.Fatal("the quarantine file does not hold the cut bytes")
		}
		if res.Reason != nil && (res.AfterDamage.Pos != res.ValidBytes || res.AfterDamage.Bytes != res.TruncatedBytes) {
			t.Fatalf("after damage %+v, cut %d bytes at %d", res.AfterDamage, res.TruncatedBytes, res.ValidBytes)
		}
		if res.Reason != nil && !errors.Is(res.Reason, ErrTornTail) && !errors.Is(res.Reason, record.ErrCorrupt) &&
			!errors.Is(res.Reason, record.ErrTooLarge) && !errors.Is(res.Reason, record.ErrUnsupportedMagic) && !errors.Is(res.Reason, ErrOffsetOrder) {
			t.Fatalf("untyped reason: %v", res.Reason)
		}
	})
}

func readCorpus(tb testing.TB, path string) []byte {
	return vfstest.ReadFile(tb, vfs.Default, path)
}
