package seglog

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

var crashPoints = flag.Int("crash.points", 1000, "simulated power losses per crash test")

// crashValue is the value stored at offset off, so a reader can check any
// record it finds without a model of the whole log.
func crashValue(off int64, size int) []byte {
	v := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(off), 7))
	for i := range v {
		v[i] = byte('a' + r.IntN(26))
	}
	return v
}

// crashWorkload appends batches of records whose values are crashValue of
// their offsets, rolling segments often, and calls ack with the end offset
// of every append that returned successfully.
type crashWorkload struct {
	appends int
	sync    SyncMode
	seed    uint64
}

func (w crashWorkload) options(fs vfs.FS) Options {
	return Options{
		FS:                 fs,
		SegmentBytes:       4096,
		IndexIntervalBytes: 256,
		MaxIndexBytes:      1024,
		Sync:               w.sync,
		Logger:             discardLogger(),
	}
}

func (w crashWorkload) run(fs vfs.FS, ack func(end int64)) {
	l, err := Open("/log", w.options(fs))
	if err != nil {
		return
	}
	r := rand.New(rand.NewPCG(w.seed, 1))
	for i := 0; i < w.appends; i++ {
		n := 1 + r.IntN(4)
		recs := make([]record.Record, n)
		base := l.EndOffset()
		for j := range recs {
			recs[j] = record.Record{Key: []byte(fmt.Sprint(r.IntN(8))), Value: crashValue(base+int64(j), 20+r.IntN(200)), Timestamp: 1000 + base + int64(j)}
		}
		info, err := l.Append(recs...)
		if err != nil {
			break
		}
		if w.sync == SyncAlways {
			ack(info.LastOffset + 1)
		}
		if i%50 == 49 {
			if err := l.Sync(); err != nil {
				break
			}
			ack(l.EndOffset())
		}
	}
	l.Close()
}

// verifyCrashState opens the log a power loss left behind and checks it:
// it opens, offsets run contiguously from the start, every record holds its
// offset's value, and every acknowledged offset is there.
func verifyCrashState(t *testing.T, fs vfs.FS, acked int64, label string) {
	t.Helper()
	l, err := Open("/log", crashWorkload{}.options(fs))
	if err != nil {
		t.Fatalf("%s: reopen after crash: %v", label, err)
	}
	next := l.StartOffset()
	for r, err := range l.Records(l.StartOffset()) {
		if err != nil {
			t.Fatalf("%s: reading after crash at offset %d: %v", label, next, err)
		}
		if r.Offset != next {
			t.Fatalf("%s: offset %d follows %d", label, r.Offset, next-1)
		}
		if want := crashValue(r.Offset, len(r.Value)); !bytes.Equal(r.Value, want) {
			t.Fatalf("%s: offset %d holds a value that was never written there", label, r.Offset)
		}
		next++
	}
	if next != l.EndOffset() {
		t.Fatalf("%s: read up to %d, end offset %d %s", label, next, l.EndOffset(), l.debugSegments())
	}
	if l.EndOffset() < acked {
		t.Fatalf("%s: acknowledged up to %d, only %d survived", label, acked, l.EndOffset())
	}
	// The recovered log accepts appends at its end and closes clean.
	if _, err := l.Append(record.Record{Value: crashValue(l.EndOffset(), 10)}); err != nil {
		t.Fatalf("%s: append after recovery: %v", label, err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("%s: close after recovery: %v", label, err)
	}
	fscktest.CheckClean(t, fs, "/log")
}

// TestCrashRecovery simulates power losses at many points of a workload on
// the crash-aware in-memory FS: the machine's state at the moment of the
// k-th filesystem operation is cloned (dropping what was not synced, and in
// half the runs keeping a random torn prefix of unsynced bytes), the log is
// reopened from the clone and verified.
func TestCrashRecovery(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncNone} {
		t.Run(mode.String(), func(t *testing.T) {
			w := crashWorkload{appends: 120, sync: mode, seed: 42}
			// Count the workload's operations once.
			counter := &vfs.Counter{}
			w.run(vfs.Inject(vfs.NewMem(), counter), func(int64) {})
			total := counter.Count()
			points := *crashPoints / 2
			missed := 0
			defer func() {
				if missed > points/10 {
					t.Errorf("%d of %d crash points were never reached", missed, points)
				}
			}()
			r := rand.New(rand.NewPCG(9, uint64(mode)))
			for p := 0; p < points; p++ {
				k := 1 + r.Int64N(total)
				mem := vfs.NewMem()
				var acked atomic.Int64
				var once sync.Once
				var crashed *vfs.MemFS
				var ackedAtCrash int64
				keep := p%2 == 1
				seed := r.Uint64()
				n := int64(0)
				inj := vfs.InjectorFunc(func(op vfs.Op) error {
					if atomic.AddInt64(&n, 1) == k {
						once.Do(func() {
							ackedAtCrash = acked.Load()
							if keep {
								crashed = mem.CrashCloneWith(vfs.CrashOptions{Rand: rand.New(rand.NewPCG(seed, 3)), KeepUnsynced: 0.7})
							} else {
								crashed = mem.CrashClone()
							}
						})
					}
					return nil
				})
				w.run(vfs.Inject(mem, inj), func(end int64) {
					for {
						cur := acked.Load()
						if end <= cur || acked.CompareAndSwap(cur, end) {
							return
						}
					}
				})
				if crashed == nil {
					// The background flusher makes the operation count vary
					// a little from run to run; a point past this run's end
					// is simply not a crash.
					missed++
					continue
				}
				verifyCrashState(t, crashed, ackedAtCrash, fmt.Sprintf("crash at op %d/%d (torn=%v)", k, total, keep))
			}
		})
	}
}
