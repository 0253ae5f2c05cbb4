package index

import (
	"errors"
	"path"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// forEachFS runs fn on the real filesystem (in a temporary directory) and on
// the in-memory one.
func forEachFS(t *testing.T, fn func(t *testing.T, fsys vfs.FS, dir string)) {
	t.Helper()
	t.Run("os", func(t *testing.T) { fn(t, vfs.Default, t.TempDir()) })
	t.Run("mem", func(t *testing.T) {
		m := vfs.NewMem()
		if err := m.MkdirAll("/seg"); err != nil {
			t.Fatal(err)
		}
		fn(t, m, "/seg")
	})
}

func indexPath(dir, name string) string { return path.Join(dir, name) }

// readFile returns the bytes of a file through fsys, independently of the
// index's mapping.
func readFile(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	return vfstest.ReadFile(t, fsys, name)
}

// writeFile replaces name with b.
func writeFile(t *testing.T, fsys vfs.FS, name string, b []byte) {
	t.Helper()
	vfstest.WriteFile(t, fsys, name, b)
}

func fileSize(t *testing.T, fsys vfs.FS, name string) int64 {
	t.Helper()
	fi, err := fsys.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// wantErr checks that err wraps sentinel and is an *Error naming path at
// byte position pos (pos < -1: any position).
func wantErr(t *testing.T, err, sentinel error, path string, pos int64) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v, want %v", err, sentinel)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *index.Error", err)
	}
	if e.Path != path {
		t.Fatalf("error path %q, want %q (%v)", e.Path, path, err)
	}
	if pos >= -1 && e.Pos != pos {
		t.Fatalf("error position %d, want %d (%v)", e.Pos, pos, err)
	}
}

// decodeOffsetFile decodes raw .index bytes by hand (shifts, not the
// package's helpers) into absolute entries.
func decodeOffsetFile(t *testing.T, raw []byte, base int64) []OffsetPosition {
	t.Helper()
	if len(raw)%8 != 0 {
		t.Fatalf("offset index file of %d bytes", len(raw))
	}
	var out []OffsetPosition
	for p := 0; p < len(raw); p += 8 {
		rel := int64(raw[p])<<24 | int64(raw[p+1])<<16 | int64(raw[p+2])<<8 | int64(raw[p+3])
		pos := int64(raw[p+4])<<24 | int64(raw[p+5])<<16 | int64(raw[p+6])<<8 | int64(raw[p+7])
		out = append(out, OffsetPosition{Offset: base + rel, Position: pos})
	}
	return out
}

func decodeTimeFile(t *testing.T, raw []byte, base int64) []TimestampOffset {
	t.Helper()
	if len(raw)%12 != 0 {
		t.Fatalf("time index file of %d bytes", len(raw))
	}
	var out []TimestampOffset
	for p := 0; p < len(raw); p += 12 {
		var ts uint64
		for i := 0; i < 8; i++ {
			ts = ts<<8 | uint64(raw[p+i])
		}
		rel := int64(raw[p+8])<<24 | int64(raw[p+9])<<16 | int64(raw[p+10])<<8 | int64(raw[p+11])
		out = append(out, TimestampOffset{Timestamp: int64(ts), Offset: base + rel})
	}
	return out
}

// modelOffsetLookup is the brute-force answer for an offset index lookup.
func modelOffsetLookup(entries []OffsetPosition, base, target int64) OffsetPosition {
	best := OffsetPosition{Offset: base}
	for _, e := range entries {
		if e.Offset <= target {
			best = e
		}
	}
	return best
}

func modelTimeLookup(entries []TimestampOffset, base, ts int64) TimestampOffset {
	best := TimestampOffset{Timestamp: NoTimestamp, Offset: base}
	for _, e := range entries {
		if e.Timestamp <= ts {
			best = e
		}
	}
	return best
}

func mustOffset(t testing.TB, fsys vfs.FS, p string, base int64, opts Options) *OffsetIndex {
	t.Helper()
	x, err := OpenOffset(fsys, p, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func mustTime(t testing.TB, fsys vfs.FS, p string, base int64, opts Options) *TimeIndex {
	t.Helper()
	x, err := OpenTime(fsys, p, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// mapped reports whether an index currently holds a mapping.
func mapped(b *base) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.buf != nil
}
