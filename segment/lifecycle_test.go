package segment

import (
	"errors"
	"io/fs"
	"math"
	"testing"
	"time"

	"github.com/seglog/seglog/index"
	"github.com/seglog/seglog/record"
)

func TestTruncateToEveryBoundary(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 250, MaxIndexBytes: smallIdx}
		const base = 40
		ref := buildSealed(t, e, base, opts, 21, 30)
		n := len(ref.m.batches)
		for k := 0; k <= n; k++ {
			for _, sealed := range []bool{false, true} {
				// Start from the reference files, the segment active or sealed.
				writeFile(t, e.fs, e.path(base, LogSuffix), ref.log)
				writeFile(t, e.fs, e.path(base, IndexSuffix), ref.idx)
				writeFile(t, e.fs, e.path(base, TimeIndexSuffix), ref.t)
				s, err := Open(e.fs, e.dir, base, !sealed, opts)
				if err != nil {
					t.Fatal(err)
				}
				target := ref.m.next() + 5 // beyond the end: nothing to drop
				if k < n {
					b := ref.m.batches[k]
					target = b.base
					if sealed && b.last > b.base {
						target = b.base + 1 // inside the batch: the whole batch goes
					}
				}
				removed, err := s.TruncateTo(target)
				if err != nil {
					t.Fatalf("k=%d: TruncateTo(%d): %v", k, target, err)
				}
				pm := ref.m.prefix(min(k, n))
				if removed != ref.m.size()-pm.size() {
					t.Fatalf("k=%d: removed %d bytes, want %d", k, removed, ref.m.size()-pm.size())
				}
				if s.IsSealed() {
					t.Fatalf("k=%d: still sealed after truncation", k)
				}
				checkState(t, s, pm)
				checkFind(t, s, pm)
				if got := readFile(t, e.fs, e.path(base, LogSuffix)); int64(len(got)) != pm.size() {
					t.Fatalf("k=%d: .log is %d bytes, want %d", k, len(got), pm.size())
				}
				// Appending the dropped batches again must rebuild exactly
				// the original indexes: the byte counter and the running max
				// were recomputed correctly.
				for _, b := range ref.m.batches[min(k, n):] {
					if err := s.Append(b.bytes); err != nil {
						t.Fatalf("k=%d: re-append: %v", k, err)
					}
				}
				idx, ts := sealedIndexes(t, e, s)
				if string(idx) != string(ref.idx) || string(ts) != string(ref.t) {
					t.Fatalf("k=%d sealed=%v: indexes after truncate+re-append differ:\n%v\n%v\nwant\n%v\n%v", k, sealed,
						decodeOffsetIndex(t, idx, base), decodeTimeIndex(t, ts, base),
						decodeOffsetIndex(t, ref.idx, base), decodeTimeIndex(t, ref.t, base))
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

func TestSealedOpenIsLazy(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 100, MaxIndexBytes: smallIdx}
		var models []*model
		for i := 0; i < 5; i++ {
			base := int64(i * 1000)
			ref := buildSealed(t, e, base, opts, uint64(30+i), 40)
			models = append(models, ref.m)
		}
		cache := index.NewCache(2)
		opts.IndexCache = cache
		var segs []*Segment
		for i := range models {
			s, err := Open(e.fs, e.dir, int64(i*1000), false, opts)
			if err != nil {
				t.Fatal(err)
			}
			segs = append(segs, s)
		}
		for i, s := range segs {
			if s.Size() != models[i].size() || s.MaxTimestamp() != models[i].maxTS() || !s.IsSealed() {
				t.Fatalf("segment %d: size %d max ts %d", i, s.Size(), s.MaxTimestamp())
			}
		}
		if st := cache.Stats(); st.Maps != 0 || st.Mapped != 0 {
			t.Fatalf("opening sealed segments and asking Size/MaxTimestamp mapped indexes: %+v", st)
		}
		for i, s := range segs {
			checkState(t, s, models[i])
			checkFind(t, s, models[i])
		}
		if st := cache.Stats(); st.Maps == 0 || st.Mapped > 2 {
			t.Fatalf("lookups: cache stats %+v, want some maps and at most 2 mapped", st)
		}
		for _, s := range segs {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}

		// Open of a sealed segment does no I/O: a segment whose files do
		// not exist opens, and the error comes with the first use.
		s, err := Open(e.fs, e.dir, 123456, false, opts)
		if err != nil {
			t.Fatalf("sealed Open touched the files: %v", err)
		}
		if _, _, err := s.FindPosition(123456); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("FindPosition on missing files: %v, want ErrNotExist", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestShouldRoll(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		clock := time.Unix(1000, 0)
		now := func() time.Time { return clock }
		b := record.NewBuilder(record.None)
		mk := func(off, ts int64) []byte {
			b.Reset()
			b.SetBaseOffset(off)
			if err := b.Add(record.Record{Offset: off, Timestamp: ts, Value: []byte("v")}); err != nil {
				t.Fatal(err)
			}
			out, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			return append([]byte(nil), out...)
		}

		t.Run("size", func(t *testing.T) {
			s := mustCreate(t, e, 0, Options{MaxIndexBytes: smallIdx, Now: now})
			defer s.Close()
			if err := s.Append(mk(0, 10)); err != nil {
				t.Fatal(err)
			}
			r := RollCheck{NextBatchSize: 100, LastOffset: 1, MaxTimestamp: 10, Now: clock}
			r.MaxSegmentBytes = s.Size() + 100
			if s.ShouldRoll(r) {
				t.Fatal("rolled although the batch fits exactly")
			}
			r.MaxSegmentBytes--
			if !s.ShouldRoll(r) {
				t.Fatal("did not roll although the batch overflows the segment")
			}
			r.MaxSegmentBytes = 0
			r.NextBatchSize = math.MaxInt32
			if !s.ShouldRoll(r) {
				t.Fatal("did not roll past 2^31-1 bytes")
			}
		})

		t.Run("age by timestamp", func(t *testing.T) {
			s := mustCreate(t, e, 100, Options{MaxIndexBytes: smallIdx, Now: now})
			defer s.Close()
			r := RollCheck{NextBatchSize: 80, LastOffset: 100, MaxTimestamp: 1 << 40, Now: clock.Add(1000 * time.Hour),
				MaxAge: time.Hour, Jitter: 10 * time.Minute}
			if s.ShouldRoll(r) {
				t.Fatal("empty segment rolled by age")
			}
			const t0 = 5_000_000
			if err := s.Append(mk(100, t0)); err != nil {
				t.Fatal(err)
			}
			limit := int64((50 * time.Minute).Milliseconds())
			r.LastOffset = 101
			r.MaxTimestamp = t0 + limit
			if s.ShouldRoll(r) {
				t.Fatal("rolled at exactly MaxAge-Jitter (wall clock must not matter)")
			}
			r.MaxTimestamp++
			if !s.ShouldRoll(r) {
				t.Fatal("did not roll past MaxAge-Jitter in record time")
			}
			// The first batch's timestamp survives a reopen.
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2, err := Open(e.fs, e.dir, 100, true, Options{MaxIndexBytes: smallIdx, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if !s2.ShouldRoll(r) {
				t.Fatal("reopened: did not roll past MaxAge-Jitter")
			}
			r.MaxTimestamp--
			if s2.ShouldRoll(r) {
				t.Fatal("reopened: rolled at MaxAge-Jitter")
			}
		})

		t.Run("age by wall clock", func(t *testing.T) {
			s := mustCreate(t, e, 200, Options{MaxIndexBytes: smallIdx, Now: now})
			defer s.Close()
			if err := s.Append(mk(200, -1)); err != nil {
				t.Fatal(err)
			}
			r := RollCheck{NextBatchSize: 80, LastOffset: 201, MaxTimestamp: -1, Now: clock.Add(time.Hour), MaxAge: time.Hour}
			if s.ShouldRoll(r) {
				t.Fatal("rolled at exactly MaxAge since creation")
			}
			r.Now = r.Now.Add(time.Millisecond)
			if !s.ShouldRoll(r) {
				t.Fatal("did not roll past MaxAge since creation")
			}
		})

		t.Run("offset index full", func(t *testing.T) {
			// 40 bytes: 5 offset entries. No timestamps, so the time index
			// stays empty and only the offset index fills.
			s := mustCreate(t, e, 300, Options{MaxIndexBytes: 40, IndexIntervalBytes: -1, Now: now})
			defer s.Close()
			r := RollCheck{NextBatchSize: 80, Now: clock}
			for i := int64(0); i < 6; i++ {
				r.LastOffset = 300 + i
				if s.ShouldRoll(r) {
					t.Fatalf("rolled before the offset index was full (%d batches)", i)
				}
				if err := s.Append(mk(300+i, -1)); err != nil {
					t.Fatal(err)
				}
			}
			r.LastOffset = 306
			if !s.ShouldRoll(r) {
				t.Fatal("did not roll with a full offset index")
			}
			if err := s.Append(mk(306, -1)); !errors.Is(err, index.ErrFull) {
				t.Fatalf("append to a full index: %v, want index.ErrFull", err)
			}
		})

		t.Run("time index full", func(t *testing.T) {
			// 36 bytes: 4 offset entries, 3 time slots of which the last is
			// reserved: full at 2 entries.
			s := mustCreate(t, e, 400, Options{MaxIndexBytes: 36, IndexIntervalBytes: -1, Now: now})
			defer s.Close()
			r := RollCheck{NextBatchSize: 80, Now: clock}
			for i := int64(0); i < 3; i++ {
				r.LastOffset = 400 + i
				if s.ShouldRoll(r) {
					t.Fatalf("rolled before the time index was full (%d batches)", i)
				}
				if err := s.Append(mk(400+i, 10+i)); err != nil {
					t.Fatal(err)
				}
			}
			r.LastOffset = 403
			if !s.ShouldRoll(r) {
				t.Fatal("did not roll with a full time index")
			}
			// The reserved slot takes the final entry.
			if err := s.Seal(); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("relative offset", func(t *testing.T) {
			s := mustCreate(t, e, 500, Options{MaxIndexBytes: smallIdx, Now: now})
			defer s.Close()
			r := RollCheck{NextBatchSize: 80, Now: clock, LastOffset: 500 + math.MaxInt32}
			if s.ShouldRoll(r) {
				t.Fatal("rolled at the largest relative offset")
			}
			r.LastOffset++
			if !s.ShouldRoll(r) {
				t.Fatal("did not roll past the largest relative offset")
			}
			r.LastOffset = 499
			if !s.ShouldRoll(r) {
				t.Fatal("did not roll for an offset below the base")
			}
		})
	})
}

func exists(t *testing.T, e env, path string) bool {
	t.Helper()
	_, err := e.fs.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func TestRemoveWhileReading(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		const base = 8
		s := mustCreate(t, e, base, Options{IndexIntervalBytes: 100, MaxIndexBytes: smallIdx})
		m := &model{base: base}
		appendN(t, s, m, newGen(40, base, 100), 30)
		if err := s.Seal(); err != nil {
			t.Fatal(err)
		}
		writeFile(t, e.fs, e.path(base, TxnIndexSuffix), []byte("txn"))
		if !s.Acquire() { // the reader
			t.Fatal("Acquire failed on a live segment")
		}
		if err := s.Remove(); err != nil {
			t.Fatal(err)
		}
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
			if exists(t, e, e.path(base, suf)) || !exists(t, e, e.path(base, suf)+DeletedSuffix) {
				t.Fatalf("%s not renamed to %s", suf, suf+DeletedSuffix)
			}
		}
		if s.LogPath() != e.path(base, LogSuffix)+DeletedSuffix {
			t.Fatalf("LogPath = %s", s.LogPath())
		}
		s.Release() // the Log's reference
		want := concat(m)
		got := make([]byte, len(want))
		if _, err := s.File().ReadAt(got, 0); err != nil || string(got) != string(want) {
			t.Fatalf("reader lost the bytes after Remove: %v", err)
		}
		checkFind(t, s, m)
		if !exists(t, e, e.path(base, LogSuffix)+DeletedSuffix) {
			t.Fatal("files deleted while a reader holds a reference")
		}
		s.Release()
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
			if exists(t, e, e.path(base, suf)+DeletedSuffix) {
				t.Fatalf("%s%s still there after the last Release", suf, DeletedSuffix)
			}
		}
		if s.Acquire() {
			t.Fatal("Acquire succeeded after the last Release")
		}
		if err := s.Append(m.batches[0].bytes); !errors.Is(err, ErrSealed) && !errors.Is(err, ErrClosed) {
			t.Fatalf("Append after Remove: %v", err)
		}
	})
}

// TestRemoveUnopened removes a sealed segment whose files were never
// opened, then reads it through a reference: the reader opens the renamed
// files.
func TestRemoveUnopened(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		const base = 70
		opts := Options{IndexIntervalBytes: 100, MaxIndexBytes: smallIdx}
		ref := buildSealed(t, e, base, opts, 41, 20)
		s, err := Open(e.fs, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !s.Acquire() {
			t.Fatal("Acquire failed")
		}
		if err := s.Remove(); err != nil {
			t.Fatal(err)
		}
		s.Release()
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			if exists(t, e, e.path(base, suf)) || !exists(t, e, e.path(base, suf)+DeletedSuffix) {
				t.Fatalf("%s not renamed", suf)
			}
		}
		checkState(t, s, ref.m)
		checkFind(t, s, ref.m)
		s.Release()
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			if exists(t, e, e.path(base, suf)+DeletedSuffix) || exists(t, e, e.path(base, suf)) {
				t.Fatalf("%s left behind after the last Release", suf)
			}
		}
	})
}

