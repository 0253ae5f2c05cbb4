package vfs

import (
	"path"
	"testing"
)

// BenchmarkAppendSync measures Write of 4 KiB followed by Sync, the cost
// of an always-sync append.
func BenchmarkAppendSync(b *testing.B) {
	for _, c := range fsCases {
		b.Run(c.name, func(b *testing.B) {
			fsys, dir := benchFS(b, c.name)
			f, err := fsys.Create(path.Join(dir, "a"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := make([]byte, 4096)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Write(buf); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadAt measures 4 KiB positional reads of a 1 MiB file.
func BenchmarkReadAt(b *testing.B) {
	for _, c := range fsCases {
		b.Run(c.name, func(b *testing.B) {
			fsys, dir := benchFS(b, c.name)
			f, err := fsys.Create(path.Join(dir, "a"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Write(make([]byte, 1<<20)); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 4096)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			var off int64
			for b.Loop() {
				if _, err := f.ReadAt(buf, off); err != nil {
					b.Fatal(err)
				}
				off = (off + 4096) % (1 << 20)
			}
		})
	}
}

func benchFS(b *testing.B, name string) (FS, string) {
	switch name {
	case "os":
		return Default, b.TempDir()
	case "inject(os)":
		return Inject(Default, &Counter{}), b.TempDir()
	}
	m := NewMem()
	if err := m.MkdirAll("/b"); err != nil {
		b.Fatal(err)
	}
	if name == "inject(mem)" {
		return Inject(m, &Counter{}), "/b"
	}
	return m, "/b"
}
