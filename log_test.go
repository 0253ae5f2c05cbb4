package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/seglog/seglog/defaults"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// filesystems runs a test against the real FS (in a temporary directory)
// and the in-memory one; when the test ends, fsck must find the directory
// it left clean.
func filesystems(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	t.Run("os", func(t *testing.T) {
		dir := t.TempDir()
		fscktest.CheckCleanAtEnd(t, vfs.Default, dir)
		f(t, vfs.Default, dir)
	})
	t.Run("mem", func(t *testing.T) {
		fs := vfs.NewMem()
		fscktest.CheckCleanAtEnd(t, fs, "/data/log")
		f(t, fs, "/data/log")
	})
}

// damagedFilesystems is filesystems for tests that leave damage behind on
// purpose.
func damagedFilesystems(t *testing.T, f func(t *testing.T, fs vfs.FS, dir string)) {
	t.Run("os", func(t *testing.T) { f(t, vfs.Default, t.TempDir()) })
	t.Run("mem", func(t *testing.T) { f(t, vfs.NewMem(), "/data/log") })
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{LogConfig: LogConfig{SegmentBytes: -1}},
		{LogConfig: LogConfig{SegmentBytes: 10}},
		{LogConfig: LogConfig{SegmentBytes: 1 << 31}},
		{LogConfig: LogConfig{SegmentAge: -time.Second}},
		{LogConfig: LogConfig{IndexIntervalBytes: -1}},
		{LogConfig: LogConfig{MaxIndexBytes: 12}},
		{LogConfig: LogConfig{MaxIndexBytes: defaults.MaxSegmentBytes + 1}},
		{LogConfig: LogConfig{MaxBatchBytes: 20}},
		{LogConfig: LogConfig{Compression: 9}},
		{LogConfig: LogConfig{Sync: 7}},
		{LogConfig: LogConfig{Sync: SyncPeriodic}},
		{LogConfig: LogConfig{TimestampType: 3}},
		{LeaderEpoch: -2},
	}
	for _, o := range bad {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: Validate = %v, want ErrInvalidOptions", o, err)
		}
		o.FS = vfs.NewMem()
		if _, err := Open("/x", o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: Open = %v, want ErrInvalidOptions", o, err)
		}
	}
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
	// Kafka's smallest segment.bytes under its default max.message.bytes.
	if err := (Options{LogConfig: LogConfig{SegmentBytes: 1 << 20, MaxBatchBytes: 1<<20 + 12}}).Validate(); err != nil {
		t.Errorf("MaxBatchBytes above SegmentBytes: %v", err)
	}
}

func TestSecondOpenIsRefused(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir, Options{FS: fs, Logger: discardLogger()}); !errors.Is(err, ErrLocked) {
			t.Fatalf("second Open: %v, want ErrLocked", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
		if err != nil {
			t.Fatalf("Open after Close: %v", err)
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(record.Record{Value: []byte("x")}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Append after Close: %v, want ErrClosed", err)
		}
	})
}

// model is what the log should hold: every record at its offset.
type model struct {
	start int64
	recs  []record.Record // recs[i] is offset start+i
}

func (m *model) end() int64 { return m.start + int64(len(m.recs)) }

// TestLogAgainstModel runs random appends (both paths, all codecs), reads
// from random offsets, time lookups, truncations, syncs and reopens, and
// compares everything with a plain slice of records.
func TestLogAgainstModel(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		r := rand.New(rand.NewPCG(1, 2))
		opts := Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 8 << 10, IndexIntervalBytes: 512, MaxIndexBytes: 240}, Logger: discardLogger()}
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { l.Close() }()
		var m model
		ts := int64(1_700_000_000_000)
		for step := 0; step < 400; step++ {
			switch op := r.IntN(20); {
			case op < 12: // append
				n := 1 + r.IntN(8)
				recs := make([]record.Record, n)
				for i := range recs {
					ts += int64(r.IntN(50)) - 10 // timestamps need not be monotonic
					recs[i] = record.Record{Timestamp: ts, Value: bytes.Repeat([]byte{byte(step)}, r.IntN(300))}
					if r.IntN(4) > 0 {
						recs[i].Key = []byte(fmt.Sprint("k", r.IntN(10)))
					}
					if r.IntN(5) == 0 {
						recs[i].Headers = []record.Header{{Key: "h", Value: []byte{byte(i)}}}
					}
				}
				var info AppendInfo
				if r.IntN(2) == 0 {
					opts.Compression = record.Codecs[r.IntN(len(record.Codecs))]
					l.opts.Compression = opts.Compression
					info, err = l.Append(recs...)
				} else {
					info, err = l.AppendBatch(producerBatch(t, record.Codecs[r.IntN(len(record.Codecs))], recs))
				}
				if err != nil {
					t.Fatalf("step %d: append: %v", step, err)
				}
				if info.FirstOffset != m.end() || info.LastOffset != m.end()+int64(n)-1 {
					t.Fatalf("step %d: assigned [%d, %d], model end %d", step, info.FirstOffset, info.LastOffset, m.end())
				}
				for _, rec := range recs {
					rec.Offset = m.end()
					m.recs = append(m.recs, rec)
				}
			case op < 15: // read from a random offset
				if m.end() == m.start {
					continue
				}
				from := m.start + r.Int64N(m.end()-m.start+1)
				checkReadFrom(t, l, &m, from)
			case op < 16: // offset for time
				target := ts - int64(r.IntN(3000))
				got, err := l.OffsetForTime(target)
				want := bruteOffsetForTime(l, &m, target)
				if want < 0 {
					if !errors.Is(err, ErrTimestampNotFound) {
						t.Fatalf("step %d: OffsetForTime(%d) = %d, %v; want not found", step, target, got, err)
					}
				} else if err != nil || got != want {
					t.Fatalf("step %d: OffsetForTime(%d) = %d, %v; want %d", step, target, got, err, want)
				}
			case op < 17: // truncate at a batch boundary or inside a batch
				if m.end() == m.start {
					continue
				}
				// Mostly near the end, as replicas truncate; sometimes far.
				to := max(m.start, m.end()-1-r.Int64N(30))
				if r.IntN(10) == 0 {
					to = m.start + r.Int64N(m.end()-m.start)
				}
				if err := l.TruncateTo(to); err != nil {
					t.Fatalf("step %d: TruncateTo(%d): %v", step, to, err)
				}
				if l.EndOffset() > to {
					t.Fatalf("step %d: TruncateTo(%d) left end %d", step, to, l.EndOffset())
				}
				m.recs = m.recs[:l.EndOffset()-m.start]
			case op < 18:
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
			default: // reopen
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if l, err = Open(dir, opts); err != nil {
					t.Fatalf("step %d: reopen: %v", step, err)
				}
			}
			if l.EndOffset() != m.end() || l.StartOffset() != m.start {
				t.Fatalf("step %d: log [%d, %d), model [%d, %d)", step, l.StartOffset(), l.EndOffset(), m.start, m.end())
			}
		}
		checkReadFrom(t, l, &m, m.start)
		if l.NumSegments() < 3 {
			t.Fatalf("only %d segments: the test did not exercise rolls", l.NumSegments())
		}
	})
}

