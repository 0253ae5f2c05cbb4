package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
)

// TestSmokeFloors: each write floor runs against the engine, says what it
// is, and counts the records it wrote; a preallocating engine runs too.
func TestSmokeFloors(t *testing.T) {
	defer func(n int64) { floorZeroedBytes = n }(floorZeroedBytes)
	floorZeroedBytes = 1 << 20
	for _, floor := range []string{FloorReserved, FloorPayload, FloorPreallocated, FloorZeroed, FloorSpare} {
		for _, sync := range []seglog.SyncMode{seglog.SyncNone, seglog.SyncAlways} {
			dir := t.TempDir()
			cfg := WriteConfig{RecordSize: 100, Batch: 10, Records: 400, Rounds: 1, Floor: floor,
				Options: seglog.Options{LogConfig: seglog.LogConfig{Sync: sync, Preallocate: floor == FloorPreallocated, SegmentBytes: 1 << 20}}}
			res, err := RunWrite(context.Background(), Env{Dir: dir}, cfg)
			if err != nil {
				t.Fatalf("%s/%v: %v", floor, sync, err)
			}
			checkJSON(t, res, "write")
			if !strings.HasPrefix(res.Baseline, floor+" floor") {
				t.Errorf("%s: baseline %q", floor, res.Baseline)
			}
			if res.BaselineRecords != res.Records || res.CPURatio <= 0 {
				t.Errorf("%s: baseline wrote %d records, engine %d; cpu ratio %v", floor, res.BaselineRecords, res.Records, res.CPURatio)
			}
			leftovers(t, dir)
		}
	}
	if _, err := RunWrite(context.Background(), Env{}, WriteConfig{Records: 10, Floor: "nope"}); err == nil {
		t.Error("unknown floor accepted")
	}
}

// TestSmokeScan: both scan modes read every record of the log, on both
// sides, in every round.
func TestSmokeScan(t *testing.T) {
	for _, mode := range []string{ScanRecords, ScanRead} {
		dir := t.TempDir()
		res, err := RunScan(context.Background(), Env{Dir: dir}, ScanConfig{RecordSize: 100, Batch: 10, LogBytes: 256 << 10,
			FetchBytes: 16 << 10, Mode: mode, Rounds: 2, MinRound: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		checkJSON(t, res, "scan")
		// The warm-up pass is verified too, so more than the timed rounds.
		if res.Mode != mode || res.Records == 0 || res.BaselineRecords == 0 || res.Verified <= res.Records {
			t.Errorf("%s: mode %q, %d records, %d verified", mode, res.Mode, res.Records, res.Verified)
		}
		leftovers(t, dir)
	}
}

// TestSmokePaired: the paired durable run is one result, N writers
// against one, whose speedup is its ratio.
func TestSmokePaired(t *testing.T) {
	dir := t.TempDir()
	results, err := RunDurable(context.Background(), Env{Dir: dir}, DurableConfig{RecordSize: 64, MaxWriters: 4, Duration: 60 * time.Millisecond, Rounds: 2, Paired: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	res := results[0]
	checkJSON(t, res, "durable")
	if res.Writers != 4 || res.Speedup != res.Ratio || res.Verified == 0 {
		t.Errorf("writers %d, speedup %v, ratio %v, verified %d", res.Writers, res.Speedup, res.Ratio, res.Verified)
	}
	leftovers(t, dir)
}
