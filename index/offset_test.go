package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// fillOffset appends n entries with random offset gaps and increasing
// positions and returns the model.
func fillOffset(t *testing.T, x *OffsetIndex, rng *rand.Rand, n int) []OffsetPosition {
	t.Helper()
	var model []OffsetPosition
	last := x.Lookup(math.MaxInt64)
	off, pos := last.Offset, last.Position
	for i := 0; i < n; i++ {
		off += 1 + rng.Int64N(20)
		pos += 1 + rng.Int64N(5000)
		if err := x.Append(off, pos); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		model = append(model, OffsetPosition{off, pos})
	}
	return model
}

func checkOffsetLookups(t *testing.T, x *OffsetIndex, model []OffsetPosition, rng *rand.Rand, probes int) {
	t.Helper()
	base := x.BaseOffset()
	last := base
	if len(model) > 0 {
		last = model[len(model)-1].Offset
	}
	// First, while a sealed index may not be mapped yet (read with ReadAt).
	if got := x.LastOffset(); got != last {
		t.Fatalf("LastOffset() = %d, want %d", got, last)
	}
	for i := 0; i < probes; i++ {
		target := base - 5 + rng.Int64N(last-base+10)
		if got, want := x.Lookup(target), modelOffsetLookup(model, base, target); got != want {
			t.Fatalf("Lookup(%d) = %+v, want %+v (%d entries)", target, got, want, len(model))
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
	if got := x.LastOffset(); got != last {
		t.Fatalf("LastOffset() = %d, want %d", got, last)
	}
}

func TestOffsetAppendLookupModel(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		rng := rand.New(rand.NewPCG(1, 2))
		for _, n := range []int{0, 1, 7, 1500, 5000} {
			base := rng.Int64N(1 << 40)
			p := indexPath(dir, "a.index")
			x := mustOffset(t, fsys, p, base, Options{MaxBytes: 8 * 6000, Writable: true})
			model := fillOffset(t, x, rng, n)
			checkOffsetLookups(t, x, model, rng, 3000)

			// The same answers after sealing (lazy read-only mapping) and
			// after reopening the trimmed file.
			if err := x.Seal(); err != nil {
				t.Fatal(err)
			}
			checkOffsetLookups(t, x, model, rng, 1000)
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			y := mustOffset(t, fsys, p, base, Options{MaxBytes: 8 * 6000})
			checkOffsetLookups(t, y, model, rng, 1000)
			if err := y.SanityCheck(); err != nil {
				t.Fatal(err)
			}
			if err := y.Delete(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestOffsetWarmBoundaries looks up every entry, the offsets around it, and
// the ends, for entry counts around the warm-section size (1,024 entries):
// the hot/cold split point moves through the interesting cases.
func TestOffsetWarmBoundaries(t *testing.T) {
	const warm = warmBytes / OffsetEntrySize
	if warm != 1024 {
		t.Fatalf("warm entries = %d, want Kafka's 1024", warm)
	}
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		for _, n := range []int{1, 2, 3, warm - 1, warm, warm + 1, warm + 2, warm + 3, 2*warm + 5} {
			x := mustOffset(t, fsys, indexPath(dir, "b.index"), 100, Options{MaxBytes: 8 * 3000, Writable: true})
			var model []OffsetPosition
			for i := 0; i < n; i++ {
				e := OffsetPosition{Offset: 100 + 3*int64(i+1), Position: 7 * int64(i)}
				if err := x.Append(e.Offset, e.Position); err != nil {
					t.Fatal(err)
				}
				model = append(model, e)
			}
			for target := int64(90); target <= 100+3*int64(n+2); target++ {
				if got, want := x.Lookup(target), modelOffsetLookup(model, 100, target); got != want {
					t.Fatalf("n=%d: Lookup(%d) = %+v, want %+v", n, target, got, want)
				}
			}
			for _, target := range []int64{math.MinInt64, -1, 0, math.MaxInt64, 100 + math.MaxInt32, 101 + math.MaxInt32} {
				if got, want := x.Lookup(target), modelOffsetLookup(model, 100, target); got != want {
					t.Fatalf("n=%d: Lookup(%d) = %+v, want %+v", n, target, got, want)
				}
			}
			if err := x.Delete(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestOffsetAppendErrors(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		p := indexPath(dir, "e.index")
		x := mustOffset(t, fsys, p, 1000, Options{MaxBytes: 8 * 3, Writable: true})
		defer x.Close()
		wantErr(t, x.Append(1000, 0), ErrInvalidOffset, p, 0)
		wantErr(t, x.Append(999, 0), ErrInvalidOffset, p, 0)
		wantErr(t, x.Append(1000+math.MaxInt32+1, 0), ErrOverflow, p, 0)
		wantErr(t, x.Append(1001, -1), ErrOverflow, p, 0)
		wantErr(t, x.Append(1001, math.MaxInt32+1), ErrOverflow, p, 0)
		if err := x.Append(1000+math.MaxInt32, math.MaxInt32); err != nil {
			t.Fatal(err) // the extremes fit
		}
		wantErr(t, x.Append(1000+math.MaxInt32, math.MaxInt32), ErrInvalidOffset, p, 8)
		if x.Entries() != 1 || x.IsFull() {
			t.Fatalf("entries %d full %v after rejected appends", x.Entries(), x.IsFull())
		}
		if got := x.Lookup(math.MaxInt64); got != (OffsetPosition{1000 + math.MaxInt32, math.MaxInt32}) {
			t.Fatalf("Lookup(max) = %+v", got)
		}
	})
}

func TestOffsetFull(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		p := indexPath(dir, "f.index")
		// 35 bytes round down to 4 entries, as Kafka rounds segment.index.bytes.
		x := mustOffset(t, fsys, p, 0, Options{MaxBytes: 35, Writable: true})
		if x.MaxEntries() != 4 {
			t.Fatalf("MaxEntries() = %d, want 4", x.MaxEntries())
		}
		if got := fileSize(t, fsys, p); got != 32 {
			t.Fatalf("preallocated size %d, want 32", got)
		}
		for i := int64(1); i <= 4; i++ {
			if x.IsFull() {
				t.Fatalf("full after %d entries", i-1)
			}
			if err := x.Append(i, i*10); err != nil {
				t.Fatal(err)
			}
		}
		if !x.IsFull() {
			t.Fatal("not full after 4 entries")
		}
		wantErr(t, x.Append(5, 50), ErrFull, p, 32)
		if err := x.TruncateTo(4); err != nil {
			t.Fatal(err)
		}
		if x.IsFull() {
			t.Fatal("full after truncation")
		}
		if err := x.Append(5, 50); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		want := []OffsetPosition{{1, 10}, {2, 20}, {3, 30}, {5, 50}}
		got := decodeOffsetFile(t, readFile(t, fsys, p), 0)
		if len(got) != len(want) {
			t.Fatalf("file entries %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("file entries %+v, want %+v", got, want)
			}
		}
	})
}

func TestOffsetTruncate(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		rng := rand.New(rand.NewPCG(3, 4))
		for _, sealed := range []bool{false, true} {
			p := indexPath(dir, fmt.Sprintf("t%v.index", sealed))
			x := mustOffset(t, fsys, p, 500, Options{MaxBytes: 8 * 400, Writable: true})
			model := fillOffset(t, x, rng, 300)
			if sealed {
				if err := x.Seal(); err != nil {
					t.Fatal(err)
				}
			}
			cut := func(to int64) {
				t.Helper()
				if err := x.TruncateTo(to); err != nil {
					t.Fatal(err)
				}
				k := 0
				for k < len(model) && model[k].Offset < to {
					k++
				}
				model = model[:k]
				checkOffsetLookups(t, x, model, rng, 300)
				if sealed {
					if got := fileSize(t, fsys, p); got != int64(8*len(model)) {
						t.Fatalf("sealed file size %d after truncate, want %d", got, 8*len(model))
					}
				}
			}
			cut(model[len(model)-1].Offset + 1) // past the end: no change
			cut(model[250].Offset)              // exact match is removed too
			cut(model[200].Offset + 1)          // between entries
			if x.Entries() != 201 {
				t.Fatalf("Entries() = %d, want 201", x.Entries())
			}
			cut(500) // base offset: everything
			if x.Entries() != 0 {
				t.Fatalf("Entries() = %d after truncating to base", x.Entries())
			}
			if sealed {
				wantErr(t, x.Append(600, 1), ErrReadOnly, p, -1)
				if err := x.MakeWritable(); err != nil {
					t.Fatal(err)
				}
			}
			model = fillOffset(t, x, rng, 50)
			checkOffsetLookups(t, x, model, rng, 300)
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			if got := decodeOffsetFile(t, readFile(t, fsys, p), 500); len(got) != 50 || got[49] != model[49] {
				t.Fatalf("file after truncate+append: %d entries", len(got))
			}
		}
	})
}

// TestOffsetSealTrimsFile checks the trimmed file byte for byte, decoded by
// hand, and that MakeWritable grows it back and appends continue.
func TestOffsetSealTrimsFile(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		rng := rand.New(rand.NewPCG(5, 6))
		p := indexPath(dir, "s.index")
		const maxBytes = 8 * 1000
		x := mustOffset(t, fsys, p, 1<<33, Options{MaxBytes: maxBytes, Writable: true})
		if got := fileSize(t, fsys, p); got != maxBytes {
			t.Fatalf("active file size %d, want %d", got, maxBytes)
		}
		model := fillOffset(t, x, rng, 123)
		if err := x.Seal(); err != nil {
			t.Fatal(err)
		}
		if x.Writable() || x.MaxEntries() != 123 || !x.IsFull() {
			t.Fatalf("after seal: writable %v, max entries %d", x.Writable(), x.MaxEntries())
		}
		raw := readFile(t, fsys, p)
		if len(raw) != 123*8 {
			t.Fatalf("sealed file has %d bytes, want %d", len(raw), 123*8)
		}
		for i, e := range decodeOffsetFile(t, raw, 1<<33) {
			if e != model[i] {
				t.Fatalf("file entry %d = %+v, want %+v", i, e, model[i])
			}
		}
		if err := x.MakeWritable(); err != nil {
			t.Fatal(err)
		}
		if got := fileSize(t, fsys, p); got != maxBytes {
			t.Fatalf("file size %d after MakeWritable, want %d", got, maxBytes)
		}
		if x.MaxEntries() != 1000 || x.IsFull() || !x.Writable() {
			t.Fatalf("after MakeWritable: max entries %d, full %v", x.MaxEntries(), x.IsFull())
		}
		model = append(model, fillOffset(t, x, rng, 10)...)
		checkOffsetLookups(t, x, model, rng, 500)
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		if got := decodeOffsetFile(t, readFile(t, fsys, p), 1<<33); len(got) != 133 || got[132] != model[132] {
			t.Fatalf("closed file holds %d entries", len(got))
		}
		wantErr(t, x.Append(1<<34, 0), ErrClosed, p, -1)
		if _, err := x.LookupErr(1 << 34); err == nil {
			t.Fatal("LookupErr after Close succeeded")
		}
		if err := x.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

// TestOffsetReopenActive reopens a trimmed file as the active segment's
// index: the entries stay, the file grows back, appends continue.
func TestOffsetReopenActive(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		rng := rand.New(rand.NewPCG(7, 8))
		p := indexPath(dir, "r.index")
		x := mustOffset(t, fsys, p, 0, Options{MaxBytes: 8 * 100, Writable: true})
		model := fillOffset(t, x, rng, 40)
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		y := mustOffset(t, fsys, p, 0, Options{MaxBytes: 8 * 100, Writable: true})
		if got := fileSize(t, fsys, p); got != 800 {
			t.Fatalf("reopened active file size %d, want 800", got)
		}
		if err := y.SanityCheck(); err != nil {
			t.Fatal(err)
		}
		model = append(model, fillOffset(t, y, rng, 60)...)
		if !y.IsFull() {
			t.Fatal("100 entries do not fill a 100-entry index")
		}
		checkOffsetLookups(t, y, model, rng, 500)
		// A max size below the entries keeps them all (and is full).
		if err := y.Close(); err != nil {
			t.Fatal(err)
		}
		z := mustOffset(t, fsys, p, 0, Options{MaxBytes: 8 * 10, Writable: true})
		if z.Entries() != 100 || !z.IsFull() {
			t.Fatalf("entries %d full %v", z.Entries(), z.IsFull())
		}
		checkOffsetLookups(t, z, model, rng, 100)
		z.Close()
	})
}

func TestOffsetRenameAndDelete(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		rng := rand.New(rand.NewPCG(9, 10))
		p := indexPath(dir, "00000000000000000000.index")
		q := p + ".deleted"
		x := mustOffset(t, fsys, p, 0, Options{MaxBytes: 8 * 100, Writable: true})
		model := fillOffset(t, x, rng, 20)
		if err := x.Rename(q); err != nil {
			t.Fatal(err)
		}
		if x.Path() != q {
			t.Fatalf("Path() = %q", x.Path())
		}
		if _, err := fsys.Stat(p); err == nil {
			t.Fatal("old name still exists")
		}
		model = append(model, fillOffset(t, x, rng, 5)...)
		checkOffsetLookups(t, x, model, rng, 100)
		if err := x.Seal(); err != nil {
			t.Fatal(err)
		}
		if got := fileSize(t, fsys, q); got != 25*8 {
			t.Fatalf("renamed file size %d after seal", got)
		}
		// Sealed and not mapped: a rename then a lazy mapping of the new name.
		r := q + "2"
		if err := x.Rename(r); err != nil {
			t.Fatal(err)
		}
		checkOffsetLookups(t, x, model, rng, 100)
		if err := x.Delete(); err != nil {
			t.Fatal(err)
		}
		if _, err := fsys.Stat(r); err == nil {
			t.Fatal("Delete left the file")
		}
		wantErr(t, x.SanityCheck(), ErrClosed, r, -1)
		if got := x.Lookup(5); got != (OffsetPosition{0, 0}) {
			t.Fatalf("Lookup after Delete = %+v", got)
		}
	})
}

