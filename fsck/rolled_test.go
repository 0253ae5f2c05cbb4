package fsck

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestRolledUnflushedIndexIsNotDamage: a log that crashed just after a
// roll leaves the sealed segment's indexes untrimmed (the roll leaves the
// trims to the flush that takes the recovery point past the segment), and
// recovery finishes them; fsck says nothing of a segment at or above the
// recovery point, and still warns of one below it.
func TestRolledUnflushedIndexIsNotDamage(t *testing.T) {
	fsys := vfs.NewMem()
	writeLog(t, fsys, "/p", record.None, 200, 5)
	logs := logFiles(t, fsys, "/p")
	if len(logs) < 3 {
		t.Fatalf("%d segments; the test wants three or more", len(logs))
	}
	// The second segment, as its roll left it: indexes still at their
	// preallocated size, zeros after the entries.
	mid := strings.TrimSuffix(filepath.Base(logs[1]), ".log")
	for _, suffix := range []string{".index", ".timeindex"} {
		p := filepath.Join("/p", mid+suffix)
		data := vfstest.ReadFile(t, fsys, p)
		vfstest.WriteFile(t, fsys, p, append(data, make([]byte, 60*12)...))
	}
	midBase, err := strconv.ParseInt(mid, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	nextBase, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(logs[2]), ".log"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rp   int64
		warn bool
	}{
		{midBase, false},      // the segment is above the point: recovery's
		{nextBase - 1, false}, // the point inside it: recovery scans it
		{nextBase, true},      // below the point: trusted, so untrimmed is damage
	} {
		crash(t, fsys, "/p", c.rp)
		r := mustCheck(t, fsys, "/p", Options{})
		got := false
		for _, p := range r.Problems {
			got = got || (p.Kind == KindIndexTrim && strings.HasPrefix(p.File, mid))
		}
		if got != c.warn {
			t.Errorf("recovery point %d (segment [%d, %d)): untrimmed index reported %v, want %v:%s", c.rp, midBase, nextBase, got, c.warn, dumpProblems(r))
		}
		vfstest.WriteFile(t, fsys, "/p/.kafka_cleanshutdown", nil) // for the next crash()
	}
}
