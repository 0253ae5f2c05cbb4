package vfs

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

// TestKeepUnsyncedStores: stores below the synced length (a preallocated
// file's appends) are lost by a strict crash and, with KeepUnsyncedStores,
// survive as a prefix of the changed range, never as anything else.
func TestKeepUnsyncedStores(t *testing.T) {
	m := NewMem()
	f, err := m.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Preallocate(0, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{1}, 100), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{2}, 300), 100); err != nil {
		t.Fatal(err)
	}
	synced := append(bytes.Repeat([]byte{1}, 100), make([]byte, 900)...)
	if got := readMemFile(t, m.CrashClone(), "/f"); !bytes.Equal(got, synced) {
		t.Fatalf("strict crash kept unsynced stores")
	}
	lengths := map[int]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		got := readMemFile(t, m.CrashCloneWith(CrashOptions{Rand: r, KeepUnsyncedStores: 1}), "/f")
		k := bytes.IndexByte(got[100:], 0)
		if k < 0 {
			k = 900
		}
		want := append(append(bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, min(k, 300))...), make([]byte, 900-min(k, 300))...)
		if k > 300 || !bytes.Equal(got, want) {
			t.Fatalf("kept %d bytes of the stores, not a prefix of them", k)
		}
		lengths[k] = true
	}
	if len(lengths) < 10 || !lengths[300] {
		t.Fatalf("only %d different torn lengths (all kept: %v)", len(lengths), lengths[300])
	}
}

// readMemFile reads the whole file name of m.
func readMemFile(t *testing.T, m *MemFS, name string) []byte {
	t.Helper()
	b, err := ReadFileLimit(m, name, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
