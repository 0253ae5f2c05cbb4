package seglog

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestKafkaLayout checks the files a closed log leaves, decoding them with
// nothing but encoding/binary: every .index holds trimmed 8-byte big-endian
// entries mapping a batch's last offset to the position where that batch
// starts, spaced by Kafka's index-interval rule; every .timeindex holds
// trimmed 12-byte entries whose timestamps are the running maximum, the
// last one the segment's maximum.
func TestKafkaLayout(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		const interval = 700
		l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 20 << 10, IndexIntervalBytes: interval, MaxIndexBytes: 4096}, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		ts := int64(5_000)
		for i := 0; i < 300; i++ {
			n := 1 + i%4
			recs := recordsAt(l.EndOffset(), n)
			for j := range recs {
				ts += int64((i*7+j*3)%11) - 4 // non-monotonic
				recs[j].Timestamp = ts
			}
			if _, err := l.Append(recs...); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		names, err := fs.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		segments := 0
		for _, n := range names {
			base, suffix, ok := segment.ParseFileName(n)
			if !ok || suffix != segment.LogSuffix {
				continue
			}
			segments++
			checkSegmentFiles(t, fs, dir, base, interval)
		}
		if segments < 3 {
			t.Fatalf("%d segments; want several", segments)
		}
		for _, f := range []string{RecoveryPointFile, LogStartOffsetFile, CleanShutdownFile} {
			if _, err := fs.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("after Close: %s: %v", f, err)
			}
		}
	})
}

type batchInfo struct {
	pos, size   int64
	last, maxTS int64
}

func checkSegmentFiles(t *testing.T, fs vfs.FS, dir string, base int64, interval int64) {
	t.Helper()
	read := func(suffix string) []byte {
		return vfstest.ReadFile(t, fs, filepath.Join(dir, segment.FileName(base, suffix)))
	}
	logBytes := read(segment.LogSuffix)
	var batches []batchInfo
	for pos := int64(0); pos < int64(len(logBytes)); {
		b := record.Batch(logBytes[pos:])
		if err := b[:b.Size()].Validate(); err != nil {
			t.Fatalf("segment %d at %d: %v", base, pos, err)
		}
		batches = append(batches, batchInfo{pos: pos, size: int64(b.Size()), last: b.LastOffset(), maxTS: b.MaxTimestamp()})
		pos += int64(b.Size())
	}
	// Expected entries by Kafka's rule, computed independently.
	type offEntry struct{ rel, pos int32 }
	type timeEntry struct {
		ts  int64
		rel int32
	}
	var wantOff []offEntry
	var wantTime []timeEntry
	since := int64(0)
	maxTS, maxOff := int64(-1), base
	for _, b := range batches {
		if b.maxTS > maxTS {
			maxTS, maxOff = b.maxTS, b.last
		}
		if since > interval {
			wantOff = append(wantOff, offEntry{int32(b.last - base), int32(b.pos)})
			if len(wantTime) == 0 || maxTS > wantTime[len(wantTime)-1].ts {
				wantTime = append(wantTime, timeEntry{maxTS, int32(maxOff - base)})
			}
			since = 0
		}
		since += b.size
	}
	if len(wantTime) == 0 || maxTS > wantTime[len(wantTime)-1].ts {
		wantTime = append(wantTime, timeEntry{maxTS, int32(maxOff - base)})
	}
	idx := read(segment.IndexSuffix)
	if len(idx) != 8*len(wantOff) {
		t.Fatalf("segment %d: .index is %d bytes, want %d trimmed entries", base, len(idx), len(wantOff))
	}
	for i, w := range wantOff {
		rel := int32(binary.BigEndian.Uint32(idx[8*i:]))
		pos := int32(binary.BigEndian.Uint32(idx[8*i+4:]))
		if rel != w.rel || pos != w.pos {
			t.Fatalf("segment %d: .index entry %d = (%d, %d), want (%d, %d)", base, i, rel, pos, w.rel, w.pos)
		}
	}
	tidx := read(segment.TimeIndexSuffix)
	if len(tidx) != 12*len(wantTime) {
		t.Fatalf("segment %d: .timeindex is %d bytes, want %d trimmed entries", base, len(tidx), len(wantTime))
	}
	for i, w := range wantTime {
		ts := int64(binary.BigEndian.Uint64(tidx[12*i:]))
		rel := int32(binary.BigEndian.Uint32(tidx[12*i+8:]))
		if ts != w.ts || rel != w.rel {
			t.Fatalf("segment %d: .timeindex entry %d = (%d, %d), want (%d, %d)", base, i, ts, rel, w.ts, w.rel)
		}
	}
}