func TestBatches(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		const base = 0
		opts := Options{IndexIntervalBytes: 100, MaxIndexBytes: smallIdx}
		s := mustCreate(t, e, base, opts)
		defer s.Close()
		m := &model{base: base}
		appendN(t, s, m, newGen(50, base, 200), 25)
		collect := func(from, to int64) ([]string, error) {
			var out []string
			for b, err := range s.Batches(from, to) {
				if err != nil {
					return out, err
				}
				out = append(out, string(b))
			}
			return out, nil
		}
		got, err := collect(0, 1<<40)
		if err != nil || len(got) != len(m.batches) {
			t.Fatalf("Batches(all): %d batches, %v", len(got), err)
		}
		for i, b := range m.batches {
			if got[i] != string(b.bytes) {
				t.Fatalf("batch %d differs", i)
			}
		}
		// From a middle boundary to a bound inside a later batch: stops quietly.
		from, cut := m.batches[5], m.batches[12]
		got, err = collect(from.pos, cut.pos+cut.size/2)
		if err != nil || len(got) != 7 || got[0] != string(from.bytes) {
			t.Fatalf("Batches(mid, cut): %d batches, %v", len(got), err)
		}
		// A CRC error is reported with the file and the batch's position.
		raw := readFile(t, e.fs, e.path(base, LogSuffix))
		raw[m.batches[9].pos+m.batches[9].size-1] ^= 1
		if _, err := s.log.WriteAt(raw[m.batches[9].pos:m.batches[9].pos+m.batches[9].size], m.batches[9].pos); err != nil {
			t.Fatal(err)
		}
		got, err = collect(0, s.Size())
		var ce *record.CorruptionError
		if len(got) != 9 || !errors.As(err, &ce) || ce.File != s.LogPath() || ce.Pos < m.batches[9].pos || ce.Pos >= m.batches[9].pos+m.batches[9].size {
			t.Fatalf("Batches over damage: %d batches, %v", len(got), err)
		}
		// MaxBatchBytes bounds appends, not reads: a stored batch above it
		// reads back.
		small, err := Open(e.fs, e.dir, base, false, Options{MaxBatchBytes: 100, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer small.Close()
		for b, err := range small.Batches(0, s.Size()) {
			if err != nil || b.Size() <= 100 {
				t.Fatalf("Batches with a small limit: %d-byte batch, %v; want the first stored batch", len(b), err)
			}
			break
		}
	})
}

// TestSealedIndexPastEnd cuts a sealed segment's .log under its index: a
// lookup whose index entry points past the end is damage, not "not found".
func TestSealedIndexPastEnd(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		const base = 500
		opts := Options{IndexIntervalBytes: 100, MaxIndexBytes: smallIdx}
		ref := buildSealed(t, e, base, opts, 42, 30)
		half := ref.m.batches[15]
		writeFile(t, e.fs, e.path(base, LogSuffix), ref.log[:half.pos])
		s, err := Open(e.fs, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		last := ref.m.batches[len(ref.m.batches)-1].last
		if _, _, err := s.FindPosition(last); !errors.Is(err, index.ErrCorrupt) {
			t.Fatalf("FindPosition past the cut: %v, want index.ErrCorrupt", err)
		}
		for _, b := range ref.m.batches[:3] {
			bp, ok, err := s.FindPosition(b.last)
			if err != nil || !ok || bp.Position != b.pos {
				t.Fatalf("FindPosition(%d) before the cut = %+v, %v, %v", b.last, bp, ok, err)
			}
		}
	})
}
