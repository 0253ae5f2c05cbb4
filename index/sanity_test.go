package index

import (
	"encoding/binary"
	"testing"

	"github.com/seglog/seglog/vfs"
)

func offsetBytes(entries ...[2]int32) []byte {
	var b []byte
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, uint32(e[0]))
		b = binary.BigEndian.AppendUint32(b, uint32(e[1]))
	}
	return b
}

type rawTime struct {
	ts  int64
	rel int32
}

func timeBytes(entries ...rawTime) []byte {
	var b []byte
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
		b = binary.BigEndian.AppendUint32(b, uint32(e.rel))
	}
	return b
}

func TestOffsetSanityCheck(t *testing.T) {
	good := [][2]int32{{1, 0}, {5, 100}, {9, 250}}
	cases := []struct {
		name string
		raw  []byte
		pos  int64 // -2: passes
	}{
		{"valid", offsetBytes(good...), -2},
		{"empty", nil, -2},
		{"partial entry", append(offsetBytes(good...), 0, 0, 0, 1, 0), 24},
		{"decreasing offset", offsetBytes([2]int32{1, 0}, [2]int32{5, 10}, [2]int32{3, 20}), 16},
		{"repeated offset", offsetBytes([2]int32{1, 0}, [2]int32{5, 10}, [2]int32{5, 20}), 16},
		{"entry at base offset", offsetBytes([2]int32{0, 0}, [2]int32{5, 10}), 0},
		{"negative relative offset", offsetBytes([2]int32{-1, 0}), 0},
		{"zero tail", offsetBytes([2]int32{1, 0}, [2]int32{5, 10}, [2]int32{0, 0}, [2]int32{0, 0}), 16},
		{"decreasing position", offsetBytes([2]int32{1, 50}, [2]int32{5, 10}), 12},
		{"negative position", offsetBytes([2]int32{1, -5}), 4},
	}
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		for _, c := range cases {
			for _, writable := range []bool{false, true} {
				p := indexPath(dir, "00000000000000001000.index")
				writeFile(t, fsys, p, c.raw)
				x := mustOffset(t, fsys, p, 1000, Options{MaxBytes: len(c.raw) + 64, Writable: writable})
				if x.Entries() != len(c.raw)/8 {
					t.Fatalf("%s: %d entries from %d bytes", c.name, x.Entries(), len(c.raw))
				}
				err := x.SanityCheck()
				if c.pos == -2 {
					if err != nil {
						t.Fatalf("%s (writable %v): %v", c.name, writable, err)
					}
				} else {
					wantErr(t, err, ErrCorrupt, p, c.pos)
				}
				if err := x.Delete(); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

func TestTimeSanityCheck(t *testing.T) {
	good := []rawTime{{1000, 0}, {1005, 3}, {1009, 3}}
	cases := []struct {
		name string
		raw  []byte
		pos  int64
	}{
		{"valid", timeBytes(good...), -2},
		{"entry at base offset", timeBytes(rawTime{0, 0}), -2},
		{"partial entry", append(timeBytes(good...), 1, 2, 3), 36},
		{"decreasing timestamp", timeBytes(rawTime{1000, 0}, rawTime{999, 1}), 12},
		{"repeated timestamp", timeBytes(rawTime{1000, 0}, rawTime{1000, 1}), 12},
		{"zero tail", timeBytes(rawTime{0, 0}, rawTime{0, 0}), 12},
		{"zero tail after entries", timeBytes(rawTime{1000, 4}, rawTime{0, 0}), 12},
		{"offset below base", timeBytes(rawTime{1000, 0}, rawTime{1001, -2}), 20},
		{"decreasing offset", timeBytes(rawTime{1000, 5}, rawTime{1001, 4}), 20},
	}
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		for _, c := range cases {
			for _, writable := range []bool{false, true} {
				p := indexPath(dir, "00000000000000001000.timeindex")
				writeFile(t, fsys, p, c.raw)
				x := mustTime(t, fsys, p, 1000, Options{MaxBytes: len(c.raw) + 64, Writable: writable})
				err := x.SanityCheck()
				if c.pos == -2 {
					if err != nil {
						t.Fatalf("%s (writable %v): %v", c.name, writable, err)
					}
				} else {
					wantErr(t, err, ErrCorrupt, p, c.pos)
				}
				if err := x.Delete(); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestUntrimmedAfterCrash reopens active indexes that were never trimmed
// (the process died): the zero tail is counted and SanityCheck rejects it at
// the first zero entry; Reset then lets the segment rebuild.
func TestUntrimmedAfterCrash(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		op := indexPath(dir, "c.index")
		tp := indexPath(dir, "c.timeindex")
		x := mustOffset(t, fsys, op, 77, Options{MaxBytes: 8 * 50, Writable: true})
		ti := mustTime(t, fsys, tp, 77, Options{MaxBytes: 12 * 50, Writable: true})
		for i := int64(1); i <= 5; i++ {
			if err := x.Append(77+i, i*10); err != nil {
				t.Fatal(err)
			}
			if err := ti.MaybeAppend(1000+i, 77+i, false); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := ti.Flush(); err != nil {
			t.Fatal(err)
		}
		// "Crash": the files are reopened without Close.
		y := mustOffset(t, fsys, op, 77, Options{MaxBytes: 8 * 50, Writable: true})
		if y.Entries() != 50 {
			t.Fatalf("untrimmed file: %d entries, want 50", y.Entries())
		}
		wantErr(t, y.SanityCheck(), ErrCorrupt, op, 40)
		u := mustTime(t, fsys, tp, 77, Options{MaxBytes: 12 * 50, Writable: true})
		wantErr(t, u.SanityCheck(), ErrCorrupt, tp, 60)
		if err := y.Reset(); err != nil {
			t.Fatal(err)
		}
		if err := u.Reset(); err != nil {
			t.Fatal(err)
		}
		if y.Entries() != 0 || y.SanityCheck() != nil || u.Entries() != 0 || u.SanityCheck() != nil {
			t.Fatal("Reset left entries or damage")
		}
		if err := y.Append(90, 5); err != nil {
			t.Fatal(err)
		}
		if err := y.Close(); err != nil {
			t.Fatal(err)
		}
		if err := u.Close(); err != nil {
			t.Fatal(err)
		}
		if got := decodeOffsetFile(t, readFile(t, fsys, op), 77); len(got) != 1 || got[0] != (OffsetPosition{90, 5}) {
			t.Fatalf("file after rebuild: %+v", got)
		}
		if n := len(readFile(t, fsys, tp)); n != 0 {
			t.Fatalf("time index after reset and close has %d bytes", n)
		}
		x.Delete()
		ti.Delete()
	})
}

// TestResetSealed empties a sealed index by truncating its file.
func TestResetSealed(t *testing.T) {
	forEachFS(t, func(t *testing.T, fsys vfs.FS, dir string) {
		p := indexPath(dir, "z.index")
		writeFile(t, fsys, p, append(offsetBytes([2]int32{1, 0}, [2]int32{2, 9}), 7))
		x := mustOffset(t, fsys, p, 0, Options{})
		if err := x.Reset(); err != nil {
			t.Fatal(err)
		}
		if x.Entries() != 0 || fileSize(t, fsys, p) != 0 || x.SanityCheck() != nil {
			t.Fatalf("after Reset: %d entries, %d bytes", x.Entries(), fileSize(t, fsys, p))
		}
		x.Close()
	})
}