// TestDamage: a torn tail of the active segment is truncated silently on
// open; bytes flipped in a sealed segment below the recovery point are
// reported with the file and byte position, and nothing is truncated.
func TestDamage(t *testing.T) {
	build := func(t *testing.T, fs vfs.FS, dir string) (sealed string, batchPos int64) {
		l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 8 << 10, MaxIndexBytes: 4096}, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		for l.NumSegments() < 3 {
			if _, err := l.Append(recordsAt(l.EndOffset(), 3)...); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		first := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
		// The second batch of the first segment.
		f, _ := fs.Open(first)
		hdr := make([]byte, record.HeaderSize)
		if n, err := f.ReadAt(hdr, 0); n != len(hdr) {
			t.Fatalf("ReadAt: %d of %d bytes: %v", n, len(hdr), err)
		}
		f.Close()
		return first, int64(record.Batch(hdr).Size())
	}
	damagedFilesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		t.Run("torn tail", func(t *testing.T) {
			dir := filepath.Join(dir, "torn")
			build(t, fs, dir)
			l, _ := Open(dir, Options{FS: fs, Logger: discardLogger()})
			end := l.EndOffset()
			active := l.segs.active.LogPath()
			size := l.segs.active.Size()
			if _, err := l.Append(recordsAt(end, 5)...); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Cut the last batch in half and forget the clean shutdown.
			f, openErr := fs.OpenReadWrite(active)
			if openErr != nil {
				t.Fatal(openErr)
			}
			full, _ := f.Size()
			if err := f.Truncate(size + (full-size)/2); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := fs.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
			if err := fs.Remove(filepath.Join(dir, RecoveryPointFile)); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
			if err != nil {
				t.Fatalf("open with a torn tail: %v", err)
			}
			defer l.Close()
			if l.EndOffset() != end {
				t.Fatalf("end %d after recovering a torn tail, want %d", l.EndOffset(), end)
			}
		})
		t.Run("sealed damage", func(t *testing.T) {
			// Below the recovery point segments are trusted at open, as
			// Kafka does (rescanning them all would make restarts slow); the
			// damage surfaces, with its place, when it is read.
			dir := filepath.Join(dir, "sealed")
			path, pos := build(t, fs, dir)
			before := flipBytes(t, fs, path, pos+record.HeaderSize+3)
			if err := fs.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil { // unclean: recovery runs
				t.Fatal(err)
			}
			l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			var readErr error
			for _, err := range l.Records(0) {
				if err != nil {
					readErr = err
					break
				}
			}
			l.Close()
			wantCorruption(t, readErr, path, pos)
			if after := fileSize(t, fs, path); after != before {
				t.Fatalf("reading damage changed %s from %d to %d bytes", path, before, after)
			}
		})
		t.Run("damage in the recovered segment below the recovery point", func(t *testing.T) {
			dir := filepath.Join(dir, "rp")
			build(t, fs, dir)
			l, _ := Open(dir, Options{FS: fs, Logger: discardLogger()})
			active := l.segs.active.LogPath()
			if _, err := l.Append(recordsAt(l.EndOffset(), 2)...); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(recordsAt(l.EndOffset(), 2)...); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// The recovery point (the end at close) lies in the active
			// segment, so an unclean open scans it up to there.
			before := flipBytes(t, fs, active, record.HeaderSize+5)
			if err := fs.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
			_, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
			wantCorruption(t, err, active, 0)
			if after := fileSize(t, fs, active); after != before {
				t.Fatalf("a refused open changed %s from %d to %d bytes", active, before, after)
			}
		})
	})
}

func flipBytes(t *testing.T, fs vfs.FS, path string, at int64) int64 {
	t.Helper()
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 2)
	if n, err := f.ReadAt(b, at); n != len(b) {
		t.Fatalf("ReadAt: %d of %d bytes: %v", n, len(b), err)
	}
	b[0], b[1] = ^b[0], ^b[1]
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	return size
}

func fileSize(t *testing.T, fs vfs.FS, path string) int64 {
	t.Helper()
	fi, err := fs.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// wantCorruption checks err is a *CorruptionError naming path and a
// position inside the damaged batch starting at pos (the batch start, or
// the field within its header that failed, such as the CRC).
func wantCorruption(t *testing.T, err error, path string, pos int64) {
	t.Helper()
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want a *CorruptionError", err)
	}
	if ce.File != path || ce.Pos < pos || ce.Pos >= pos+record.HeaderSize {
		t.Fatalf("damage reported at %s:%d, want %s:%d (%v)", ce.File, ce.Pos, path, pos, err)
	}
}
