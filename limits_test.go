package seglog

import (
	"errors"
	"math/rand"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestSetLimits changes an open Log's segment size, batch limit and codec:
// the next appends roll, refuse and compress by the new values, and the
// batches stored under the old ones stay readable.
func TestSetLimits(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		big := record.Record{Value: []byte(strings.Repeat("x", 3000))}
		for range 4 {
			if _, err := l.Append(big); err != nil {
				t.Fatal(err)
			}
		}
		if n := l.NumSegments(); n != 1 {
			t.Fatalf("%d segments before SetLimits", n)
		}
		if err := l.SetLimits(Limits{SegmentBytes: 4000, MaxBatchBytes: 3500, Compression: record.Gzip}); err != nil {
			t.Fatal(err)
		}
		// Uncompressible past 3500 bytes: refused by the new limit.
		noise := make([]byte, 4000)
		rand.New(rand.NewSource(1)).Read(noise)
		huge := record.Record{Value: noise}
		if _, err := l.Append(huge); !errors.Is(err, ErrBatchTooLarge) {
			t.Fatalf("append past the new MaxBatchBytes: %v", err)
		}
		for range 3 {
			if _, err := l.Append(big); err != nil {
				t.Fatal(err)
			}
		}
		// The first of these rolled the 12 KB segment; the others, gzip
		// compressed to a few dozen bytes, share the new one.
		if n := l.NumSegments(); n != 2 {
			t.Errorf("%d segments after SetLimits, want 2", n)
		}
		var got int
		for r, err := range l.Records(0) {
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Value) != 3000 {
				t.Fatalf("record %d: %d bytes", r.Offset, len(r.Value))
			}
			got++
		}
		if got != 7 {
			t.Errorf("read %d records, want 7", got)
		}
		if err := l.SetLimits(Limits{SegmentBytes: 1000, MaxBatchBytes: 2000}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("batch limit above the segment size: %v", err)
		}
	})
}
