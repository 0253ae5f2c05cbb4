package fuzz

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
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

// seed joins the parts of a seed input: the first byte (sync mode and op
// set), then op bytes.
func seed(first byte, parts ...[]byte) []byte {
	out := []byte{first}
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// appends spells n append ops (op 0) of k records each, no keys, no
// compression.
func appends(n, k int) []byte {
	var out []byte
	for range n {
		out = append(out, 0, byte(k-1))
		for range k {
			out = append(out, 10, 20, 0)
		}
		out = append(out, 0)
	}
	return out
}

func options(fs vfs.FS, sync seglog.SyncMode, prealloc bool) seglog.Options {
	return seglog.Options{
		FS: fs,
		LogConfig: seglog.LogConfig{
			SegmentBytes:       2048,
			IndexIntervalBytes: 128,
			MaxIndexBytes:      96,
			Sync:               sync,
			Preallocate:        prealloc,
		},
		// Two, so that reads close and reopen sealed segments' .log
		// descriptors all the time (the default keeps 1024 open).
		MaxOpenSegmentFiles: 2,
		Logger:              slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// checkLayout checks that every .log in dir holds whole entries and
// nothing after them (no zero tail once the log is closed), as Kafka lays
// out a segment.
func checkLayout(t *testing.T, fs vfs.FS) {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".log") {
			continue
		}
		b := vfstest.ReadFile(t, fs, dir+"/"+n)
		pos := 0
		for pos+record.LogOverhead <= len(b) {
			size, _, err := record.PeekEntry(b[pos:])
			if err != nil || pos+size > len(b) {
				break
			}
			pos += size
		}
		if pos != len(b) {
			t.Fatalf("%s: entries end at byte %d of %d", n, pos, len(b))
		}
	}
}

func FuzzLog(f *testing.F) {
	f.Add([]byte{0, 3, 1, 0, 5, 2, 9, 0, 7, 4, 6, 0, 1, 8, 2})
	f.Add(bytes.Repeat([]byte{0, 7, 3}, 40))
	f.Add([]byte{0, 9, 0, 9, 0, 9, 5, 3, 6, 2, 7, 0, 4, 8, 1, 8, 0})
	f.Add(bytes.Repeat([]byte{1, 2, 0, 4, 3, 9, 5, 1}, 20))
	// The orders of issue 10's truncation case, spelled in the op codes
	// below: retention, truncation below the start, acknowledged appends,
	// power loss; iterations across truncations that remove their
	// position, leave it, or restart the log below its start; retention
	// into a batch, truncation into that batch, appends, power loss.
	f.Add(seed(0x41, appends(5, 5), []byte{5, 20, 11, 3}, appends(3, 2), []byte{8, 3, 0}))
	f.Add(seed(0x40, appends(6, 5), []byte{10, 2, 5, 6, 2}, appends(2, 1),
		[]byte{10, 0, 3, 20, 1}, appends(1, 1), []byte{5, 10, 10, 0, 2, 0, 1}, appends(1, 1), []byte{3, 0}))
	f.Add(seed(0x41, appends(4, 5), []byte{5, 7, 4, 11}, appends(2, 1), []byte{8, 5, 1, 11, 0},
		appends(1, 1), []byte{7, 10, 0, 1, 12, 2}, appends(2, 2), []byte{8, 3, 0}))
	// The same orders with preallocated segments, and reopened switching
	// the option.
	f.Add(seed(0x61, appends(5, 5), []byte{5, 20, 11, 3}, appends(3, 2), []byte{8, 3, 0}))
	f.Add(seed(0x71, appends(8, 4), []byte{6, 0}, appends(4, 3), []byte{8, 7}, appends(3, 3), []byte{7, 4, 2, 8}))
	f.Add(seed(0x30, bytes.Repeat([]byte{0, 7, 3, 1, 2, 0, 4, 3, 9, 5, 1, 8, 6}, 12)))
	f.Fuzz(func(t *testing.T, data []byte) {
		o := &ops{b: data}
		// Bit 6 of the first byte turns on the operations added for
		// truncation below the start and iteration across a truncation.
		// Inputs from before them have it clear and decode as they did.
		nops := 10
		if len(data) > 0 && data[0]&0x40 != 0 {
			nops = 12
		}
		// Bit 5 turns on Options.Preallocate; bit 4 makes every reopen
		// switch it (a log written with it opened without it, and the
		// reverse). Older inputs have both clear.
		prealloc, switchPrealloc := false, false
		if len(data) > 0 {
			prealloc, switchPrealloc = data[0]&0x20 != 0, data[0]&0x10 != 0
		}
		reopenOptions := func(mem vfs.FS, sync seglog.SyncMode) seglog.Options {
			if switchPrealloc {
				prealloc = !prealloc
			}
			return options(mem, sync, prealloc)
		}
		sync := seglog.SyncNone
		if o.next(2) == 1 {
			sync = seglog.SyncAlways
		}
		mem := vfs.NewMem()
		l, err := seglog.Open(dir, options(mem, sync, prealloc))
		if err != nil {
			t.Fatal(err)
		}
		var m model
		ts := int64(1_700_000_000_000)
		// appendOp appends one batch of fuzzed records through Append (or,
		// for op 2, AppendBatch) and adds them to the model.
		appendOp := func(step, op int) {
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
		}
		// truncate truncates the log to offset and the model with it.
		truncate := func(step int, to int64) {
			if err := l.TruncateTo(to); err != nil {
				t.Fatalf("step %d: TruncateTo(%d): %v", step, to, err)
			}
			if to < m.start {
				// Below the start: the log restarts, empty, exactly there.
				if l.StartOffset() != to || l.EndOffset() != to {
					t.Fatalf("step %d: TruncateTo(%d) below the start %d left [%d, %d)", step, to, m.start, l.StartOffset(), l.EndOffset())
				}
				m.start, m.recs, m.durable = to, nil, to
				return
			}
			if l.EndOffset() > to {
				t.Fatalf("step %d: TruncateTo(%d) left end %d", step, to, l.EndOffset())
			}
			// A batch is never split: when the batch holding to also
			// held the log start, the log is left empty at the start.
			m.recs = m.recs[:max(l.EndOffset(), m.start)-m.start]
			m.durable = min(m.durable, m.end())
		}
		for step := 0; o.more() && step < 200; step++ {
			switch op := o.next(nops); op {
			case 0, 1, 2: // append
				appendOp(step, op)
			case 3: // read from somewhere
				if m.end() > m.start {
					check(t, l, &m, m.start+int64(o.next(int(m.end()-m.start)+1)))
				}
			case 4: // truncate near the end
				if m.end() > m.start {
					truncate(step, max(m.start, m.end()-int64(1+o.next(12))))
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
				// A power loss earlier may have left quarantine files
				// (segments set aside behind a torn one): warnings, not
				// damage.
				fscktest.CheckCleanButQuarantines(t, mem, dir)
				checkLayout(t, mem)
				if l, err = seglog.Open(dir, reopenOptions(mem, sync)); err != nil {
					t.Fatalf("step %d: reopen: %v", step, err)
				}
			case 8: // power loss: keep what was synced, maybe a torn tail
				crashed := mem.CrashClone()
				l.Close()
				mem = crashed
				before := fscktest.TakeSnapshot(t, mem, dir)
				if l, err = seglog.Open(dir, reopenOptions(mem, sync)); err != nil {
					t.Fatalf("step %d: open after power loss: %v", step, err)
				}
				// Recovery cut only torn tails, or kept the bytes in
				// quarantine files.
				ends := map[int64]int64{}
				for _, s := range l.Segments() {
					ends[s.BaseOffset] = s.Size
				}
				fscktest.CheckQuarantined(t, mem, dir, before, ends)
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
			case 10: // iterate across a truncation (and appends after it)
				iterateAcross(t, l, &m, o, step, truncate, appendOp)
			case 11: // truncate below the start (retention moved it up)
				if m.start > 0 {
					truncate(step, m.start-1-int64(o.next(int(min(m.start, 16)))))
				}
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
		fscktest.CheckCleanButQuarantines(t, mem, dir)
		checkLayout(t, mem)
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

// sameRecord fails the test unless r is the model's record at offset off.
func sameRecord(t *testing.T, m *model, r record.Record, off int64, what string) {
	t.Helper()
	if off < m.start || off >= m.end() {
		t.Fatalf("%s: offset %d outside the model [%d, %d)", what, off, m.start, m.end())
	}
	w := m.recs[off-m.start]
	if r.Offset != off || r.Timestamp != w.Timestamp || !bytes.Equal(r.Key, w.Key) || (r.Key == nil) != (w.Key == nil) || !bytes.Equal(r.Value, w.Value) {
		t.Fatalf("%s: offset %d (want %d) differs from the model", what, r.Offset, off)
	}
}

// iterateAcross starts an iteration, takes a few records, truncates the
// log under it (anywhere in it or below its start) and appends a little,
// then finishes the iteration. An iteration whose position or yielded
// records the truncation removed must end with ErrTruncated; any other
// goes on with what the log holds now, up to its end. It never yields a
// removed record and never reports damage.
func iterateAcross(t *testing.T, l *seglog.Log, m *model, o *ops, step int, truncate func(int, int64), appendOp func(int, int)) {
	t.Helper()
	what := fmt.Sprintf("step %d: iteration across a truncation", step)
	n := int(m.end() - m.start)
	from := m.start + int64(o.next(n+1))
	next, stop := iter.Pull2(l.Records(from))
	defer stop()
	pos, pulled := from, 0
	for k := o.next(8); k > 0 && pos < m.end(); k-- {
		r, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("%s: at %d before the truncation: %v (more: %v)", what, pos, err, ok)
		}
		sameRecord(t, m, r, pos, what)
		pos++
		pulled++
	}
	cut := int64(math.MaxInt64)
	if to := max(0, m.start+int64(o.next(n+4))-3); to < m.end() {
		truncate(step, to)
		cut = l.EndOffset()
	}
	for k := o.next(3); k > 0; k-- {
		appendOp(step, 0)
	}
	if pulled == 0 {
		// Not started before the truncation: a fresh iteration of the
		// log as it is now.
		if from < m.start || from > m.end() {
			if _, err, ok := next(); !ok || !errors.Is(err, seglog.ErrOffsetOutOfRange) {
				t.Fatalf("%s: from %d outside [%d, %d]: %v, want ErrOffsetOutOfRange", what, from, m.start, m.end(), err)
			}
			return
		}
	} else if cut < pos {
		r, err, ok := next()
		if !ok || !errors.Is(err, seglog.ErrTruncated) || errors.Is(err, seglog.ErrCorrupt) {
			t.Fatalf("%s: stood at %d, cut at %d: got offset %d, %v (more: %v); want ErrTruncated", what, pos, cut, r.Offset, err, ok)
		}
		if _, _, ok := next(); ok {
			t.Fatalf("%s: went on after ErrTruncated", what)
		}
		return
	}
	for ; pos < m.end(); pos++ {
		r, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("%s: stood at %d, cut at %d: at %d: %v (more: %v), end %d", what, from, cut, pos, err, ok, m.end())
		}
		sameRecord(t, m, r, pos, what)
	}
	if r, err, ok := next(); ok {
		t.Fatalf("%s: past the end %d: offset %d, %v", what, m.end(), r.Offset, err)
	}
}
