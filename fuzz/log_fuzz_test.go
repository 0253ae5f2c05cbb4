package fuzz

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// model is what the log must hold: the records at [start, start+len(recs)),
// and how many of them are known durable (acknowledged under SyncAlways or
// covered by a Sync).
type model struct {
	start   int64
	recs    []record.Record
	durable int64 // offsets below are on disk
}

func (m *model) end() int64 { return m.start + int64(len(m.recs)) }

// ops reads the fuzzer's bytes as a stream of small numbers.
type ops struct{ b []byte }

func (o *ops) next(n int) int {
	if len(o.b) == 0 {
		return 0
	}
	v := int(o.b[0]) % n
	o.b = o.b[1:]
	return v
}

func (o *ops) more() bool { return len(o.b) > 0 }

const dir = "/fuzz/log"

func options(fs vfs.FS, sync seglog.SyncMode) seglog.Options {
	return seglog.Options{
		FS:                 fs,
		SegmentBytes:       2048,
		IndexIntervalBytes: 128,
		MaxIndexBytes:      96,
		Sync:               sync,
		Logger:             slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

func FuzzLog(f *testing.F) {
	f.Add([]byte{0, 3, 1, 0, 5, 2, 9, 0, 7, 4, 6, 0, 1, 8, 2})
	f.Add(bytes.Repeat([]byte{0, 7, 3}, 40))
	f.Add([]byte{0, 9, 0, 9, 0, 9, 5, 3, 6, 2, 7, 0, 4, 8, 1, 8, 0})
	f.Add(bytes.Repeat([]byte{1, 2, 0, 4, 3, 9, 5, 1}, 20))
	f.Fuzz(func(t *testing.T, data []byte) {
		o := &ops{b: data}
		sync := seglog.SyncNone
		if o.next(2) == 1 {
			sync = seglog.SyncAlways
		}
		mem := vfs.NewMem()
		l, err := seglog.Open(dir, options(mem, sync))
		if err != nil {
			t.Fatal(err)
		}
		var m model
		ts := int64(1_700_000_000_000)
		for step := 0; o.more() && step < 200; step++ {
			switch op := o.next(10); op {
			case 0, 1, 2: // append
				n := 1 + o.next(6)
				recs := make([]record.Record, n)
				for i := range recs {
					ts += int64(o.next(40)) - 10
					recs[i] = record.Record{Timestamp: ts, Value: bytes.Repeat([]byte{byte(step)}, o.next(120))}
					if o.next(3) > 0 {
						recs[i].Key = []byte{byte('a' + o.next(5))}
					}
				}
				codec := record.Codecs[o.next(len(record.Codecs))]
				var info seglog.AppendInfo
				if op == 2 {
					bld := record.NewBuilder(codec)
					for i, r := range recs {
						r.Offset = int64(i)
						if err := bld.Add(r); err != nil {
							t.Fatal(err)
						}
					}
					b, berr := bld.Build()
					if berr != nil {
						t.Fatal(berr)
					}
					info, err = l.AppendBatch(bytes.Clone(b))
				} else {
					info, err = l.Append(recs...)
				}
				if err != nil {
					t.Fatalf("step %d: append: %v", step, err)
				}
				if info.FirstOffset != m.end() {
					t.Fatalf("step %d: appended at %d, model end %d", step, info.FirstOffset, m.end())
				}
				m.recs = append(m.recs, recs...)
				if sync == seglog.SyncAlways {
					m.durable = m.end()
				}
			case 3: // read from somewhere
				if m.end() > m.start {
					check(t, l, &m, m.start+int64(o.next(int(m.end()-m.start)+1)))
				}
			case 4: // truncate near the end
				if m.end() > m.start {
					to := max(m.start, m.end()-int64(1+o.next(12)))
					if err := l.TruncateTo(to); err != nil {
						t.Fatalf("step %d: TruncateTo(%d): %v", step, to, err)
					}
					if l.EndOffset() > to {
						t.Fatalf("step %d: TruncateTo(%d) left end %d", step, to, l.EndOffset())
					}
					// A batch is never split: when the batch holding to also
					// held the log start, the log is left empty at the start.
					m.recs = m.recs[:max(l.EndOffset(), m.start)-m.start]
					m.durable = min(m.durable, m.end())
				}
			case 5: // retention
				if m.end() > m.start {
					to := m.start + int64(o.next(int(m.end()-m.start)+1))
					if _, err := l.DeleteBefore(to); err != nil {
						t.Fatalf("step %d: DeleteBefore(%d): %v", step, to, err)
					}
					m.recs = m.recs[to-m.start:]
					m.start = to
					m.durable = max(m.durable, to)
				}
			case 6: // sync
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
				m.durable = m.end()
			case 7: // clean reopen
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				fscktest.CheckClean(t, mem, dir)
				if l, err = seglog.Open(dir, options(mem, sync)); err != nil {
					t.Fatalf("step %d: reopen: %v", step, err)
				}
			case 8: // power loss: keep what was synced, maybe a torn tail
				crashed := mem.CrashClone()
				l.Close()
				mem = crashed
				if l, err = seglog.Open(dir, options(mem, sync)); err != nil {
					t.Fatalf("step %d: open after power loss: %v", step, err)
				}
				if l.EndOffset() < m.durable {
					t.Fatalf("step %d: %d durable, %d survived", step, m.durable, l.EndOffset())
				}
				// What survived is a prefix of what was written.
				if l.StartOffset() > m.start {
					// Retention's start offset is checkpointed at once; it
					// cannot move forward by itself.
					t.Fatalf("step %d: start moved from %d to %d", step, m.start, l.StartOffset())
				}
				if l.StartOffset() < m.start {
					// A DeleteBefore whose checkpoint survived but whose
					// segment removal did not: records below the start are
					// gone for the model too.
					t.Fatalf("step %d: start %d went back below %d", step, l.StartOffset(), m.start)
				}
				m.recs = m.recs[:l.EndOffset()-m.start]
				m.durable = m.end()
			case 9: // time lookup
				target := ts - int64(o.next(200))
				got, err := l.OffsetForTime(target)
				want := int64(-1)
				for i, r := range m.recs {
					if r.Timestamp >= target {
						want = m.start + int64(i)
						break
					}
				}
				if want < 0 {
					if !errors.Is(err, seglog.ErrTimestampNotFound) {
						t.Fatalf("step %d: OffsetForTime(%d) = %d, %v; want not found", step, target, got, err)
					}
				} else if err != nil || got != want {
					t.Fatalf("step %d: OffsetForTime(%d) = %d, %v; want %d", step, target, got, err, want)
				}
			}
			if l.StartOffset() != m.start || l.EndOffset() != m.end() {
				t.Fatalf("step %d: log [%d, %d), model [%d, %d)", step, l.StartOffset(), l.EndOffset(), m.start, m.end())
			}
		}
		check(t, l, &m, m.start)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		fscktest.CheckClean(t, mem, dir)
	})
}

// check reads from offset from to the end, through Records and through
// Read slices, and compares with the model.
func check(t *testing.T, l *seglog.Log, m *model, from int64) {
	t.Helper()
	next := from
	for r, err := range l.Records(from) {
		if err != nil {
			t.Fatalf("Records(%d) at %d: %v", from, next, err)
		}
		w := m.recs[next-m.start]
		if r.Offset != next || r.Timestamp != w.Timestamp || !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Value, w.Value) {
			t.Fatalf("Records(%d): offset %d (want %d) differs from the model", from, r.Offset, next)
		}
		next++
	}
	if next != m.end() {
		t.Fatalf("Records(%d) stopped at %d, end %d", from, next, m.end())
	}
	// The same range through Read: whole batches covering every offset.
	for off := from; off < m.end(); {
		s, err := l.Read(off, 300, seglog.ReadOptions{})
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if s.Len() == 0 || s.FirstOffset() > off || s.LastOffset() < off {
			t.Fatalf("Read(%d): %d bytes covering [%d, %d]", off, s.Len(), s.FirstOffset(), s.LastOffset())
		}
		var buf bytes.Buffer
		if _, err := s.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if rest := buf.Bytes(); len(rest) > 0 {
			size, _, err := record.PeekEntry(rest)
			if err != nil || record.Batch(rest[:size]).Validate() != nil {
				t.Fatalf("Read(%d) returned bytes that are not a batch: %v", off, err)
			}
		}
		off = s.LastOffset() + 1
		s.Close()
	}
}
