package vfs

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestHoleUnsynced: with HoleUnsynced a file's unsynced appended bytes come
// back at the file's full size, each page either as written or zeros; the
// synced bytes are always there; a strict crash keeps none of them.
func TestHoleUnsynced(t *testing.T) {
	m := NewMem()
	f, err := m.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	synced := bytes.Repeat([]byte{1}, 1000)
	if _, err := f.Write(synced); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/"); err != nil {
		t.Fatal(err)
	}
	unsynced := bytes.Repeat([]byte{2}, 3*holePage)
	if _, err := f.Write(unsynced); err != nil {
		t.Fatal(err)
	}
	all := append(bytes.Clone(synced), unsynced...)
	if got := readMemFile(t, m.CrashClone(), "/f"); !bytes.Equal(got, synced) {
		t.Fatal("strict crash kept unsynced bytes")
	}
	seen := map[string]bool{}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		got := readMemFile(t, m.CrashCloneWith(CrashOptions{Rand: r, HoleUnsynced: 1}), "/f")
		if len(got) != len(all) || !bytes.Equal(got[:len(synced)], synced) {
			t.Fatalf("hole crash: %d bytes, want %d with the synced ones first", len(got), len(all))
		}
		pattern := ""
		for p := len(synced); p < len(all); {
			end := min((p/holePage+1)*holePage, len(all))
			switch {
			case bytes.Equal(got[p:end], all[p:end]):
				pattern += "w"
			case bytes.Equal(got[p:end], make([]byte, end-p)):
				pattern += "0"
			default:
				t.Fatalf("page at %d is neither written nor zeros", p)
			}
			p = end
		}
		seen[pattern] = true
	}
	// Four pages touched (the first partial): every mix shows up.
	if len(seen) != 16 {
		t.Fatalf("saw %d of 16 page patterns: %v", len(seen), seen)
	}
}
