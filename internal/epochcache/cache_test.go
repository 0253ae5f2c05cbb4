package epochcache

import (
	"errors"
	"slices"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

func lines(pairs ...int64) []layout.EpochLine {
	var out []layout.EpochLine
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, layout.EpochLine{Epoch: int32(pairs[i]), StartOffset: pairs[i+1]})
	}
	return out
}

// reload reads c's file into a new cache, as an owner's open does.
func reload(t *testing.T, fs vfs.FS) *Cache {
	t.Helper()
	c := New(fs, "/p")
	if ok, err := c.Load(); err != nil || !ok {
		t.Fatalf("Load: ok %v, %v", ok, err)
	}
	return c
}

func TestAssignTruncateAndReload(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/p"); err != nil {
		t.Fatal(err)
	}
	c := New(fs, "/p")
	if ok, err := c.Load(); err != nil || !ok || c.Len() != 0 || c.Last() != -1 {
		t.Fatalf("a missing checkpoint is an empty cache: ok %v err %v len %d last %d", ok, err, c.Len(), c.Last())
	}
	for _, a := range []struct {
		epoch int32
		off   int64
		added bool
	}{{1, 0, true}, {1, 5, false}, {3, 10, true}, {2, 12, false}, {7, 20, true}} {
		added, err := c.Assign(a.epoch, a.off)
		if err != nil || added != a.added {
			t.Fatalf("Assign(%d, %d) = %v, %v; want %v", a.epoch, a.off, added, err, a.added)
		}
	}
	want := lines(1, 0, 3, 10, 7, 20)
	if got := reload(t, fs).Entries(); !slices.Equal(got, want) {
		t.Fatalf("saved %v, want %v", got, want)
	}
	for off, ep := range map[int64]int32{-1: -1, 0: 1, 9: 1, 10: 3, 19: 3, 20: 7, 1 << 40: 7} {
		if got := c.EpochAt(off); got != ep {
			t.Errorf("EpochAt(%d) = %d, want %d", off, got, ep)
		}
	}
	if err := c.TruncateFromEnd(20); err != nil {
		t.Fatal(err)
	}
	if err := c.TruncateFromStart(12); err != nil {
		t.Fatal(err)
	}
	want = lines(3, 12)
	if got := reload(t, fs).Entries(); !slices.Equal(got, want) {
		t.Fatalf("after truncating both ends: %v, want %v", got, want)
	}
	if err := c.Clear(); err != nil {
		t.Fatal(err)
	}
	if got := reload(t, fs); got.Len() != 0 {
		t.Fatalf("cleared cache reloads with %v", got.Entries())
	}
}

func TestLoadRefusesWhatTheCacheNeverWrites(t *testing.T) {
	for name, text := range map[string]string{
		"empty":       "",
		"decreasing":  "0\n2\n5 10\n3 20\n",
		"backwards":   "0\n2\n1 10\n2 5\n",
		"negative":    "0\n1\n-1 0\n",
		"bad version": "1\n1\n0 0\n",
	} {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/p"); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFileAtomic(fs, "/p/"+layout.LeaderEpochFile, []byte(text)); err != nil {
			t.Fatal(err)
		}
		c := New(fs, "/p")
		if ok, err := c.Load(); err != nil || ok || c.Len() != 0 {
			t.Errorf("%s: Load ok %v err %v len %d: want not loaded, empty, for the owner to rebuild", name, ok, err, c.Len())
		}
	}
}

// FuzzParse feeds arbitrary bytes to the checkpoint parser: it never
// panics, refuses with a *FileError (matching layout.ErrBadCheckpoint) at
// a byte position inside the file, accepts only what the cache may hold
// (non-negative, epochs increasing, offsets never decreasing), and what it
// accepts formats and parses back to the same entries.
func FuzzParse(f *testing.F) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/p"); err != nil {
		f.Fatal(err)
	}
	c := New(fs, "/p")
	for _, a := range [][2]int64{{1, 0}, {4, 2}, {9, 3}} {
		if _, err := c.Assign(int32(a[0]), a[1]); err != nil {
			f.Fatal(err)
		}
	}
	stored := vfstest.ReadFile(f, fs, c.Path())
	f.Add(stored)
	f.Add(stored[:len(stored)-3])
	f.Add([]byte("0\n0\n"))
	f.Add([]byte(""))
	f.Add([]byte("0\n1\n2147483647 9223372036854775807"))
	f.Add([]byte("0\n2\n5 10\n3 20\n"))
	f.Add([]byte("0\n2\n1 10\n2 5\n"))
	f.Add([]byte("0\n999999999999\n1 1\n"))
	f.Add([]byte("1\n1\n0 0\n"))
	f.Add([]byte("0\n1\n-1 0\n"))
	f.Add([]byte("0\n1\n0 0\n\n\n7 7\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := Parse(data)
		if err != nil {
			var pe *FileError
			if !errors.As(err, &pe) || !errors.Is(err, layout.ErrBadCheckpoint) {
				t.Fatalf("untyped error: %v", err)
			}
			if pe.At < 0 || pe.At > len(data) {
				t.Fatalf("error at byte %d of a %d-byte file: %v", pe.At, len(data), err)
			}
			return
		}
		for i, e := range entries {
			if e.Epoch < 0 || e.StartOffset < 0 || (i > 0 && (e.Epoch <= entries[i-1].Epoch || e.StartOffset < entries[i-1].StartOffset)) {
				t.Fatalf("accepted entry %d %+v after %v", i, e, entries[:i])
			}
		}
		again, err := Parse(layout.FormatLeaderEpochs(entries))
		if err != nil {
			t.Fatalf("formatted %v does not parse: %v", entries, err)
		}
		if !slices.Equal(entries, again) {
			t.Fatalf("round trip: %v became %v", entries, again)
		}
	})
}

// TestEntriesFromSavesNothing: EntriesFrom gives what TruncateFromStart
// would leave, for every start, and neither the file nor the cache moves.
func TestEntriesFromSavesNothing(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/p"); err != nil {
		t.Fatal(err)
	}
	c := New(fs, "/p")
	if err := c.Replace(lines(1, 0, 3, 10, 7, 20)); err != nil {
		t.Fatal(err)
	}
	saved, err := vfs.ReadFileLimit(fs, c.Path(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, start := range []int64{-1, 0, 5, 10, 11, 20, 25} {
		got := c.EntriesFrom(start)
		if now, err := vfs.ReadFileLimit(fs, c.Path(), 1<<20); err != nil || string(now) != string(saved) {
			t.Fatalf("EntriesFrom(%d) changed the file (%v)", start, err)
		}
		if all := c.Entries(); !slices.Equal(all, lines(1, 0, 3, 10, 7, 20)) {
			t.Fatalf("EntriesFrom(%d) changed the cache: %v", start, all)
		}
		other := New(fs, "/q")
		if err := fs.MkdirAll("/q"); err != nil {
			t.Fatal(err)
		}
		if err := other.Replace(lines(1, 0, 3, 10, 7, 20)); err != nil {
			t.Fatal(err)
		}
		if err := other.TruncateFromStart(start); err != nil {
			t.Fatal(err)
		}
		if want := other.Entries(); !slices.Equal(got, want) {
			t.Errorf("EntriesFrom(%d) = %v, TruncateFromStart leaves %v", start, got, want)
		}
	}
	if got, want := c.EntriesFrom(11), lines(3, 11, 7, 20); !slices.Equal(got, want) {
		t.Fatalf("EntriesFrom(11) = %v, want %v", got, want)
	}
}
