package loadplan

import (
	"math"
	"testing"

	"github.com/seglog/seglog/layout"
)

// names lists segments at the given bases; indexed says which have both
// index files.
func names(bases []int64, indexed map[int64]bool) []string {
	var out []string
	for _, b := range bases {
		out = append(out, layout.FileName(b, layout.LogSuffix))
		if indexed[b] {
			out = append(out, layout.FileName(b, layout.IndexSuffix), layout.FileName(b, layout.TimeIndexSuffix))
		}
	}
	return out
}

func TestCleanShutdownTrustsEverything(t *testing.T) {
	bases := []int64{0, 100, 200}
	p := New(names(bases, map[int64]bool{0: true, 100: true, 200: true}), State{Clean: true, OwnMarker: true})
	if p.Synced != math.MaxInt64 || p.ScanFrom != 3 {
		t.Fatalf("Synced %d ScanFrom %d, want MaxInt64 and 3", p.Synced, p.ScanFrom)
	}
	for i := range bases {
		if !p.Trusted(i) || p.CheckFirst(i) {
			t.Errorf("segment %d: trusted %v checkFirst %v, want trusted and not checked", i, p.Trusted(i), p.CheckFirst(i))
		}
	}
	if !p.RemovesMarker() {
		t.Error("a clean load of the directory's own marker must remove it")
	}
	if p.Torn(1 << 40) {
		t.Error("after a clean shutdown no damage is a torn tail")
	}
}

func TestCrashScansFromTheRecoveryPoint(t *testing.T) {
	bases := []int64{0, 100, 200, 300}
	// Segment 100 lost its indexes: below the recovery point it is
	// scanned first, the others below it are trusted.
	p := New(names(bases, map[int64]bool{0: true, 200: true, 300: true}), State{RecoveryPoint: 250})
	if p.Synced != 250 || p.ScanFrom != 2 {
		t.Fatalf("Synced %d ScanFrom %d, want 250 and 2", p.Synced, p.ScanFrom)
	}
	wantTrusted := []bool{true, false, false, false}
	// 100 needs a scan and is synced; 200 holds the recovery point; 300
	// holds no synced data, so it is scanned as it is applied.
	wantCheck := []bool{false, true, true, false}
	for i := range bases {
		if p.Trusted(i) != wantTrusted[i] || p.CheckFirst(i) != wantCheck[i] {
			t.Errorf("segment %d: trusted %v checkFirst %v, want %v %v", i, p.Trusted(i), p.CheckFirst(i), wantTrusted[i], wantCheck[i])
		}
	}
	if p.RemovesMarker() {
		t.Error("no marker to remove after a crash")
	}
	if p.Torn(249) || !p.Torn(250) {
		t.Error("damage is torn exactly when the log resumes at or past the recovery point")
	}
	o := p.RecoverOptions(1)
	if o.Synced != 250 || o.NextBase != 200 {
		t.Errorf("RecoverOptions(1) = %+v, want Synced 250 NextBase 200", o)
	}
	if o := p.RecoverOptions(3); o.NextBase != 0 {
		t.Errorf("the last segment has no next base, got %d", o.NextBase)
	}
}

func TestNoRecoveryPointScansEverything(t *testing.T) {
	bases := []int64{10, 20}
	p := New(names(bases, map[int64]bool{10: true, 20: true}), State{})
	// The first segment begins above the recovery point 0: none holds it.
	if p.ScanFrom != 0 || p.Trusted(0) {
		t.Fatalf("ScanFrom %d trusted(0) %v: with nothing synced no segment is trusted", p.ScanFrom, p.Trusted(0))
	}
}

func TestSetsAsideUnlessLostBelowStart(t *testing.T) {
	bases := []int64{0, 100, 200}
	for _, tc := range []struct {
		st   State
		i    int
		lost bool
		want bool
	}{
		{State{}, 0, true, true},
		{State{}, 0, false, false},
		{State{HaveLogStart: true, LogStart: 100}, 0, true, false}, // the next segment begins at the start
		{State{HaveLogStart: true, LogStart: 99}, 0, true, true},
		{State{HaveLogStart: true, LogStart: 150}, 1, true, true},
		{State{HaveLogStart: true, LogStart: 500}, 2, true, true}, // the last segment: nothing follows to keep
	} {
		p := New(names(bases, nil), tc.st)
		if got := p.SetsAside(tc.i, tc.lost); got != tc.want {
			t.Errorf("%+v segment %d lost %v: SetsAside %v, want %v", tc.st, tc.i, tc.lost, got, tc.want)
		}
	}
}

func TestLeftoversOrphansAndIndex(t *testing.T) {
	ns := append(names([]int64{0, 100}, nil),
		layout.FileName(50, layout.IndexSuffix),           // an orphan index
		layout.FileName(100, layout.LogSuffix)+".deleted", // a leftover
	)
	p := New(ns, State{})
	if len(p.Orphans) != 1 || p.Orphans[0] != layout.FileName(50, layout.IndexSuffix) {
		t.Errorf("orphans %v", p.Orphans)
	}
	if p.Leftovers.Empty() {
		t.Error("a .deleted file is a leftover")
	}
	if i, ok := p.Index(100); !ok || i != 1 {
		t.Errorf("Index(100) = %d %v", i, ok)
	}
	if _, ok := p.Index(50); ok {
		t.Error("an orphan index is not a segment")
	}
}
