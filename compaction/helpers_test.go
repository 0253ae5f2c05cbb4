package compaction

import (
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/sealed"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// testOptions are small segments on an in-memory filesystem.
func testOptions(fsys vfs.FS) seglog.Options {
	return seglog.Options{FS: fsys, LogConfig: seglog.LogConfig{SegmentBytes: 2 << 10, MaxIndexBytes: 4 << 10, IndexIntervalBytes: 128, Sync: seglog.SyncNone}}
}

func openTestLog(t *testing.T, fsys vfs.FS) *seglog.Log {
	t.Helper()
	l, err := seglog.Open("/log", testOptions(fsys))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitRetired waits until no segment a swap retired is left as .deleted
// files in dir: the background flusher may still hold the segment a Roll
// sealed after a swap retired it, and a swap at the same base offset is
// refused (seglog.ErrSegmentsBusy, a deferred round) until it lets go.
func waitRetired(t *testing.T, fsys vfs.FS, dir string) {
	t.Helper()
	testutil.WaitFor(t, "no retired segment is held", func() bool {
		names, err := fsys.List(dir)
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, layout.DeletedSuffix) })
	})
}

// model is what was appended: offset → record.
type model map[int64]record.Record

// expect returns what reading l must give once [start, end) is compacted:
// below end, for each key the record with the largest offset below end
// (keyless records gone; tombstones kept, their horizon being far off),
// and every record from end on.
func (m model) expect(start, end, logEnd int64) []record.Record {
	latest := map[string]int64{}
	for off := start; off < end; off++ {
		if r, ok := m[off]; ok && r.Key != nil {
			latest[string(r.Key)] = off
		}
	}
	var out []record.Record
	for off := start; off < logEnd; off++ {
		r, ok := m[off]
		if !ok {
			continue
		}
		if off < end && (r.Key == nil || latest[string(r.Key)] != off) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func seglogOpen(o seglog.Options) (*seglog.Log, error) { return seglog.Open("/log", o) }

// logView is compaction's view of l, as Clean gets it.
func logView(l *seglog.Log) log { return sealed.LogOf(l).(log) }
