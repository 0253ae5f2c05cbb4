package segment

import (
	"syscall"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// allocated is the disk space the file at path holds, in bytes.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := vfs.Default.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no stat_t for %s", path)
	}
	return st.Blocks * 512
}

// TestReserveReleasedOnSealAndClose: an active segment holds reserved blocks
// past its end while it takes appends, and gives them back when sealed or
// closed, so a rolled or cleanly closed segment takes no more space than a
// segment written without reservation; its size never includes them.
func TestReserveReleasedOnSealAndClose(t *testing.T) {
	const reserve = 4 << 20
	for _, end := range []string{"seal", "close"} {
		t.Run(end, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Create(vfs.Default, dir, 0, Options{ReserveBytes: reserve})
			if err != nil {
				t.Fatal(err)
			}
			g := newGen(3, 0, 100)
			for range 5 {
				if err := s.Append(g.batch(t).bytes); err != nil {
					t.Fatal(err)
				}
			}
			path, size := s.LogPath(), s.Size()
			fi, err := vfs.Default.Stat(path)
			if err != nil || fi.Size() != size {
				t.Fatalf("file size %v (%v), segment size %d: the reservation must not show", fi.Size(), err, size)
			}
			if got := allocated(t, path); got < reserve {
				// Only a filesystem without fallocate gets here, where
				// Reserve is documented to do nothing.
				t.Skipf("the filesystem did not reserve (%d bytes allocated)", got)
			}
			if end == "seal" {
				err = s.Seal()
			} else {
				err = s.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := allocated(t, path); got > size+64<<10 {
				t.Fatalf("after %s the .log of %d bytes still holds %d bytes of disk", end, size, got)
			}
			if got, err := vfs.Default.Stat(path); err != nil || got.Size() != size {
				t.Fatalf("after %s: size %v (%v), want %d", end, got.Size(), err, size)
			}
			s.Close()
		})
	}
}
