package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// fillTime offers n (timestamp, offset) pairs the way a segment does: the
// running maximum timestamp, with offsets growing; some offers repeat the
// last timestamp (ignored). It returns the entries that must have been
// written.
func fillTime(t *testing.T, x *TimeIndex, rng *rand.Rand, n int) []TimestampOffset {
	t.Helper()
	var model []TimestampOffset
	last := x.LastEntry()
	ts, off := max(last.Timestamp, 1_700_000_000_000), last.Offset
	for i := 0; i < n; i++ {
		off += rng.Int64N(20)
		if rng.IntN(4) > 0 {
			ts += 1 + rng.Int64N(1000)
		}
		before := x.Entries()
		if err := x.MaybeAppend(ts, off, false); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		written := 0
		if ts > last.Timestamp {
			model = append(model, TimestampOffset{ts, off})
			last.Timestamp = ts
			written = 1
		}
		if x.Entries() != before+written {
			t.Fatalf("offer %d of timestamp %d changed entries from %d to %d", i, ts, before, x.Entries())
		}
	}
	return model
}

func checkTimeLookups(t *testing.T, x *TimeIndex, model []TimestampOffset, rng *rand.Rand, probes int) {
	t.Helper()
	base := x.BaseOffset()
	// First, while a sealed index may not be mapped yet (read with ReadAt).
	wantLast := TimestampOffset{NoTimestamp, base}
	if len(model) > 0 {
		wantLast = model[len(model)-1]
	}
	if got := x.LastEntry(); got != wantLast {
		t.Fatalf("LastEntry() = %+v, want %+v", got, wantLast)
	}
	lo, hi := int64(1_700_000_000_000), int64(1_700_000_000_000)
	if len(model) > 0 {
		lo, hi = model[0].Timestamp, model[len(model)-1].Timestamp
	}
	for i := 0; i < probes; i++ {
		ts := lo - 5 + rng.Int64N(hi-lo+10)
		if got, want := x.Lookup(ts), modelTimeLookup(model, base, ts); got != want {
			t.Fatalf("Lookup(%d) = %+v, want %+v (%d entries)", ts, got, want, len(model))
		}
	}
	if got := x.Entries(); got != len(model) {
		t.Fatalf("Entries() = %d, want %d", got, len(model))
	}
	for i, e := range model {
		if got := x.Entry(i); got != e {
			t.Fatalf("Entry(%d) = %+v, want %+v", i, got, e)
		}
	}
}

