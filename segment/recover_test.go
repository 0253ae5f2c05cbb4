package segment

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	iofs "io/fs"
	"testing"

	"github.com/seglog/seglog/record"
)

// smallIdx keeps preallocated index files small so tests that make many
// segments stay cheap (on the in-memory FS preallocation is real memory).
const smallIdx = 64 << 10

// built is a segment's files after appending and sealing: the reference
// for recovery and truncation tests.
type built struct {
	m           *model
	log, idx, t []byte
}

func buildSealed(t *testing.T, e env, base int64, opts Options, seed uint64, n int) built {
	t.Helper()
	s := mustCreate(t, e, base, opts)
	m := &model{base: base}
	appendN(t, s, m, newGen(seed, base, 150), n)
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return built{m: m,
		log: readFile(t, e.fs, e.path(base, LogSuffix)),
		idx: readFile(t, e.fs, e.path(base, IndexSuffix)),
		t:   readFile(t, e.fs, e.path(base, TimeIndexSuffix))}
}

// recoverFrom writes logBytes as the segment's .log, removes its indexes,
// opens it active and recovers it.
func recoverFrom(t *testing.T, e env, base int64, opts Options, logBytes []byte) (*Segment, RecoverResult) {
	t.Helper()
	writeFile(t, e.fs, e.path(base, LogSuffix), logBytes)
	for _, suf := range []string{IndexSuffix, TimeIndexSuffix} {
		if err := e.fs.Remove(e.path(base, suf)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	s, err := Open(e.fs, e.dir, base, true, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !s.NeedsRecovery() {
		t.Fatal("NeedsRecovery false with the index files missing")
	}
	res, err := s.Recover(RecoverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, res
}

// sealedIndexes seals s and returns its index files.
func sealedIndexes(t *testing.T, e env, s *Segment) (idx, ts []byte) {
	t.Helper()
	if err := s.Seal(); err != nil {
		t.Fatal(err)
	}
	base := s.BaseOffset()
	return readFile(t, e.fs, e.path(base, IndexSuffix)), readFile(t, e.fs, e.path(base, TimeIndexSuffix))
}

// prefix is the model of the first k batches.
func (m *model) prefix(k int) *model {
	return &model{base: m.base, batches: m.batches[:k:k]}
}

func TestRecoverClean(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 500, MaxIndexBytes: smallIdx}
		const base = 77
		ref := buildSealed(t, e, base, opts, 11, 120)
		s, res := recoverFrom(t, e, base, opts, ref.log)
		want := RecoverResult{ValidBytes: int64(len(ref.log)), Batches: len(ref.m.batches), NextOffset: ref.m.next()}
		if res != want {
			t.Fatalf("Recover = %+v, want %+v", res, want)
		}
		checkState(t, s, ref.m)
		checkFind(t, s, ref.m)
		idx, ts := sealedIndexes(t, e, s)
		if string(idx) != string(ref.idx) || string(ts) != string(ref.t) {
			t.Fatalf("recovered indexes differ from appended ones:\n%v\n%v\nwant\n%v\n%v",
				decodeOffsetIndex(t, idx, base), decodeTimeIndex(t, ts, base),
				decodeOffsetIndex(t, ref.idx, base), decodeTimeIndex(t, ref.t, base))
		}
		if got := readFile(t, e.fs, e.path(base, LogSuffix)); string(got) != string(ref.log) {
			t.Fatal("clean recovery changed the .log")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		// Recovering a sealed segment rebuilds and re-seals it.
		s, err := Open(e.fs, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := s.Recover(RecoverOptions{}); err != nil || res != want {
			t.Fatalf("sealed Recover = %+v, %v", res, err)
		}
		if !s.IsSealed() {
			t.Fatal("sealed segment not sealed after Recover")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if idx := readFile(t, e.fs, e.path(base, IndexSuffix)); string(idx) != string(ref.idx) {
			t.Fatal("sealed recovery: .index differs")
		}
	})
}

func TestRecoverTornTail(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 200, MaxIndexBytes: smallIdx}
		const base = 3
		ref := buildSealed(t, e, base, opts, 12, 30)
		n := len(ref.m.batches)
		last := ref.m.batches[n-1]
		prev := ref.m.prefix(n - 1)
		// The reference for the indexes: the same segment without its last batch.
		pdir := env{e.name, e.fs, e.dir + "/prefix"}
		if err := e.fs.MkdirAll(pdir.dir); err != nil {
			t.Fatal(err)
		}
		ps, pres := recoverFrom(t, pdir, base, opts, ref.log[:last.pos])
		if pres.Reason != nil {
			t.Fatal(pres.Reason)
		}
		pidx, pts := sealedIndexes(t, pdir, ps)
		ps.Close()

		for cut := last.pos + 1; cut < last.pos+last.size; cut++ {
			s, res := recoverFrom(t, e, base, opts, ref.log[:cut])
			if res.ValidBytes != last.pos || res.TruncatedBytes != cut-last.pos || res.NextOffset != prev.next() || res.Batches != n-1 {
				t.Fatalf("cut %d: Recover = %+v", cut, res)
			}
			var pe *PositionError
			if isZero(ref.log[last.pos:cut]) {
				// The fragment holds only zeros (the high bytes of the
				// base offset): indistinguishable from a zero tail, and
				// cut as one.
				if res.Reason != nil || res.ZeroTailBytes != cut-last.pos {
					t.Fatalf("cut %d: zero fragment: Recover = %+v", cut, res)
				}
			} else if !errors.Is(res.Reason, ErrTornTail) || !errors.As(res.Reason, &pe) || pe.Pos != last.pos || pe.File != s.LogPath() {
				t.Fatalf("cut %d: Reason = %v, want a torn tail at %d", cut, res.Reason, last.pos)
			}
			if errors.Is(res.Reason, record.ErrCorrupt) {
				t.Fatalf("cut %d: torn tail reported as corruption", cut)
			}
			if got := readFile(t, e.fs, e.path(base, LogSuffix)); int64(len(got)) != last.pos {
				t.Fatalf("cut %d: .log is %d bytes, want %d", cut, len(got), last.pos)
			}
			checkState(t, s, prev)
			idx, ts := sealedIndexes(t, e, s)
			if string(idx) != string(pidx) || string(ts) != string(pts) {
				t.Fatalf("cut %d: indexes differ from those of the shorter segment", cut)
			}
			s.Close()
		}
	})
}

func TestRecoverCorruption(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		const base = 0
		ref := buildSealed(t, e, base, opts, 13, 40)
		k := 17
		bad := ref.m.batches[k]

		flips := map[string]func(b []byte){
			"crc of records": func(b []byte) { b[bad.pos+bad.size-1] ^= 0x40 },
			"crc field":      func(b []byte) { b[bad.pos+18] ^= 1 },
			"length too small": func(b []byte) {
				binary.BigEndian.PutUint32(b[bad.pos+8:], 5)
			},
			"length too large": func(b []byte) {
				binary.BigEndian.PutUint32(b[bad.pos+8:], 1<<30)
			},
			"magic": func(b []byte) { b[bad.pos+16] = 7 },
			"offset order": func(b []byte) {
				binary.BigEndian.PutUint64(b[bad.pos:], uint64(ref.m.batches[k-1].last))
			},
		}
		for name, flip := range flips {
			b := append([]byte(nil), ref.log...)
			flip(b)
			s, res := recoverFrom(t, e, base, opts, b)
			if res.ValidBytes != bad.pos || res.TruncatedBytes != int64(len(b))-bad.pos || res.Batches != k || res.NextOffset != ref.m.prefix(k).next() {
				t.Fatalf("%s: Recover = %+v, want truncation at %d", name, res, bad.pos)
			}
			var ce *record.CorruptionError
			var pe *PositionError
			if name == "length too large" {
				// A length running past the end of the file is a partial
				// entry, as in Kafka's FileLogInputStream: stored entries
				// are bounded by the file, not by MaxBatchBytes.
				if !errors.Is(res.Reason, ErrTornTail) || !errors.As(res.Reason, &pe) || pe.Pos != bad.pos {
					t.Fatalf("%s: Reason = %v, want a torn tail at %d", name, res.Reason, bad.pos)
				}
			} else if !errors.As(res.Reason, &ce) || ce.File != s.LogPath() || ce.Pos < bad.pos || ce.Pos >= bad.pos+bad.size {
				t.Fatalf("%s: Reason = %v, want a corruption error in %s within [%d, %d)", name, res.Reason, s.LogPath(), bad.pos, bad.pos+bad.size)
			}
			if name == "offset order" && !errors.Is(res.Reason, ErrOffsetOrder) {
				t.Fatalf("%s: Reason = %v, want ErrOffsetOrder", name, res.Reason)
			}
			checkState(t, s, ref.m.prefix(k))
			checkFind(t, s, ref.m.prefix(k))
			s.Close()
		}
	})
}