// bruteOffsetForTime is Kafka's answer computed from the model: the first
// segment whose max timestamp reaches target, then the first record in it
// at or after target in offset order.
func bruteOffsetForTime(l *Log, m *model, target int64) int64 {
	for i, rec := range m.recs {
		if rec.Timestamp >= target {
			return m.start + int64(i)
		}
	}
	return -1
}

func checkReadFrom(t *testing.T, l *Log, m *model, from int64) {
	t.Helper()
	next := from
	for r, err := range l.Records(from) {
		if err != nil {
			t.Fatalf("Records(%d) at %d: %v", from, next, err)
		}
		if r.Offset != next {
			t.Fatalf("Records(%d): offset %d, want %d", from, r.Offset, next)
		}
		w := m.recs[next-m.start]
		if r.Timestamp != w.Timestamp || !sameBytes(r.Key, w.Key) || !sameBytes(r.Value, w.Value) || len(r.Headers) != len(w.Headers) {
			t.Fatalf("Records(%d): offset %d differs from what was appended", from, next)
		}
		next++
	}
	if next != m.end() {
		t.Fatalf("Records(%d) stopped at %d, end %d", from, next, m.end())
	}
}

// producerBatch builds a batch as a producer would send it.
func producerBatch(t testing.TB, codec record.Codec, recs []record.Record) []byte {
	t.Helper()
	b := record.NewBuilder(codec)
	for i, r := range recs {
		r.Offset = int64(i)
		if err := b.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

// TestLargeBatchLimit: MaxBatchBytes above Kafka's default lets larger
// batches in (the segment layer honours the Log's limit), and a batch over
// the limit is refused without failing the log.
func TestLargeBatchLimit(t *testing.T) {
	l, err := Open("/big", Options{FS: vfs.NewMem(), LogConfig: LogConfig{MaxBatchBytes: 3 << 20, SegmentBytes: 8 << 20, MaxIndexBytes: 4096}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	big := record.Record{Value: bytes.Repeat([]byte("x"), 2<<20)}
	if _, err := l.Append(big); err != nil {
		t.Fatalf("2 MiB batch under a 3 MiB limit: %v", err)
	}
	huge := record.Record{Value: bytes.Repeat([]byte("x"), 4<<20)}
	if _, err := l.Append(huge); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("4 MiB batch over a 3 MiB limit: %v, want ErrBatchTooLarge", err)
	}
	if _, err := l.Append(recordsAt(1, 1)...); err != nil {
		t.Fatalf("append after a refused batch: %v", err)
	}
	// A compressed batch that expands past record's default cap (8 MiB)
	// but within the log's own multiple of its limit reads back.
	l.opts.Compression = record.Zstd
	recs := make([]record.Record, 5)
	for i := range recs {
		recs[i] = record.Record{Value: bytes.Repeat([]byte{'a' + byte(i)}, 2<<20)}
	}
	info, err := l.Append(recs...)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r, err := range l.Records(info.FirstOffset) {
		if err != nil {
			t.Fatalf("reading back a 10 MiB compressed batch: %v", err)
		}
		if len(r.Value) != 2<<20 {
			t.Fatalf("record %d: %d bytes", r.Offset, len(r.Value))
		}
		n++
	}
	if n != len(recs) {
		t.Fatalf("read %d records, appended %d", n, len(recs))
	}
}

// TestAppendRefusesUndecompressible: records that would compress under
// MaxBatchBytes but expand past what readers may decompress are refused,
// not stored unreadable.
func TestAppendRefusesUndecompressible(t *testing.T) {
	l, err := Open("/z", Options{FS: vfs.NewMem(), LogConfig: LogConfig{Compression: record.Zstd, MaxIndexBytes: 4096}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	recs := make([]record.Record, 5)
	for i := range recs {
		recs[i] = record.Record{Value: bytes.Repeat([]byte{'a'}, 2<<20)} // 10 MiB, compresses to almost nothing
	}
	if _, err := l.Append(recs...); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("10 MiB of records with the default limits: %v, want ErrBatchTooLarge", err)
	}
	if l.EndOffset() != 0 {
		t.Fatalf("end %d after a refused append", l.EndOffset())
	}
}
