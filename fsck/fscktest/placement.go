package fscktest

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// Placement says where the recovery point of a damaged log lies, which
// decides what repair (and the Log's recovery) may do about damage in its
// batches: damage below the recovery point is in data the log had synced,
// and must be reported with nothing changed; damage past it is a torn tail
// that recovery cuts.
type Placement int

const (
	// Clean is the log as Close left it: the clean-shutdown marker says
	// every batch was synced. (The Log's Open trusts such a directory
	// without scanning it: damage shows when it is read.)
	Clean Placement = iota
	// Synced is a crashed log (no marker) whose recovery point is its end:
	// every batch had been synced.
	Synced
	// Unsynced is a crashed log whose recovery point is the damage: the
	// damaged batch and everything after it had not been synced.
	Unsynced
)

// Placements lists every Placement.
func Placements() []Placement { return []Placement{Clean, Synced, Unsynced} }

// String names the placement, for subtest names.
func (p Placement) String() string {
	switch p {
	case Clean:
		return "clean"
	case Synced:
		return "synced"
	case Unsynced:
		return "unsynced"
	}
	return fmt.Sprintf("Placement(%d)", int(p))
}

// Below reports whether dmg (of a Data case) lies below the recovery point
// under p, for a log whose records are offsets 0 to end-1: then nothing may
// be cut. A cut is allowed only from the recovery point on.
func (p Placement) Below(dmg Damage, end int64) bool {
	switch p {
	case Clean:
		return true
	case Synced:
		return int64(dmg.Keep) < end
	}
	return false
}

// Place gives the log in dir (written and closed cleanly) the recovery
// state p for dmg: Clean leaves it; Synced and Unsynced remove the
// clean-shutdown marker and write the recovery point (end, or the offset
// the damage starts at) into the directory's checkpoint, as a crashed Log
// leaves them.
func Place(t testing.TB, fsys vfs.FS, dir string, p Placement, dmg Damage, end int64) {
	t.Helper()
	if p == Clean {
		return
	}
	if err := fsys.Remove(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatal(err)
	}
	rp := end
	if p == Unsynced {
		rp = int64(dmg.Keep)
	}
	vfstest.WriteFile(t, fsys, filepath.Join(dir, "recovery-point-offset-checkpoint"), []byte(fmt.Sprintf("0\n1\n%s 0 %d\n", filepath.Base(dir), rp)))
}
