package seglog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/vfs"
)

// TestCrashHolesQuarantine: power losses that leave holes (the unsynced
// early pages of a file lost, later ones written: zeros with valid batches
// after them) at random points of a workload. The log reopens with every
// acknowledged record and nothing that was never written; every .log
// recovery cut lost only a torn tail or has the bytes it lost in a
// quarantine file byte for byte (checked against the crashed image with
// fsck's independent scanner); each quarantine is reported to
// OnQuarantine; fsck finds nothing else; and a second power loss right
// after the recovery, and a second recovery, quarantine nothing more.
func TestCrashHolesQuarantine(t *testing.T) {
	for _, mode := range []SyncMode{SyncNone, SyncAlways} {
		t.Run(mode.String(), func(t *testing.T) {
			// Segments of several pages, so that a hole can fall between
			// batches of one segment as well as between segments.
			w := crashWorkload{appends: 300, sync: mode, seed: 5, syncEvery: 60, segmentBytes: 24 << 10}
			total := countOps(w, vfs.NewMem())
			points := max(*crashPoints/5, 40)
			r := rand.New(rand.NewPCG(23, uint64(mode)))
			quarantined, tails, reached := 0, 0, 0
			for p := range points {
				k := 1 + r.Int64N(total)
				o := vfs.CrashOptions{Rand: rand.New(rand.NewPCG(r.Uint64(), 4)), HoleUnsynced: 0.8, KeepUnsyncedEntries: 0.3}
				crashed, acked := crashAt(w, vfs.NewMem(), k, o)
				if crashed == nil {
					continue
				}
				if _, err := crashed.Stat("/log"); err != nil {
					continue // the crash came before the directory existed
				}
				reached++
				label := fmt.Sprintf("point %d: crash at op %d/%d", p, k, total)
				before := fscktest.TakeSnapshot(t, crashed, "/log")
				var events []Quarantine
				opts := w.options(crashed)
				opts.OnQuarantine = func(q Quarantine) { events = append(events, q) }
				l, err := Open("/log", opts)
				if err != nil {
					t.Fatalf("%s: reopen: %v", label, err)
				}
				if _, err := stateOf(l); err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				if l.EndOffset() < acked {
					t.Fatalf("%s: acknowledged up to %d, only %d survived", label, acked, l.EndOffset())
				}
				again := crashed.CrashClone()
				if err := l.Close(); err != nil {
					t.Fatalf("%s: close: %v", label, err)
				}
				fscktest.CheckQuarantined(t, crashed, "/log", before, nil)
				names := fscktest.CheckCleanButQuarantines(t, crashed, "/log")
				if len(names) != len(events) {
					t.Fatalf("%s: %d quarantine files, %d reported", label, len(names), len(events))
				}
				for _, q := range events {
					if got := before[q.File]; got != nil {
						t.Fatalf("%s: %s existed before the recovery", label, q.File)
					}
					if !bytes.Equal(vfsRead(t, crashed, q.File), before[q.Source][q.Pos:]) || !q.HoldsValid() {
						t.Fatalf("%s: %s does not hold %s from byte %d", label, q.File, q.Source, q.Pos)
					}
				}
				quarantined += len(events)
				for _, q := range events {
					if q.Pos > 0 {
						tails++
					}
				}

				// A second recovery, after a power loss right after the
				// first, sets nothing more aside.
				events = nil
				opts = w.options(again)
				opts.OnQuarantine = func(q Quarantine) { events = append(events, q) }
				l, err = Open("/log", opts)
				if err != nil {
					t.Fatalf("%s: second reopen: %v", label, err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if len(events) != 0 || !slices.Equal(fscktest.CheckCleanButQuarantines(t, again, "/log"), names) {
					t.Fatalf("%s: the second recovery quarantined again: %v", label, events)
				}
			}
			// Under SyncAlways only the batch being appended is ever
			// unsynced: holes tear it, and nothing follows it.
			if reached < points/2 || (mode == SyncNone) != (quarantined > 0 && tails > 0) {
				t.Fatalf("%d of %d crash points reached, %d quarantines (%d of a segment's rest after damage)", reached, points, quarantined, tails)
			}
			t.Logf("%d crash points, %d quarantine files, %d of a segment's rest after damage", reached, quarantined, tails)
		})
	}
}

func vfsRead(t *testing.T, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, _ := f.Size()
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && size > 0 {
		t.Fatal(err)
	}
	return b
}
