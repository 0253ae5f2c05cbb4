package segment

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/seglog/seglog/record"
)

func TestFileNames(t *testing.T) {
	if got, want := FileName(42, LogSuffix), "00000000000000000042.log"; got != want {
		t.Fatalf("FileName = %q, want %q", got, want)
	}
	if got := FileName(1<<63-1, IndexSuffix); got != "09223372036854775807.index" {
		t.Fatalf("FileName(max) = %q", got)
	}
	ok := []struct {
		name   string
		base   int64
		suffix string
	}{
		{"00000000000000000042.log", 42, ".log"},
		{"00000000000000000000.index", 0, ".index"},
		{"00000000000000368769.timeindex", 368769, ".timeindex"},
		{"00000000000000000007.txnindex", 7, ".txnindex"},
		{"00000000000000001234.snapshot", 1234, ".snapshot"},
		{"00000000000000000042.log.deleted", 42, ".log.deleted"},
		{"00000000000000000042.index.cleaned", 42, ".index.cleaned"},
		{"00000000000000000042.timeindex.swap", 42, ".timeindex.swap"},
	}
	for _, c := range ok {
		base, suffix, good := ParseFileName(c.name)
		if !good || base != c.base || suffix != c.suffix {
			t.Errorf("ParseFileName(%q) = %d, %q, %v; want %d, %q, true", c.name, base, suffix, good, c.base, c.suffix)
		}
	}
	for _, name := range []string{
		"", "00000000000000000042", "0000000000000000042.log", "000000000000000000042.log",
		"0000000000000000004x.log", "00000000000000000042.txt", "00000000000000000042.log.bak",
		"00000000000000000042.deleted", "99999999999999999999.log", "leader-epoch-checkpoint",
		"00000000000000000042.log.deleted.deleted",
	} {
		if base, suffix, good := ParseFileName(name); good {
			t.Errorf("ParseFileName(%q) = %d, %q, true; want false", name, base, suffix)
		}
	}
	for _, base := range []int64{0, 1, 99, 1 << 40} {
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix} {
			b, s, good := ParseFileName(FileName(base, suf) + DeletedSuffix)
			if !good || b != base || s != suf+DeletedSuffix {
				t.Errorf("round trip %d%s: %d %q %v", base, suf, b, s, good)
			}
		}
	}
}

// checkFind compares FindPosition for every offset around the segment's
// range with the model.
func checkFind(t *testing.T, s *Segment, m *model) {
	t.Helper()
	for off := m.base - 2; off <= m.next()+2; off++ {
		got, ok, err := s.FindPosition(off)
		if err != nil {
			t.Fatalf("FindPosition(%d): %v", off, err)
		}
		want, wok := m.findPosition(off)
		if ok != wok {
			t.Fatalf("FindPosition(%d) found=%v, want %v", off, ok, wok)
		}
		if !ok {
			continue
		}
		if got != (BatchPosition{Position: want.pos, Size: want.size, BaseOffset: want.base, LastOffset: want.last}) {
			t.Fatalf("FindPosition(%d) = %+v, want batch at %d size %d [%d,%d]", off, got, want.pos, want.size, want.base, want.last)
		}
	}
}

func checkState(t *testing.T, s *Segment, m *model) {
	t.Helper()
	if s.Size() != m.size() {
		t.Fatalf("Size = %d, want %d", s.Size(), m.size())
	}
	if s.NextOffset() != m.next() {
		t.Fatalf("NextOffset = %d, want %d", s.NextOffset(), m.next())
	}
	if s.MaxTimestamp() != m.maxTS() {
		t.Fatalf("MaxTimestamp = %d, want %d", s.MaxTimestamp(), m.maxTS())
	}
}

