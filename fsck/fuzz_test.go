package fsck

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// fuzzSeeds returns .log contents covering the bad inputs fsck must
// survive: real batches, truncated, zero-filled, random, and length fields
// far larger than the file.
func fuzzSeeds(t testing.TB) [][]byte {
	real := vfstest.ReadFile(t, vfs.Default, filepath.Join(corpusDir, "zstd.broker-log"))
	first := real[:binary.BigEndian.Uint32(real[8:])+12]
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	huge := append([]byte(nil), first...)
	binary.BigEndian.PutUint32(huge[8:], 0x7fffffff)
	neg := append([]byte(nil), first...)
	binary.BigEndian.PutUint32(neg[8:], 0x80000000)
	return [][]byte{
		nil,
		first,
		real[:4096],
		real[:len(first)+30],
		append(append([]byte(nil), first...), make([]byte, 100)...),
		make([]byte, 5000),
		random,
		huge,
		neg,
		append(append(append([]byte(nil), first...), random[:200]...), real[len(first):len(first)*3]...),
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := vfs.NewMem()
		dir := "/p"
		if err := fsys.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		vfstest.WriteFile(t, fsys, filepath.Join(dir, layout.FileName(0, ".log")), data)
		for _, deep := range []bool{false, true} {
			r, err := Check(fsys, dir, Options{Deep: deep})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range r.Problems {
				if p.Position < 0 || p.File == "" || p.Detail == "" {
					t.Fatalf("problem without a place or a sentence: %+v", p)
				}
			}
		}
		// Repairing everything, mid-log damage included, must leave a
		// directory a second check finds clean, but for missing data
		// (offsets absent from a log never compacted: the batches the
		// input holds may skip some), which no repair brings back or
		// hides: it is reported, and a second repair changes nothing.
		if _, err := Repair(fsys, dir, RepairOptions{Options: Options{Deep: true}, TruncateDamaged: true}); err != nil {
			t.Fatal(err)
		}
		r := mustCheck(t, fsys, dir, Options{Deep: true})
		for _, p := range r.Problems {
			// What a repair must leave: the evidence of missing data, the
			// quarantine files that hold what it cut, and batches whose
			// leader epoch goes down (a repair never rewrites a valid
			// batch; docs/fsck.md: leader-epoch, repaired never).
			batchEpoch := p.Kind == KindLeaderEpoch && strings.HasSuffix(p.File, layout.LogSuffix)
			if p.Kind != KindMissingData && p.Kind != KindQuarantine && !batchEpoch {
				t.Fatalf("not clean after a full repair:%s", dumpProblems(r))
			}
		}
		if !r.Clean() {
			before := vfstest.ReadFile(t, fsys, filepath.Join(dir, layout.FileName(0, ".log")))
			rr, err := Repair(fsys, dir, RepairOptions{Options: Options{Deep: true}, TruncateDamaged: true})
			if err != nil {
				t.Fatal(err)
			}
			if rr.Unrepaired() != len(r.Problems) || !bytes.Equal(vfstest.ReadFile(t, fsys, filepath.Join(dir, layout.FileName(0, ".log"))), before) {
				t.Fatalf("a second repair changed what the first left:%s", dumpProblems(rr))
			}
		}
	})
}

// TestHugeLengthAllocatesLittle checks that a length field claiming 2 GiB
// in a small file does not make the check allocate anything like it.
func TestHugeLengthAllocatesLittle(t *testing.T) {
	for _, n := range []uint32{0x7fffffff, 64 << 20, 0xfffffff0} {
		fsys := vfs.NewMem()
		if err := fsys.MkdirAll("/p"); err != nil {
			t.Fatal(err)
		}
		data := make([]byte, 200)
		binary.BigEndian.PutUint32(data[8:], n)
		data[16] = 2
		vfstest.WriteFile(t, fsys, "/p/"+layout.FileName(0, ".log"), data)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := mustCheck(t, fsys, "/p", Options{Deep: true})
		runtime.ReadMemStats(&after)
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("length %#x: check allocated %d bytes for a 200-byte file", n, got)
		}
		if !hasProblem(r, layout.FileName(0, ".log"), 0, KindTornTail) && !hasProblem(r, layout.FileName(0, ".log"), 0, KindBadLength) {
			t.Errorf("length %#x: damage not reported at byte 0:%s", n, dumpProblems(r))
		}
	}
}