func TestRecoverGarbageTail(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		const base = 9
		ref := buildSealed(t, e, base, opts, 14, 20)
		g := newGen(99, 0, 0)
		for i := 0; i < 50; i++ {
			tailBytes := make([]byte, 1+g.r.IntN(3000))
			zero := i%5 == 0 // every fifth tail is zeros, like an untrimmed preallocated file
			if i%5 == 1 {
				// Zeros with one byte of data after them: damage, not a
				// zero tail.
				tailBytes[len(tailBytes)-1] = 1
			} else if !zero {
				for j := range tailBytes {
					tailBytes[j] = byte(g.r.Uint32())
				}
			}
			b := append(append([]byte(nil), ref.log...), tailBytes...)
			s, res := recoverFrom(t, e, base, opts, b)
			if res.ValidBytes != int64(len(ref.log)) || res.TruncatedBytes != int64(len(tailBytes)) {
				t.Fatalf("tail %d: Recover = %+v", i, res)
			}
			// A zero tail is the end of the file: cut, but not a reason.
			if zero && (res.Reason != nil || res.ZeroTailBytes != int64(len(tailBytes))) ||
				!zero && (res.Reason == nil || res.ZeroTailBytes != 0) {
				t.Fatalf("tail %d (zero %v): Recover = %+v", i, zero, res)
			}
			checkState(t, s, ref.m)
			s.Close()
		}
	})
}

