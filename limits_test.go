package seglog

import (
	"bytes"
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
		// A batch limit above the segment size is Kafka's default
		// (TestBatchLargerThanSegment).
		if err := l.SetLimits(Limits{SegmentBytes: 1000, MaxBatchBytes: 2000}); err != nil {
			t.Errorf("batch limit above the segment size: %v", err)
		}
		if err := l.SetLimits(Limits{SegmentBytes: 10}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("segment size below a batch header: %v", err)
		}
	})
}

// TestBatchLargerThanSegment: a batch larger than SegmentBytes (within
// MaxBatchBytes) is stored alone in a segment of its own, as Kafka does,
// by Append and by the replicated AppendEpochBatches; the next batch
// rolls again, and everything reads back after a reopen with nothing
// quarantined.
func TestBatchLargerThanSegment(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		opts := Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 4096, MaxBatchBytes: 64 << 10, MaxIndexBytes: 4096},
			OnQuarantine: func(q Quarantine) { t.Errorf("quarantined %+v", q) }}
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		noise := make([]byte, 20000)
		rand.New(rand.NewSource(2)).Read(noise)
		small := record.Record{Value: []byte("small"), Timestamp: 1_700_000_000_000}
		want := [][]byte{small.Value, noise, small.Value, noise, small.Value}
		for i, v := range want[:3] {
			if _, err := l.Append(record.Record{Value: v, Timestamp: small.Timestamp}); err != nil {
				t.Fatalf("append %d (%d bytes): %v", i, len(v), err)
			}
		}
		bld := record.NewBuilder(record.None)
		bld.SetBaseOffset(l.EndOffset())
		if err := bld.Add(record.Record{Offset: l.EndOffset(), Value: noise, Timestamp: small.Timestamp}); err != nil {
			t.Fatal(err)
		}
		big, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendEpochBatches([]int32{0}, [][]byte{big}); err != nil {
			t.Fatalf("replicated batch of %d bytes over a 4096-byte segment: %v", len(big), err)
		}
		if _, err := l.Append(small); err != nil {
			t.Fatal(err)
		}
		check := func(l *Log) {
			t.Helper()
			segs := l.Segments()
			if len(segs) != 5 {
				t.Fatalf("%d segments, want 5 (each large batch alone, each small one after it in a new one): %+v", len(segs), segs)
			}
			for i, s := range segs {
				if s.BaseOffset != int64(i) {
					t.Errorf("segment %d starts at %d", i, s.BaseOffset)
				}
			}
			i := 0
			for r, err := range l.Records(0) {
				if err != nil {
					t.Fatal(err)
				}
				if r.Offset != int64(i) || !bytes.Equal(r.Value, want[i]) {
					t.Fatalf("record %d: offset %d, %d bytes", i, r.Offset, len(r.Value))
				}
				i++
			}
			if i != len(want) {
				t.Fatalf("read %d records, want %d", i, len(want))
			}
		}
		check(l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		// A large batch as the first of a log goes into the empty
		// active segment (roll keeps an empty segment at the same base).
		first, err := Open(dir+"-first", opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := first.Append(record.Record{Value: noise, Timestamp: small.Timestamp}); err != nil {
			t.Fatalf("a large batch first: %v", err)
		}
		if n := first.NumSegments(); n != 1 {
			t.Errorf("%d segments after a large first batch, want 1", n)
		}
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		l, err = Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		check(l)
	})
}

// TestReplicatedBatchAboveMaxBatchBytes: a replica keeps what its leader
// accepted: AppendEpochBatches and AppendAsFollower store a batch larger
// than MaxBatchBytes (the limit lowered after the leader took it, say),
// which reads back, also after a reopen whose Options have the lower
// limit; Append still refuses one.
func TestReplicatedBatchAboveMaxBatchBytes(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		opts := Options{FS: fs, LogConfig: LogConfig{MaxBatchBytes: 1000, MaxIndexBytes: 4096}}
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		noise := make([]byte, 5000)
		rand.New(rand.NewSource(3)).Read(noise)
		build := func(base int64) []byte {
			bld := record.NewBuilder(record.None)
			bld.SetBaseOffset(base)
			if err := bld.Add(record.Record{Offset: base, Value: noise, Timestamp: 1_700_000_000_000}); err != nil {
				t.Fatal(err)
			}
			b, err := bld.Build()
			if err != nil {
				t.Fatal(err)
			}
			return bytes.Clone(b)
		}
		if _, err := l.Append(record.Record{Value: noise}); !errors.Is(err, ErrBatchTooLarge) {
			t.Fatalf("Append of 5000 bytes over a 1000-byte limit: %v", err)
		}
		if _, err := l.AppendEpochBatches([]int32{1}, [][]byte{build(0)}); err != nil {
			t.Fatalf("a replicated batch over MaxBatchBytes: %v", err)
		}
		if _, err := l.AppendAsFollower([][]byte{build(1)}); err != nil {
			t.Fatalf("a follower's batch over MaxBatchBytes: %v", err)
		}
		check := func(l *Log) {
			t.Helper()
			n := 0
			for r, err := range l.Records(0) {
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(r.Value, noise) {
					t.Fatalf("offset %d: %d bytes", r.Offset, len(r.Value))
				}
				n++
			}
			if n != 2 {
				t.Fatalf("read %d records, want 2", n)
			}
		}
		check(l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if l, err = Open(dir, opts); err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		check(l)
	})
}

// TestRaisedBatchLimitAppliesAtOnce: SetLimits raising MaxBatchBytes (a
// topic's max.message.bytes altered up) takes a larger batch at the next
// append; the active segment, made under the lower limit, refused it
// until it rolled.
func TestRaisedBatchLimitAppliesAtOnce(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{MaxBatchBytes: 1000, MaxIndexBytes: 4096}})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.Append(record.Record{Value: []byte("a")}); err != nil {
			t.Fatal(err)
		}
		noise := make([]byte, 5000)
		rand.New(rand.NewSource(4)).Read(noise)
		if _, err := l.Append(record.Record{Value: noise}); !errors.Is(err, ErrBatchTooLarge) {
			t.Fatalf("5000 bytes under a 1000-byte limit: %v", err)
		}
		if err := l.SetLimits(Limits{MaxBatchBytes: 10000}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(record.Record{Value: noise}); err != nil {
			t.Fatalf("5000 bytes once the limit is 10000: %v", err)
		}
		if n := l.NumSegments(); n != 1 {
			t.Errorf("%d segments: the larger batch needed no roll", n)
		}
	})
}
