package raftlog

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/vfs"
)

// testOpts makes segments small, so a few dozen entries span several and
// prefix and suffix deletes cross segment boundaries.
func testOpts(fs vfs.FS) Options {
	return Options{FS: fs, SegmentBytes: 1024, MaxBatchBytes: 1024, Logger: quiet}
}

func openT(t testing.TB, fs vfs.FS, dir string) *Store {
	t.Helper()
	s, err := Open(dir, testOpts(fs))
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return s
}

// entries makes entries [from, to] of one term, with varied types,
// extensions, nil and empty data and nanosecond append times.
func entries(from, to, term uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		l := &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte(strings.Repeat("d", int(i%50)) + "x")}
		switch i % 7 {
		case 1:
			l.Type = raft.LogNoop
			l.Data = nil
		case 2:
			l.Type = raft.LogConfiguration
			l.Extensions = []byte{0xca, 0xfe, byte(i)}
		case 3:
			l.Type = raft.LogBarrier
			l.Data = []byte{}
		case 4:
			l.Extensions = []byte("ext")
		}
		if i%5 != 0 {
			l.AppendedAt = time.Unix(1_700_000_000+int64(i), int64(i)*1_234_567%1_000_000_000)
		}
		out = append(out, l)
	}
	return out
}

// sameLog compares two entries field by field; AppendedAt as an instant.
func sameLog(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		(a.Data == nil) == (b.Data == nil) && bytes.Equal(a.Data, b.Data) &&
		bytes.Equal(a.Extensions, b.Extensions) && a.AppendedAt.Equal(b.AppendedAt)
}

// compareStores checks that got answers every LogStore question as want
// does, around and inside its range; ErrLogNotFound must be the sentinel
// itself (raft compares with ==).
func compareStores(t *testing.T, label string, got *Store, want raft.LogStore) {
	t.Helper()
	gf, err1 := got.FirstIndex()
	gl, err2 := got.LastIndex()
	wf, _ := want.FirstIndex()
	wl, _ := want.LastIndex()
	if err1 != nil || err2 != nil {
		t.Fatalf("%s: FirstIndex/LastIndex: %v %v", label, err1, err2)
	}
	if gf != wf || gl != wl {
		t.Fatalf("%s: first/last %d/%d, oracle %d/%d", label, gf, gl, wf, wl)
	}
	lo := uint64(0)
	if wf > 3 {
		lo = wf - 3
	}
	for i := lo; i <= wl+3; i++ {
		if w, ok := compareGetLog(t, label, got, want, i); ok {
			term, err := got.TermAt(i)
			if err != nil || term != w.Term {
				t.Fatalf("%s: TermAt(%d) = %d, %v; want %d", label, i, term, err, w.Term)
			}
		}
	}
}

// compareGetLog checks GetLog(i) of got against want's answer, the error
// raft.ErrLogNotFound itself where want has no entry; it returns want's
// entry and whether there was one.
func compareGetLog(t *testing.T, label string, got *Store, want raft.LogStore, i uint64) (raft.Log, bool) {
	t.Helper()
	var g, w raft.Log
	gerr := got.GetLog(i, &g)
	werr := want.GetLog(i, &w)
	switch {
	case werr == raft.ErrLogNotFound:
		if gerr != raft.ErrLogNotFound { //nolint:errorlint // identity is the contract
			t.Fatalf("%s: GetLog(%d) = %v, want raft.ErrLogNotFound itself", label, i, gerr)
		}
		return w, false
	case werr != nil:
		t.Fatalf("%s: oracle GetLog(%d): %v", label, i, werr)
	case gerr != nil:
		t.Fatalf("%s: GetLog(%d): %v", label, i, gerr)
	case !sameLog(&g, &w):
		t.Fatalf("%s: GetLog(%d) = %+v, oracle %+v", label, i, g, w)
	}
	return w, true
}

// tearTail appends the start of a batch to the newest segment of the
// partition in fs, as a power loss in the middle of a write leaves it.
func tearTail(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	part := filepath.Join(dir, PartitionDir)
	names, err := fs.List(part)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, n := range names {
		if strings.HasSuffix(n, ".log") {
			last = n
		}
	}
	if last == "" {
		return
	}
	f, err := fs.OpenReadWrite(filepath.Join(part, last))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	torn := make([]byte, 40)
	torn[11] = 200 // a batch length running past the end of the file
	if _, err := f.WriteAt(torn, size); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// checkFsck closes nothing: the caller closed the Store writing dir.
func checkFsck(t *testing.T, fs vfs.FS, dir string) {
	t.Helper()
	fscktest.CheckClean(t, fs, filepath.Join(dir, PartitionDir))
}

// quiet drops the recovery warnings the crash steps cause on purpose.
var quiet = slog.New(slog.DiscardHandler)
