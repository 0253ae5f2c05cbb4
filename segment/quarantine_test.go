package segment

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seglog/seglog/layout"
)

// quarantines returns the quarantine files in dir.
func quarantines(t *testing.T, e env) []string {
	t.Helper()
	names, err := e.fs.List(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return !layout.IsQuarantine(n) })
}

// TestRecoverQuarantinesValidBatchesAfterDamage: damage followed by valid
// batches is not a torn tail. Recover cuts the .log at the damage, as
// before, but the bytes from the damage to the end are first copied, byte
// for byte, into a quarantine file named after the segment and the byte,
// and the remnant reports the batches and records that follow.
func TestRecoverQuarantinesValidBatchesAfterDamage(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		const base = 50
		ref := buildSealed(t, e, base, opts, 21, 30)
		k := 11
		bad := ref.m.batches[k]
		after := func(from int) (batches int, records int64) {
			for _, b := range ref.m.batches[from:] {
				batches++
				records += int64(len(b.recs))
			}
			return
		}
		for _, c := range []struct {
			name    string
			damage  func(b []byte)
			counted int   // first batch the remnant counts (the damaged one if its checksum holds)
			first   int64 // the first offset it reports
		}{
			{"crc", func(b []byte) { b[bad.pos+bad.size-2] ^= 0x10 }, k + 1, ref.m.batches[k+1].base},
			{"hole of zeros", func(b []byte) {
				// Unsynced pages lost, later ones written: zeros from the
				// middle of batch k to the middle of batch k+2.
				clear(b[bad.pos+bad.size/2 : ref.m.batches[k+2].pos+20])
			}, k + 3, ref.m.batches[k+3].base},
			{"offset order", func(b []byte) {
				// A whole batch whose offsets go backwards: recovery ends
				// the log before it, and it is valid data worth keeping.
				copy(b[bad.pos:], ref.m.batches[k-1].bytes[:8])
			}, k, ref.m.batches[k-1].base},
		} {
			t.Run(c.name, func(t *testing.T) {
				b := bytes.Clone(ref.log)
				c.damage(b)
				for _, q := range quarantines(t, e) {
					if err := e.fs.Remove(filepath.Join(e.dir, q)); err != nil {
						t.Fatal(err)
					}
				}
				s, res := recoverFrom(t, e, base, opts, b)
				defer s.Close()
				if res.ValidBytes != bad.pos || res.Reason == nil {
					t.Fatalf("Recover = %+v, want a cut at %d", res, bad.pos)
				}
				wantBatches, wantRecords := after(c.counted)
				ad := res.AfterDamage
				if ad.Pos != bad.pos || ad.Bytes != int64(len(b))-bad.pos || ad.Batches != wantBatches || ad.Records != wantRecords ||
					ad.FirstOffset != c.first || ad.LastOffset != ref.m.batches[len(ref.m.batches)-1].last || ad.Unsure {
					t.Fatalf("AfterDamage = %+v, want %d batches, %d records from offset %d", ad, wantBatches, wantRecords, c.first)
				}
				q := res.Quarantine
				wantName := filepath.Join(e.dir, layout.QuarantineName(base, bad.pos, 0))
				if q == nil || q.File != wantName || q.Source != s.LogPath() || q.Remnant != ad || q.Reason != res.Reason {
					t.Fatalf("Quarantine = %+v, want %s", q, wantName)
				}
				if got := readFile(t, e.fs, q.File); !bytes.Equal(got, b[bad.pos:]) {
					t.Fatalf("quarantine holds %d bytes, not the %d after the damage byte for byte", len(got), len(b)-int(bad.pos))
				}
				if got := readFile(t, e.fs, s.LogPath()); !bytes.Equal(got, b[:bad.pos]) {
					t.Fatal(".log is not the prefix before the damage")
				}
				checkState(t, s, ref.m.prefix(k))
				// Recovering again finds nothing to keep aside.
				res2, err := s.Recover(RecoverOptions{})
				if err != nil || res2.Reason != nil || res2.Quarantine != nil {
					t.Fatalf("second Recover = %+v, %v", res2, err)
				}
				if qs := quarantines(t, e); len(qs) != 1 {
					t.Fatalf("quarantine files %v, want one", qs)
				}
			})
		}
	})
}

