package fsck

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// writeLog writes a log of nbatches batches of recsPer records each through
// the Log, closes it cleanly and returns the directory. Small segments and
// a small index interval give every check something to look at.
func writeLog(t testing.TB, fsys vfs.FS, dir string, codec record.Codec, nbatches, recsPer int) []record.Record {
	t.Helper()
	clock := time.UnixMilli(1_700_000_000_000)
	l, err := seglog.Open(dir, seglog.Options{
		FS: fsys, LogConfig: seglog.LogConfig{SegmentBytes: 16 << 10, IndexIntervalBytes: 512, MaxIndexBytes: 16 << 10, Compression: codec},
		Clock: testutil.NowFunc(func() time.Time { clock = clock.Add(time.Millisecond); return clock }),
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []record.Record
	for i := 0; i < nbatches; i++ {
		recs := make([]record.Record, recsPer)
		for j := range recs {
			recs[j] = record.Record{
				Timestamp: 1_700_000_000_000 + int64(i*recsPer+j),
				Key:       []byte(fmt.Sprintf("key-%d", j%7)),
				Value:     []byte(strings.Repeat(fmt.Sprintf("value %d.%d ", i, j), 4)),
			}
		}
		if _, err := l.Append(recs...); err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return all
}

// logFiles lists the .log files of dir in order.
func logFiles(t testing.TB, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if filepath.Ext(n) == ".log" {
			out = append(out, n)
		}
	}
	return out
}

// batchStarts returns the positions of the batches in a .log's bytes.
func batchStarts(t testing.TB, data []byte) []int64 {
	t.Helper()
	var out []int64
	for p := 0; p < len(data); {
		n, _, err := record.PeekEntry(data[p:])
		if err != nil {
			t.Fatalf("test log unreadable at %d: %v", p, err)
		}
		out = append(out, int64(p))
		p += n
	}
	return out
}

func mustCheck(t testing.TB, fsys vfs.FS, dir string, opts Options) *Report {
	t.Helper()
	r, err := Check(fsys, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func dumpProblems(r *Report) string {
	var b strings.Builder
	for _, p := range r.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

func problemAt(r *Report, file string, pos int64, kind Kind) Problem {
	for _, p := range r.Problems {
		if p.File == file && p.Position == pos && p.Kind == kind {
			return p
		}
	}
	return Problem{}
}

func hasProblem(r *Report, file string, pos int64, kind Kind) bool {
	return problemAt(r, file, pos, kind).Kind != ""
}

// readRecords opens the directory with the Log and reads every record.
func readRecords(t testing.TB, fsys vfs.FS, dir string) []record.Record {
	t.Helper()
	l, err := seglog.Open(dir, seglog.Options{FS: fsys, LogConfig: seglog.LogConfig{SegmentBytes: 16 << 10, MaxIndexBytes: 16 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []record.Record
	for rec, err := range l.Records(l.StartOffset()) {
		if err != nil {
			t.Fatalf("reading records: %v", err)
		}
		out = append(out, rec.Clone()) // rec's bytes are reused after the loop body
	}
	return out
}

// crash makes dir look like a log that crashed with the given recovery
// point: no clean-shutdown marker, the checkpoint at rp.
func crash(t testing.TB, fsys vfs.FS, dir string, rp int64) {
	t.Helper()
	if err := fsys.Remove(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatal(err)
	}
	vfstest.WriteFile(t, fsys, filepath.Join(dir, "recovery-point-offset-checkpoint"), []byte(fmt.Sprintf("0\n1\np 0 %d\n", rp)))
}
