package seglog

import (
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestZeroTimestampFirstBatch: a sealed segment whose first batch is one
// offset with max timestamp 0 (a producer's, stored as it came) has the
// time-index entry (0, 0), twelve zero bytes, as Kafka writes it; fsck
// (filesystems' check at the end) must take it for the entry, not for
// zero fill, which it reported as untrimmed with the entry missing.
func TestZeroTimestampFirstBatch(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{MaxIndexBytes: 4096}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(record.Record{Value: []byte("v"), Timestamp: 7}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := l.Roll(); err != nil {
				t.Fatal(err)
			}
			bld := record.NewBuilder(record.None)
			bld.SetBaseOffset(l.EndOffset())
			if err := bld.Add(record.Record{Offset: l.EndOffset(), Value: []byte("v"), Timestamp: 0}); err != nil {
				t.Fatal(err)
			}
			b, err := bld.Build()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendEpochBatches([]int32{0}, [][]byte{b}); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