func TestAppendFindPosition(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		const base = 1000
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		s := mustCreate(t, e, base, opts)
		m := &model{base: base}
		checkState(t, s, m)
		checkFind(t, s, m)
		appendN(t, s, m, newGen(1, base, 120), 150)
		checkState(t, s, m)
		checkFind(t, s, m)
		if got := readFile(t, e.fs, e.path(base, LogSuffix)); string(got) != string(concat(m)) {
			t.Fatalf(".log content differs from the appended batches")
		}

		// Reopen as active (after a clean close) and as sealed: same answers.
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		for _, active := range []bool{true, false} {
			s, err := Open(e.fs, e.dir, base, active, opts)
			if err != nil {
				t.Fatal(err)
			}
			if s.NeedsRecovery() {
				t.Fatal("NeedsRecovery after a clean close")
			}
			checkState(t, s, m)
			checkFind(t, s, m)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func concat(m *model) []byte {
	var b []byte
	for _, mb := range m.batches {
		b = append(b, mb.bytes...)
	}
	return b
}

func TestCreateRefusesExisting(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		s := mustCreate(t, e, 5, Options{MaxIndexBytes: smallIdx})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := Create(e.fs, e.dir, 5, Options{})
		if !errors.Is(err, ErrExists) {
			t.Fatalf("Create over existing files: %v, want ErrExists", err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != e.path(5, LogSuffix) {
			t.Fatalf("error %v does not name the file", err)
		}
	})
}

// TestIndexFilesKafkaRule decodes the sealed index files independently and
// compares them with Kafka's append rule computed from the model.
func TestIndexFilesKafkaRule(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		for _, interval := range []int{-1, 1, 257, 4096} {
			base := int64(interval + 10)
			s := mustCreate(t, e, base, Options{IndexIntervalBytes: interval, MaxIndexBytes: smallIdx})
			m := &model{base: base}
			appendN(t, s, m, newGen(uint64(interval+5), base, 300), 200)
			if err := s.Seal(); err != nil {
				t.Fatal(err)
			}
			offs := decodeOffsetIndex(t, readFile(t, e.fs, e.path(base, IndexSuffix)), base)
			times := decodeTimeIndex(t, readFile(t, e.fs, e.path(base, TimeIndexSuffix)), base)
			wantOffs, wantTimes := kafkaIndexes(m, int64(max(interval, 0)))
			if !equal(offs, wantOffs) {
				t.Fatalf("interval %d: .index = %v\nwant %v", interval, offs, wantOffs)
			}
			if !equal(times, wantTimes) {
				t.Fatalf("interval %d: .timeindex = %v\nwant %v", interval, times, wantTimes)
			}
			// Properties that do not depend on the simulation above.
			byLast := map[int64]mbatch{}
			for _, b := range m.batches {
				byLast[b.last] = b
			}
			prevPos := int64(-1)
			for _, oe := range offs {
				b, ok := byLast[oe.off]
				if !ok || b.pos != oe.pos {
					t.Fatalf("offset entry %+v is not a batch's last offset and start position", oe)
				}
				if b.pos == 0 {
					t.Fatalf("first batch indexed")
				}
				if prevPos >= 0 && oe.pos-prevPos <= int64(max(interval, 0)) {
					t.Fatalf("entries at %d and %d closer than the interval %d", prevPos, oe.pos, interval)
				}
				prevPos = oe.pos
			}
			for i := 1; i < len(times); i++ {
				if times[i].ts <= times[i-1].ts || times[i].off < times[i-1].off {
					t.Fatalf("time entries not increasing: %v", times)
				}
			}
			if len(times) == 0 || times[len(times)-1].ts != m.maxTS() {
				t.Fatalf("last time entry %v, want the segment max %d", times, m.maxTS())
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func equal[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFindOffsetForTime(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		const base = 50
		s := mustCreate(t, e, base, Options{IndexIntervalBytes: 200, MaxIndexBytes: smallIdx})
		m := &model{base: base}
		appendN(t, s, m, newGen(7, base, 80), 120)
		check := func(s *Segment) {
			t.Helper()
			lo, hi := int64(1<<62), int64(-1)
			for _, b := range m.batches {
				for _, r := range b.recs {
					lo, hi = min(lo, r.ts), max(hi, r.ts)
				}
			}
			// Every timestamp near the range ends, a stride in between.
			step := max((hi-lo)/400, 1)
			for ts := lo - 3; ts <= hi+3; ts += min(step, max(1, min(ts-lo+4, hi+4-ts))) {
				for _, from := range []int64{base, m.batches[len(m.batches)/2].recs[0].off} {
					got, ok, err := s.FindOffsetForTimeFrom(ts, from)
					if err != nil {
						t.Fatalf("FindOffsetForTimeFrom(%d, %d): %v", ts, from, err)
					}
					want, wok := m.offsetForTime(ts, from)
					if ok != wok || (ok && got != want) {
						t.Fatalf("FindOffsetForTimeFrom(%d, %d) = %d, %v; want %d, %v", ts, from, got, ok, want, wok)
					}
				}
			}
		}
		check(s)
		if err := s.Seal(); err != nil {
			t.Fatal(err)
		}
		check(s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err := Open(e.fs, e.dir, base, false, Options{IndexIntervalBytes: 200, MaxIndexBytes: smallIdx})
		if err != nil {
			t.Fatal(err)
		}
		check(s)
		s.Close()
	})
}

func TestAppendRefusesBadBatches(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		s := mustCreate(t, e, 100, Options{MaxBatchBytes: 4096, MaxIndexBytes: smallIdx})
		defer s.Close()
		m := &model{base: 100}
		g := newGen(3, 100, 10)
		appendN(t, s, m, g, 3)
		good := g.batch(t)
		cases := map[string]func() []byte{
			"short": func() []byte { return good.bytes[:40] },
			"length": func() []byte {
				b := append([]byte(nil), good.bytes...)
				return b[:len(b)-1]
			},
			"magic": func() []byte {
				b := append([]byte(nil), good.bytes...)
				b[16] = 1
				return b
			},
			"offset below next": func() []byte {
				b := append([]byte(nil), good.bytes...)
				record.Batch(b).SetBaseOffset(m.next() - 1)
				return b
			},
			"relative overflow": func() []byte {
				b := append([]byte(nil), good.bytes...)
				record.Batch(b).SetBaseOffset(100 + 1<<31)
				return b
			},
			"too large": func() []byte {
				big := record.NewBuilder(record.None)
				big.SetBaseOffset(m.next())
				if err := big.Add(record.Record{Offset: m.next(), Value: make([]byte, 5000)}); err != nil {
					t.Fatal(err)
				}
				b, _ := big.Build()
				return b
			},
		}
		for name, mk := range cases {
			err := s.Append(mk())
			if !errors.Is(err, ErrBadAppend) {
				t.Errorf("%s: Append = %v, want ErrBadAppend", name, err)
			}
		}
		checkState(t, s, m)
		if got := readFile(t, e.fs, e.path(100, LogSuffix)); string(got) != string(concat(m)) {
			t.Fatal("refused appends changed the file")
		}
		// The good batch still goes in after the refusals.
		good.pos = m.size()
		if err := s.Append(good.bytes); err != nil {
			t.Fatal(err)
		}
		m.batches = append(m.batches, good)
		checkState(t, s, m)
		checkFind(t, s, m)
	})
}