// TestLastEntryAfterRewrite: the cached last entry of a sealed index must
// not survive a rewrite that ends at the same entry count.
func TestLastEntryAfterRewrite(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		x := mustOffset(t, fsys, indexPath(dir, "w.index"), 0, Options{MaxBytes: 80, Writable: true})
		defer x.Close()
		for _, e := range []OffsetPosition{{1, 10}, {2, 20}, {3, 30}} {
			if err := x.Append(e.Offset, e.Position); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Seal(); err != nil {
			t.Fatal(err)
		}
		if got := x.LastEntry(); got != (OffsetPosition{3, 30}) {
			t.Fatalf("LastEntry() = %+v", got)
		}
		if err := x.MakeWritable(); err != nil {
			t.Fatal(err)
		}
		if err := x.TruncateTo(3); err != nil {
			t.Fatal(err)
		}
		if err := x.Append(7, 70); err != nil {
			t.Fatal(err)
		}
		if err := x.Seal(); err != nil {
			t.Fatal(err)
		}
		if got := x.LastEntry(); got != (OffsetPosition{7, 70}) {
			t.Fatalf("LastEntry() after rewrite = %+v, want {7 70}", got)
		}
	})
}

// TestLookupBounds checks the floor and ceiling entries against a walk over
// the entries, for every target around them.
func TestLookupBounds(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/b"); err != nil {
		t.Fatal(err)
	}
	x, err := OpenOffset(fs, "/b/0.index", 100, Options{MaxBytes: 4096, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var offs []int64
	for i := int64(1); i <= 300; i++ {
		off := 100 + i*3
		if err := x.Append(off, i*50); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	for target := int64(90); target < 100+301*3+5; target++ {
		floor, ceil, hasCeil, err := x.LookupBoundsErr(target)
		if err != nil {
			t.Fatal(err)
		}
		wantFloor, wantCeil, wantHas := int64(100), int64(0), false
		for _, o := range offs {
			if o <= target {
				wantFloor = o
			} else if !wantHas && target >= 100 {
				wantCeil, wantHas = o, true
			}
		}
		if floor.Offset != wantFloor || hasCeil != wantHas || (hasCeil && ceil.Offset != wantCeil) {
			t.Fatalf("LookupBounds(%d) = %d, %d %v; want %d, %d %v", target, floor.Offset, ceil.Offset, hasCeil, wantFloor, wantCeil, wantHas)
		}
		if hasCeil && ceil.Position != (ceil.Offset-100)/3*50 {
			t.Fatalf("LookupBounds(%d): ceiling position %d", target, ceil.Position)
		}
	}
}