// TestRecoverTornTailMakesNoQuarantine: bytes after the damage that hold no
// valid batch (a torn last batch, garbage, zeros) are cut as before.
func TestRecoverTornTailMakesNoQuarantine(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		const base = 0
		ref := buildSealed(t, e, base, opts, 22, 20)
		last := ref.m.batches[len(ref.m.batches)-1]
		garbage := bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef, 0x02}, 900)
		for name, b := range map[string][]byte{
			"torn last batch":    ref.log[:last.pos+last.size-3],
			"garbage":            append(bytes.Clone(ref.log), garbage...),
			"zeros then garbage": append(append(bytes.Clone(ref.log), make([]byte, 5000)...), garbage...),
		} {
			s, res := recoverFrom(t, e, base, opts, b)
			if res.Reason == nil || res.AfterDamage.HoldsValid() || res.Quarantine != nil {
				t.Fatalf("%s: Recover = %+v", name, res)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if qs := quarantines(t, e); len(qs) != 0 {
				t.Fatalf("%s: quarantine files %v", name, qs)
			}
		}
	})
}

// TestQuarantineNeverOverwrites: a quarantine file already holding the same
// bytes is reused (recovery ran again after a crash before its truncation
// was durable), one holding a prefix of them is completed (a crash during
// the copy), and one holding anything else is left as it is while the next
// name is taken.
func TestQuarantineNeverOverwrites(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		const base = 7
		ref := buildSealed(t, e, base, opts, 23, 20)
		bad := ref.m.batches[5]
		b := bytes.Clone(ref.log)
		b[bad.pos+bad.size-1] ^= 1
		name := func(n int) string { return filepath.Join(e.dir, layout.QuarantineName(base, bad.pos, n)) }

		recoverOnce := func() *Quarantine {
			t.Helper()
			s, res := recoverFrom(t, e, base, opts, b)
			s.Close()
			if res.Quarantine == nil {
				t.Fatalf("no quarantine: %+v", res)
			}
			return res.Quarantine
		}
		if q := recoverOnce(); q.File != name(0) {
			t.Fatalf("first quarantine %s", q.File)
		}
		if q := recoverOnce(); q.File != name(0) {
			t.Fatalf("same bytes again: quarantine %s, want %s reused", q.File, name(0))
		}
		// A prefix (an interrupted copy) is completed in place.
		writeFile(t, e.fs, name(0), b[bad.pos:bad.pos+100])
		if q := recoverOnce(); q.File != name(0) || !bytes.Equal(readFile(t, e.fs, name(0)), b[bad.pos:]) {
			t.Fatalf("prefix: quarantine %s", q.File)
		}
		// Other bytes under the name stay; the next name is used.
		other := []byte("someone else's bytes")
		writeFile(t, e.fs, name(0), other)
		if q := recoverOnce(); q.File != name(1) || !bytes.Equal(readFile(t, e.fs, name(1)), b[bad.pos:]) {
			t.Fatalf("taken name: quarantine %s", q.File)
		}
		if !bytes.Equal(readFile(t, e.fs, name(0)), other) {
			t.Fatal("an existing quarantine file was overwritten")
		}
	})
}