// legacyEntry frames a v0 or v1 message with a valid CRC-32: offset, size,
// crc, magic, attributes, [timestamp], key (null), value.
func legacyEntry(offset int64, magic byte, ts int64, value []byte) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, 0) // size, set below
	b = binary.BigEndian.AppendUint32(b, 0) // crc, set below
	b = append(b, magic, 0)
	if magic == 1 {
		b = binary.BigEndian.AppendUint64(b, uint64(ts))
	}
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)
	b = binary.BigEndian.AppendUint32(b, uint32(len(value)))
	b = append(b, value...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[16:]))
	return b
}

func TestRecoverLegacyEntries(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: -1, MaxIndexBytes: smallIdx}
		const base = 100
		v0 := legacyEntry(100, 0, 0, []byte("zero"))
		v1 := legacyEntry(102, 1, 5_000_000, []byte("one")) // a wrapper whose last inner offset is 102
		g := newGen(5, 103, 20)
		mb := g.batch(t)
		logBytes := append(append(append([]byte(nil), v0...), v1...), mb.bytes...)
		s, res := recoverFrom(t, e, base, opts, logBytes)
		defer s.Close()
		if res.Reason != nil || res.Batches != 3 || res.NextOffset != mb.last+1 || res.ValidBytes != int64(len(logBytes)) {
			t.Fatalf("Recover = %+v", res)
		}
		if s.MaxTimestamp() != max(5_000_000, mb.maxTS) {
			t.Fatalf("MaxTimestamp = %d", s.MaxTimestamp())
		}
		for off, wantPos := range map[int64]int64{100: 0, 101: int64(len(v0)), 102: int64(len(v0)), 103: int64(len(v0) + len(v1))} {
			bp, ok, err := s.FindPosition(off)
			if err != nil || !ok || bp.Position != wantPos {
				t.Fatalf("FindPosition(%d) = %+v, %v, %v; want position %d", off, bp, ok, err, wantPos)
			}
		}
		n := 0
		for b, err := range s.Batches(0, s.Size()) {
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(mb.bytes) {
				t.Fatal("Batches yielded something other than the v2 batch")
			}
			n++
		}
		if n != 1 {
			t.Fatalf("Batches yielded %d batches, want the 1 v2 batch", n)
		}

		// A legacy entry with a broken CRC-32 is damage.
		bad := append([]byte(nil), logBytes...)
		bad[len(v0)+20] ^= 1
		s2, res := recoverFrom(t, e, base, opts, bad)
		defer s2.Close()
		if res.ValidBytes != int64(len(v0)) || !errors.Is(res.Reason, record.ErrCorrupt) {
			t.Fatalf("legacy CRC damage: Recover = %+v", res)
		}
	})
}
