package seglog

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/crashtest"
	"github.com/seglog/seglog/vfs"
)

// TestTruncateIndexesSurviveCrash: a TruncateTo into a sealed segment cuts
// its index entries past the cut durably, with the .log. Before, they were
// zeroed only in the mappings; with the recovery point already at the cut
// no later flush covered the segment, and a power loss during the
// RestartAt that followed (raft's delete-everything after a suffix delete)
// left the cut segment below a new empty one, with index entries naming
// offsets past its end: the loader trusts a segment below the recovery
// point, and fsck reported them. A power loss at every filesystem
// operation of the truncation and the restart must reopen to a log fsck
// finds clean.
func TestTruncateIndexesSurviveCrash(t *testing.T) {
	for _, prealloc := range []bool{false, true} {
		mem := vfs.NewMem()
		rec := crashtest.New(mem, 0, nil, crashtest.Options{Rand: rand.New(rand.NewPCG(1, 2)), TornStream: 3})
		opts := truncOptions(vfs.Inject(mem, rec), SyncAlways)
		opts.SegmentBytes = 1 << 20
		opts.IndexIntervalBytes = 1 // every batch in both indexes
		opts.Preallocate = prealloc
		l, err := Open("/t", opts)
		if err != nil {
			t.Fatal(err)
		}
		appendEach(t, l, 10, 0)
		if err := l.Roll(); err != nil { // seals 0-9: indexes trimmed and synced
			t.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		rec.Arm(true)
		if err := l.TruncateTo(2); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := l.RestartAt(2); err != nil {
			t.Fatal(err)
		}
		rec.Arm(false)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		points := rec.Take()
		if len(points) == 0 {
			t.Fatal("no crash point recorded")
		}
		for _, p := range points {
			label := fmt.Sprintf("preallocate %v, power loss at op %d (%v %s, torn %v)", prealloc, p.N, p.Op.Kind, p.Op.Path, p.Torn)
			o := truncOptions(p.FS, SyncAlways)
			o.SegmentBytes = 1 << 20
			r, err := Open("/t", o)
			if err != nil {
				t.Fatalf("%s: reopen: %v", label, err)
			}
			if end := r.EndOffset(); end < 2 {
				t.Errorf("%s: end %d, below the 2 records the truncation kept", label, end)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			fscktest.CheckClean(t, p.FS, "/t")
			if t.Failed() {
				t.Fatalf("%s: fsck", label)
			}
		}
	}
}
