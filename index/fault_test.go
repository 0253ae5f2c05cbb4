package index

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// failing returns fsys with operations of kind failing with errno while
// the returned flag is set.
func failing(fsys vfs.FS, kind vfs.OpKind, errno error) (vfs.FS, *atomic.Bool) {
	on := new(atomic.Bool)
	return vfs.Inject(fsys, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == kind && on.Load() {
			return errno
		}
		return nil
	})), on
}

// TestPreallocateFailure: a full disk is an error when the index is created
// or grown, never a fault at a later store through the mapping.
func TestPreallocateFailure(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		fsys, on := failing(base, vfs.OpPreallocate, syscall.ENOSPC)
		on.Store(true)
		p := indexPath(dir, "p.index")
		_, err := OpenOffset(fsys, p, 0, Options{MaxBytes: 800, Writable: true})
		wantErr(t, err, syscall.ENOSPC, p, -3)
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("error %v does not carry the injected failure", err)
		}
		tp := indexPath(dir, "p.timeindex")
		_, err = OpenTime(fsys, tp, 0, Options{MaxBytes: 1200, Writable: true})
		wantErr(t, err, syscall.ENOSPC, tp, -3)

		// Growing a sealed index back fails the same way and leaves it
		// sealed and readable.
		on.Store(false)
		x := mustOffset(t, fsys, p, 0, Options{MaxBytes: 800, Writable: true})
		for i := int64(1); i <= 3; i++ {
			if err := x.Append(i, i*10); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Seal(); err != nil {
			t.Fatal(err)
		}
		on.Store(true)
		wantErr(t, x.MakeWritable(), syscall.ENOSPC, p, -3)
		if x.Writable() || fileSize(t, base, p) != 24 {
			t.Fatalf("after failed MakeWritable: writable %v, size %d", x.Writable(), fileSize(t, base, p))
		}
		if got := x.Lookup(2); got != (OffsetPosition{2, 20}) {
			t.Fatalf("Lookup after failed MakeWritable = %+v", got)
		}
		on.Store(false)
		if err := x.MakeWritable(); err != nil {
			t.Fatal(err)
		}
		if err := x.Append(4, 40); err != nil {
			t.Fatal(err)
		}
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLazyMapFailure: a sealed index that cannot be mapped answers Lookup
// with the safe "scan from the start" entry and reports the error through
// LookupErr; it maps on a later try.
func TestLazyMapFailure(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		fsys, on := failing(base, vfs.OpMap, syscall.ENOMEM)
		p := indexPath(dir, "m.index")
		writeFile(t, base, p, offsetBytes([2]int32{1, 0}, [2]int32{4, 40}))
		cache := NewCache(4)
		x := mustOffset(t, fsys, p, 10, Options{Cache: cache})
		on.Store(true)
		_, err := x.LookupErr(20)
		wantErr(t, err, syscall.ENOMEM, p, -1)
		if got := x.Lookup(20); got != (OffsetPosition{10, 0}) {
			t.Fatalf("Lookup with failing map = %+v", got)
		}
		if s := cache.Stats(); s.Mapped != 0 {
			t.Fatalf("stats %+v after failed maps", s)
		}
		if x.LastOffset() != 14 {
			t.Fatalf("LastOffset() = %d without mapping", x.LastOffset())
		}
		on.Store(false)
		if got, err := x.LookupErr(20); err != nil || got != (OffsetPosition{14, 40}) {
			t.Fatalf("LookupErr = %+v, %v", got, err)
		}
		x.Close()
	})
}

// TestSealTrimFailure: if the trim fails the index is still sealed with the
// right count, and the error names the file.
func TestSealTrimFailure(t *testing.T) {
	forEachFS(t, func(t *testing.T, base vfs.FS, dir string) {
		fsys, on := failing(base, vfs.OpTruncate, syscall.EIO)
		p := indexPath(dir, "s.timeindex")
		x := mustTime(t, fsys, p, 0, Options{MaxBytes: 120, Writable: true})
		for i := int64(1); i <= 3; i++ {
			if err := x.MaybeAppend(i, i, false); err != nil {
				t.Fatal(err)
			}
		}
		on.Store(true)
		wantErr(t, x.Seal(), syscall.EIO, p, 36)
		if x.Writable() || x.Entries() != 3 || x.Lookup(2) != (TimestampOffset{2, 2}) {
			t.Fatalf("after failed trim: writable %v, %d entries, lookup %+v", x.Writable(), x.Entries(), x.Lookup(2))
		}
		// The untrimmed file is what a reopen would see: the zero tail fails
		// the sanity check.
		y := mustTime(t, base, p, 0, Options{})
		wantErr(t, y.SanityCheck(), ErrCorrupt, p, 36)
		y.Close()
		x.Close()
	})
}
