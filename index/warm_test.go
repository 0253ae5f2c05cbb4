package index

import (
	"sync"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// TestWarmNeverOverwritesEntries: the zeros warmFor writes ahead of the
// writer land past every entry stored so far, also across truncation,
// sealing and growing back; every entry reads back after a reopen, and
// the warming really happened (so this test watches the code it means to).
func TestWarmNeverOverwritesEntries(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		var mu sync.Mutex
		var warms []vfs.Op
		fsys := vfs.Inject(base, vfs.InjectorFunc(func(op vfs.Op) error {
			if op.Kind == vfs.OpWriteAt {
				mu.Lock()
				warms = append(warms, op)
				mu.Unlock()
			}
			return nil
		}))
		p := indexPath(dir, "w.index")
		const maxEntries = 3 * warmChunk / OffsetEntrySize
		x, err := OpenOffset(fsys, p, 0, Options{MaxBytes: maxEntries * OffsetEntrySize, Writable: true})
		if err != nil {
			t.Fatal(err)
		}
		next := int64(1)
		add := func(n int) {
			t.Helper()
			for range n {
				before := len(warms)
				if err := x.Append(next, next*10); err != nil {
					t.Fatal(err)
				}
				if len(warms) > before && warms[len(warms)-1].Off < int64(x.Entries()-1)*OffsetEntrySize {
					t.Fatalf("zeros written at %d, below entry %d", warms[len(warms)-1].Off, x.Entries()-1)
				}
				next++
			}
		}
		add(warmChunk/OffsetEntrySize + 10) // into the second chunk
		if err := x.TruncateTo(next / 2); err != nil {
			t.Fatal(err)
		}
		next = next / 2
		add(100)
		if err := x.Seal(); err != nil {
			t.Fatal(err)
		}
		if err := x.MakeWritable(); err != nil {
			t.Fatal(err)
		}
		add(warmChunk/OffsetEntrySize + 10) // into the third chunk
		if len(warms) < 3 {
			t.Fatalf("%d warming writes; expected one per chunk reached", len(warms))
		}
		n := x.Entries()
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
		y, err := OpenOffset(base, p, 0, Options{MaxBytes: maxEntries * OffsetEntrySize})
		if err != nil {
			t.Fatal(err)
		}
		defer y.Close()
		if y.Entries() != n {
			t.Fatalf("reopened with %d entries, want %d", y.Entries(), n)
		}
		for i := range n {
			e := y.Entry(i)
			if e.Offset != int64(i+1) || e.Position != int64(i+1)*10 {
				t.Fatalf("entry %d = %+v after reopen", i, e)
			}
		}
	})
}