// TestSetAsideSegment: a later segment holding a valid batch is renamed to a
// quarantine file (never over an existing one), one holding none is
// deleted; the index files go either way.
func TestSetAsideSegment(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		ref := buildSealed(t, e, 100, opts, 24, 10)
		taken := filepath.Join(e.dir, layout.QuarantineName(100, 0, 0))
		writeFile(t, e.fs, taken, []byte("older"))
		q, err := SetAsideSegment(e.fs, e.dir, 100)
		if err != nil || q == nil {
			t.Fatalf("SetAsideSegment = %+v, %v", q, err)
		}
		if want := filepath.Join(e.dir, layout.QuarantineName(100, 0, 1)); q.File != want || q.Batches != 10 || q.Reason != nil || q.Pos != 0 {
			t.Fatalf("quarantine %+v, want %s with 10 batches", q, want)
		}
		if !bytes.Equal(readFile(t, e.fs, q.File), ref.log) || !bytes.Equal(readFile(t, e.fs, taken), []byte("older")) {
			t.Fatal("quarantine does not hold the segment, or an older one was replaced")
		}
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			if _, err := e.fs.Stat(e.path(100, suf)); err == nil {
				t.Fatalf("%s still there", suf)
			}
		}

		buildSealed(t, e, 200, opts, 25, 3)
		writeFile(t, e.fs, e.path(200, LogSuffix), bytes.Repeat([]byte{0x55}, 3000))
		if q, err := SetAsideSegment(e.fs, e.dir, 200); err != nil || q != nil {
			t.Fatalf("garbage segment: SetAsideSegment = %+v, %v", q, err)
		}
		for _, suf := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			if _, err := e.fs.Stat(e.path(200, suf)); err == nil {
				t.Fatalf("garbage segment: %s still there", suf)
			}
		}
	})
}

// TestRemnantLegacyAndBound: a legacy entry after damage counts as valid
// data; a scan that runs out of checksum budget is unsure, and unsure
// counts as holding valid data.
func TestRemnantLegacyAndBound(t *testing.T) {
	garbage := bytes.Repeat([]byte{0xff}, 300)
	v1 := legacyEntry(40, 1, 123, []byte("legacy"))
	data := append(bytes.Clone(garbage), v1...)
	r, err := scanRemnant(bytes.NewReader(data), "x.log", 0, int64(len(data)))
	if err != nil || r.Batches != 1 || r.Records != 1 || r.FirstOffset != 40 || r.LastOffset != 40 || r.Unsure {
		t.Fatalf("legacy remnant = %+v, %v", r, err)
	}
	// Inner lengths that do not add up: not taken for an entry.
	broken := bytes.Clone(v1)
	broken[len(broken)-len("legacy")-1]++ // value length, then fix nothing else
	r, err = scanRemnant(bytes.NewReader(broken), "x.log", 0, int64(len(broken)))
	if err != nil || r.HoldsValid() {
		t.Fatalf("broken legacy remnant = %+v, %v", r, err)
	}

	g := newGen(26, 0, 400)
	mb := g.batch(t)
	data = append(bytes.Clone(garbage), mb.bytes...)
	old := remnantBudget
	defer func() { remnantBudget = old }()
	remnantBudget = func(int64) int64 { return int64(len(mb.bytes)) - 1 }
	r, err = scanRemnant(bytes.NewReader(data), "x.log", 0, int64(len(data)))
	if err != nil || !r.Unsure || r.Batches != 0 || !r.HoldsValid() {
		t.Fatalf("over budget: remnant = %+v, %v", r, err)
	}
	remnantBudget = old
	r, err = scanRemnant(bytes.NewReader(data), "x.log", 0, int64(len(data)))
	if err != nil || r.Unsure || r.Batches != 1 || r.Pos != 0 || r.Bytes != int64(len(data)) {
		t.Fatalf("remnant = %+v, %v", r, err)
	}
}

// TestQuarantineFrom: bytes cut at a position of the caller's choosing are
// kept when they hold a valid entry, and not when they hold none.
func TestQuarantineFrom(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		ref := buildSealed(t, e, 0, opts, 27, 12)
		at := ref.m.batches[4].pos
		q, err := QuarantineFrom(e.fs, e.dir, 0, at, nil)
		if err != nil || q == nil || q.Batches != 8 || q.Pos != at {
			t.Fatalf("QuarantineFrom = %+v, %v", q, err)
		}
		if !bytes.Equal(readFile(t, e.fs, q.File), ref.log[at:]) {
			t.Fatal("quarantine does not hold the bytes from the cut")
		}
		last := ref.m.batches[11]
		if q, err := QuarantineFrom(e.fs, e.dir, 0, last.pos+1, nil); err != nil || q != nil {
			t.Fatalf("inside the last batch: %+v, %v", q, err)
		}
	})
}
