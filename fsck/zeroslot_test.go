package fsck

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestZeroTimeIndexIsFillUnlessItNamesTheFirstBatch: twelve zero bytes at
// the start of a sealed .timeindex are the entry (0, base) only when the
// segment's first batch is that offset with max timestamp 0
// (TestZeroTimestampFirstBatch in the root package checks that case is
// clean). Here the batches have real timestamps, so the zeros are fill:
// all three slots are reported untrimmed, and the missing last entry an
// error.
func TestZeroTimeIndexIsFillUnlessItNamesTheFirstBatch(t *testing.T) {
	fsys := vfs.NewMem()
	writeLog(t, fsys, "/p", record.None, 200, 5)
	logs := logFiles(t, fsys, "/p")
	if len(logs) < 2 {
		t.Fatalf("%d segments; the test wants two or more", len(logs))
	}
	first := strings.TrimSuffix(filepath.Base(logs[0]), ".log")
	vfstest.WriteFile(t, fsys, filepath.Join("/p", first+".timeindex"), make([]byte, 3*12))
	r := mustCheck(t, fsys, "/p", Options{})
	var trim, last bool
	for _, p := range r.Problems {
		if !strings.HasPrefix(p.File, first) {
			continue
		}
		trim = trim || (p.Kind == KindIndexTrim && p.Position == 0 && strings.HasPrefix(p.Detail, "3 zero-filled"))
		last = last || (p.Kind == KindIndexLast && p.Severity == Error)
	}
	if !trim || !last {
		t.Errorf("untrimmed from byte 0 reported %v, missing last entry %v; want both:%s", trim, last, dumpProblems(r))
	}
}