func TestTimeAppendLookupModel(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		rng := rand.New(rand.NewPCG(11, 12))
		for _, n := range []int{0, 1, 9, 1000, 4000} {
			base := rng.Int64N(1 << 40)
			p := indexPath(dir, fmt.Sprintf("%d.timeindex", n))
			x := mustTime(t, fsys, p, base, Options{MaxBytes: 12 * 4100, Writable: true})
			model := fillTime(t, x, rng, n)
			checkTimeLookups(t, x, model, rng, 3000)
			if err := x.Seal(); err != nil {
				t.Fatal(err)
			}
			checkTimeLookups(t, x, model, rng, 1000)
			raw := readFile(t, fsys, p)
			if len(raw) != 12*len(model) {
				t.Fatalf("sealed file has %d bytes, want %d", len(raw), 12*len(model))
			}
			for i, e := range decodeTimeFile(t, raw, base) {
				if e != model[i] {
					t.Fatalf("file entry %d = %+v, want %+v", i, e, model[i])
				}
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			y := mustTime(t, fsys, p, base, Options{MaxBytes: 12 * 4100})
			checkTimeLookups(t, y, model, rng, 1000)
			if err := y.SanityCheck(); err != nil {
				t.Fatal(err)
			}
			// Active again: grows back, appends continue.
			if err := y.MakeWritable(); err != nil {
				t.Fatal(err)
			}
			if got := fileSize(t, fsys, p); got != 12*4100 {
				t.Fatalf("file size %d after MakeWritable", got)
			}
			model = append(model, fillTime(t, y, rng, 50)...)
			checkTimeLookups(t, y, model, rng, 500)
			if err := y.Delete(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestTimeWarmBoundaries(t *testing.T) {
	const warm = warmBytes / TimeEntrySize
	if warm != 682 {
		t.Fatalf("warm entries = %d, want Kafka's 682", warm)
	}
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		for _, n := range []int{1, 2, 3, warm - 1, warm, warm + 1, warm + 2, warm + 3, 2*warm + 5} {
			x := mustTime(t, fsys, indexPath(dir, "b.timeindex"), 100, Options{MaxBytes: 12 * 2000, Writable: true})
			var model []TimestampOffset
			for i := 0; i < n; i++ {
				e := TimestampOffset{Timestamp: 1000 + 3*int64(i), Offset: 100 + int64(i)}
				if err := x.MaybeAppend(e.Timestamp, e.Offset, false); err != nil {
					t.Fatal(err)
				}
				model = append(model, e)
			}
			for ts := int64(990); ts <= 1000+3*int64(n+2); ts++ {
				if got, want := x.Lookup(ts), modelTimeLookup(model, 100, ts); got != want {
					t.Fatalf("n=%d: Lookup(%d) = %+v, want %+v", n, ts, got, want)
				}
			}
			for _, ts := range []int64{math.MinInt64, -1, 0, math.MaxInt64} {
				if got, want := x.Lookup(ts), modelTimeLookup(model, 100, ts); got != want {
					t.Fatalf("n=%d: Lookup(%d) = %+v, want %+v", n, ts, got, want)
				}
			}
			if err := x.Delete(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestTimeMaybeAppendRules(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		p := indexPath(dir, "r.timeindex")
		x := mustTime(t, fsys, p, 50, Options{MaxBytes: 12 * 10, Writable: true})
		defer x.Close()
		// NoTimestamp (v0 data) is never indexed.
		if err := x.MaybeAppend(NoTimestamp, 60, false); err != nil || x.Entries() != 0 {
			t.Fatalf("NoTimestamp: %v, %d entries", err, x.Entries())
		}
		wantErr(t, x.MaybeAppend(5, 49, false), ErrInvalidOffset, p, 0)
		wantErr(t, x.MaybeAppend(5, 50+math.MaxInt32+1, false), ErrOverflow, p, 0)
		if err := x.MaybeAppend(100, 50, false); err != nil { // the base offset is a valid entry
			t.Fatal(err)
		}
		if err := x.MaybeAppend(100, 55, false); err != nil || x.Entries() != 1 { // equal timestamp: ignored
			t.Fatalf("equal timestamp: %v, %d entries", err, x.Entries())
		}
		wantErr(t, x.MaybeAppend(99, 60, false), ErrInvalidTimestamp, p, 12)
		wantErr(t, x.MaybeAppend(200, 49, false), ErrInvalidOffset, p, 12)
		if err := x.MaybeAppend(200, 50, false); err != nil { // same offset, larger timestamp
			t.Fatal(err)
		}
		want := TimestampOffset{200, 50}
		if got := x.LastEntry(); got != want {
			t.Fatalf("LastEntry() = %+v, want %+v", got, want)
		}
		if x.Entries() != 2 {
			t.Fatalf("Entries() = %d, want 2", x.Entries())
		}
	})
}

// TestTimeFull checks Kafka's reserved last slot: full at maxEntries-1,
// with the final (skipFullCheck) entry still fitting.
func TestTimeFull(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		p := indexPath(dir, "f.timeindex")
		x := mustTime(t, fsys, p, 0, Options{MaxBytes: 12*4 + 11, Writable: true})
		if x.MaxEntries() != 4 || fileSize(t, fsys, p) != 48 {
			t.Fatalf("MaxEntries() = %d, size %d", x.MaxEntries(), fileSize(t, fsys, p))
		}
		for i := int64(1); i <= 3; i++ {
			if x.IsFull() {
				t.Fatalf("full after %d entries", i-1)
			}
			if err := x.MaybeAppend(i*10, i, false); err != nil {
				t.Fatal(err)
			}
		}
		if !x.IsFull() {
			t.Fatal("not full at maxEntries-1 entries")
		}
		wantErr(t, x.MaybeAppend(40, 4, false), ErrFull, p, 36)
		if err := x.MaybeAppend(40, 4, true); err != nil {
			t.Fatalf("final entry with skipFullCheck: %v", err)
		}
		wantErr(t, x.MaybeAppend(50, 5, true), ErrFull, p, 48)
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		got := decodeTimeFile(t, readFile(t, fsys, p), 0)
		if len(got) != 4 || got[3] != (TimestampOffset{40, 4}) {
			t.Fatalf("file entries %+v", got)
		}
		// Kafka's default: 10 MiB rounds to 873,813 slots.
		if DefaultMaxBytes/TimeEntrySize != 873813 || DefaultMaxBytes/OffsetEntrySize != 1310720 {
			t.Fatal("default slot counts differ from Kafka's")
		}
	})
}

func TestTimeTruncate(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		for _, sealed := range []bool{false, true} {
			p := indexPath(dir, fmt.Sprintf("t%v.timeindex", sealed))
			x := mustTime(t, fsys, p, 10, Options{MaxBytes: 12 * 100, Writable: true})
			// Offsets repeat: (ts, 10) (ts, 12) (ts, 12) (ts, 14) ...
			var model []TimestampOffset
			for i := 0; i < 40; i++ {
				e := TimestampOffset{int64(1000 + i), 10 + 2*int64((i+1)/2)}
				if err := x.MaybeAppend(e.Timestamp, e.Offset, false); err != nil {
					t.Fatal(err)
				}
				model = append(model, e)
			}
			if sealed {
				if err := x.Seal(); err != nil {
					t.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(13, 14))
			for _, to := range []int64{100, 40, 31, 30, 12, 11, 10} {
				if err := x.TruncateTo(to); err != nil {
					t.Fatal(err)
				}
				k := 0
				for k < len(model) && model[k].Offset < to {
					k++
				}
				model = model[:k]
				checkTimeLookups(t, x, model, rng, 200)
				if sealed && fileSize(t, fsys, p) != int64(12*k) {
					t.Fatalf("sealed file size %d after truncate to %d, want %d", fileSize(t, fsys, p), to, 12*k)
				}
			}
			if x.Entries() != 0 {
				t.Fatalf("Entries() = %d after truncating to base", x.Entries())
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
