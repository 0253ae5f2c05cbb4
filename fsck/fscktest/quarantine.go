package fscktest

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// Unquarantined returns the problems other than quarantine files
// (fsck.KindQuarantine): what is left to fix once recovery or a repair
// kept bytes it cut in quarantine files, which are warnings until a
// person moves them away.
func Unquarantined(ps []fsck.Problem) []fsck.Problem {
	var out []fsck.Problem
	for _, p := range ps {
		if p.Kind != fsck.KindQuarantine {
			out = append(out, p)
		}
	}
	return out
}

// CheckCleanButQuarantines is CheckClean for a directory recovery may have
// set bytes aside in: quarantine files are allowed (and returned, by name),
// any other problem fails the test.
func CheckCleanButQuarantines(t testing.TB, fsys vfs.FS, dir string) []string {
	t.Helper()
	r, err := fsck.Check(fsys, dir, fsck.Options{Deep: true})
	if err != nil {
		t.Fatalf("fsck %s: %v", dir, err)
	}
	var names []string
	for _, p := range r.Problems {
		if p.Kind == fsck.KindQuarantine {
			names = append(names, p.File)
			continue
		}
		t.Errorf("fsck %s: %s", dir, p)
	}
	return names
}

// CheckQuarantined checks, for every .log of before (a snapshot of dir
// taken before recovery or a repair), that the bytes it lost are either
// kept byte for byte in a quarantine file or hold no valid batch (a torn
// tail): the .log now begins with a prefix of its old bytes (or is gone),
// and the rest is a quarantine file named for it and the byte where the
// cut is, or fsck's scanner finds no valid batch in it. ends, when not
// nil, gives each segment's size as the log sees it (base offset to bytes;
// a base missing from it is a segment the log no longer has), for a
// directory whose files a preallocating or appending Log has grown since;
// nil takes the files' sizes now.
func CheckQuarantined(t testing.TB, fsys vfs.FS, dir string, before Snapshot, ends map[int64]int64) {
	t.Helper()
	after := TakeSnapshot(t, fsys, dir)
	for path, old := range before {
		base, suffix, ok := layout.ParseFileName(filepath.Base(path))
		if !ok || suffix != layout.LogSuffix || filepath.Dir(path) != filepath.Clean(dir) {
			continue
		}
		cur, present := after[path]
		if ends != nil {
			end, ok := ends[base]
			present = ok && present
			if present {
				cur = cur[:min(end, int64(len(cur)))]
			}
		}
		if present && !bytes.HasPrefix(old, cur) {
			t.Errorf("%s: not a prefix of what it held", path)
			continue
		}
		cut := int64(len(cur))
		if cut == int64(len(old)) {
			continue
		}
		if q, ok := newQuarantine(before, after, dir, base, cut); ok {
			if !bytes.Equal(q, old[cut:]) {
				t.Errorf("%s: the quarantine of its bytes from %d differs from them", path, cut)
			}
			continue
		}
		if holdsValid(old[cut:]) {
			t.Errorf("%s: %d bytes from byte %d, holding a valid batch, were deleted", path, len(old)-int(cut), cut)
		}
	}
}

// newQuarantine returns the bytes of the quarantine file of the segment at
// base from byte cut that appeared between before and after. An earlier
// power loss may have set aside a segment of the same base from the same
// byte: that file keeps its name and the new one takes the next
// alternative (layout.QuarantineName's n).
func newQuarantine(before, after Snapshot, dir string, base, cut int64) ([]byte, bool) {
	for n := 0; ; n++ {
		path := filepath.Join(dir, layout.QuarantineName(base, cut, n))
		q, ok := after[path]
		if !ok {
			return nil, false
		}
		if _, old := before[path]; !old {
			return q, true
		}
	}
}

// holdsValid reports whether fsck's scanner finds a valid entry in b.
func holdsValid(b []byte) bool {
	sc := fsck.NewScanner(bytes.NewReader(b), int64(len(b)), 0)
	sc.SetMinOffset(-1 << 63)
	for {
		e, ok, err := sc.Next()
		if err != nil || !ok {
			return false
		}
		if !e.Damaged() {
			return true
		}
	}
}
