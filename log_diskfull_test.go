package seglog_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// smallFS mounts a tmpfs of size bytes on a new directory for the test
// (unmounted at its end). It skips the test, saying why, when the process
// is not root or the mount fails.
func smallFS(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("disk-full tests mount a small tmpfs: run as root (CI does)")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Skipf("cannot mount a %d-byte tmpfs on %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file taking all free space but headroom bytes, in page
// multiples, and returns its path.
func fill(t *testing.T, dir string, headroom int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	n := max(free-headroom, 0) / st.Bsize * st.Bsize
	path := filepath.Join(dir, "filler")
	f, err := vfs.Default.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := f.Write(buf[:k]); err != nil {
			break // full already: fine
		}
		n -= k
	}
	return path
}

func diskFullOptions() seglog.Options {
	return seglog.Options{
		LogConfig: seglog.LogConfig{
			SegmentBytes:       16 << 10,
			IndexIntervalBytes: 512,
			MaxIndexBytes:      8 << 10,
			Sync:               seglog.SyncAlways,
		},
		Logger: discard(),
		Clock:  testutil.NowFunc(func() time.Time { return time.UnixMilli(1_700_000_000_000) }),
	}
}

// TestDiskFull fills a real (tmpfs) filesystem at many points of a
// workload of appends, rolls (new segments and their preallocated,
// memory-mapped indexes), compactions and cleaner-checkpoint writes, each
// time leaving a different amount of room. Whatever operation meets the
// full disk must return an error (never SIGBUS through a mapped index,
// never a panic); once space is freed the log reopens holding every
// acknowledged record, takes appends again and is fsck-clean.
func TestDiskFull(t *testing.T) {
	dir := smallFS(t, 2<<20)
	rounds := soak.Reduce(48*soak.Scale(), 4)
	rng := rand.New(rand.NewPCG(soak.Seed(), 44))
	failedBy := map[string]int{}
	for round := 0; round < rounds; round++ {
		logDir := filepath.Join(dir, fmt.Sprintf("log%d", round))
		headroom := int64(rng.IntN(160)) << 10
		mixes := [][]string{
			{"append"}, // rolls (new segments, preallocated mapped indexes) happen inside appends
			{"append", "append", "roll"},
			{"append", "append", "append", "append", "roll", "compact", "ckpt"},
		}
		kind, err := diskFullRound(t, logDir, dir, headroom, rng.Uint64(), mixes[round%len(mixes)])
		if err != nil {
			failedBy[kind]++
		}
		if t.Failed() {
			t.Fatalf("round %d (headroom %d): failed", round, headroom)
		}
		if err := os.RemoveAll(logDir); err != nil { //vfs:allow the test's scratch tmpfs
			t.Fatal(err)
		}
	}
	t.Logf("rounds ended by a full disk, by operation: %v", failedBy)
	soak.Count(t, "disk_full_rounds", rounds)
	if len(failedBy) < 2 {
		t.Errorf("the disk filled during %v only: the headrooms do not exercise the workload", failedBy)
	}
}

// diskFullRound runs the workload with headroom bytes free and returns
// the kind of operation that met the full disk and its error.
func diskFullRound(t *testing.T, logDir, mount string, headroom int64, seed uint64, kinds []string) (string, error) {
	t.Helper()
	filler := fill(t, mount, headroom)
	opts := diskFullOptions()
	var acked cstate
	var failKind string
	var failErr error
	func() {
		l, err := seglog.Open(logDir, opts)
		if err != nil {
			failKind, failErr = "open", err
			return
		}
		defer l.Close()
		run, err := newLogRunner(l, seed)
		if err != nil {
			t.Fatal(err)
		}
		acked, _ = readState(l)
		for i := 0; i < 4000; i++ {
			kind := kinds[run.rng.IntN(len(kinds))]
			if _, err := run.apply(kind); err != nil {
				failKind, failErr = kind, err
				return
			}
			st, err := readState(l)
			if err != nil {
				t.Fatalf("reading after %s: %v", kind, err)
			}
			acked = st
		}
	}()
	if failErr == nil {
		t.Fatalf("headroom %d: 4000 ops never filled the disk", headroom)
	}
	if !isNoSpace(failErr) {
		t.Fatalf("%s on a full disk: %v, want an error wrapping ENOSPC", failKind, failErr)
	}
	// Reopening on the still-full disk (recovery rebuilding indexes,
	// a new active segment's mapped index) fails cleanly or works.
	if l, err := seglog.Open(logDir, opts); err == nil {
		for range 50 {
			info, err := l.Append(record.Record{Key: []byte("full"), Value: campaignValue(l.EndOffset(), "full")})
			if err != nil {
				break
			}
			acked.recs = append(acked.recs, crec{info.FirstOffset, "full"})
			acked.end = info.LastOffset + 1
		}
		l.Close()
	}
	// Space comes back; the log reopens with every acknowledged record.
	if err := os.Remove(filler); err != nil { //vfs:allow the test's scratch tmpfs
		t.Fatal(err)
	}
	l, err := seglog.Open(logDir, opts)
	if err != nil {
		t.Fatalf("reopen after %s met a full disk: %v", failKind, err)
	}
	got, err := readState(l)
	if err != nil {
		t.Fatalf("after %s met a full disk: %v", failKind, err)
	}
	if !keepsAcked(got, acked, failKind) {
		t.Fatalf("after %s met a full disk (%v): reopened %v %v, acknowledged %v %v", failKind, failErr, got, got.recs, acked, acked.recs)
	}
	for range 20 {
		if _, err := l.Append(record.Record{Key: []byte("after"), Value: campaignValue(l.EndOffset(), "after")}); err != nil {
			t.Fatalf("append once space is back: %v", err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close once space is back: %v", err)
	}
	fscktest.CheckClean(t, vfs.Default, logDir)
	return failKind, failErr
}

func isNoSpace(err error) bool {
	for e := err; e != nil; {
		if e == syscall.ENOSPC {
			return true
		}
		switch x := e.(type) {
		case interface{ Unwrap() error }:
			e = x.Unwrap()
		case interface{ Unwrap() []error }:
			for _, f := range x.Unwrap() {
				if isNoSpace(f) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// keepsAcked reports whether got holds what was acknowledged: the same
// start, every acknowledged record (compaction may have dropped
// superseded ones, never the last of a key), and nothing else below the
// acknowledged end.
func keepsAcked(got, acked cstate, failed string) bool {
	if got.start != acked.start || got.end < acked.end {
		return false
	}
	below := got.recs[:len(got.recs)-len(from(got.recs, acked.end))]
	if failed != "compact" {
		return slices.Equal(below, acked.recs)
	}
	last := map[string]int64{}
	for _, r := range acked.recs {
		last[r.key] = r.off
	}
	for k, off := range last {
		if !slices.Contains(below, crec{off, k}) {
			return false
		}
	}
	return subseq(below, acked.recs)
}
