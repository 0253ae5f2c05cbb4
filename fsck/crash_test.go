package fsck

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestCrashImages checks fsck on what a power loss leaves of a running
// log: a check never fails; a repair without TruncateDamaged (whatever a
// crash leaves lies past the recovery point, so the destructive flag is
// never needed) leaves a directory a second check finds clean and the Log
// opens; and every record synced before the crash is still there.
func TestCrashImages(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 7))
			mem := vfs.NewMem()
			l, err := seglog.Open("/p", seglog.Options{FS: mem, LogConfig: seglog.LogConfig{SegmentBytes: 4 << 10, IndexIntervalBytes: 300, MaxIndexBytes: 4 << 10}})
			if err != nil {
				t.Fatal(err)
			}
			var values [][]byte
			synced := 0
			steps := 20 + rng.IntN(60)
			for i := 0; i < steps; i++ {
				v := []byte(fmt.Sprintf("record %d %s", i, bytes.Repeat([]byte{'x'}, rng.IntN(300))))
				if _, err := l.Append(record.Record{Value: v}); err != nil {
					t.Fatal(err)
				}
				values = append(values, v)
				if rng.IntN(5) == 0 {
					if err := l.Sync(); err != nil {
						t.Fatal(err)
					}
					synced = len(values)
				}
			}
			img := mem.CrashCloneWith(vfs.CrashOptions{Rand: rng, KeepUnsynced: 0.7, KeepUnsyncedEntries: 0.5})
			l.Close()

			if _, err := Check(img, "/p", Options{Deep: true}); err != nil {
				t.Fatalf("check of a crash image: %v", err)
			}
			rr, err := Repair(img, "/p", RepairOptions{Options: Options{Deep: true}, IndexIntervalBytes: 300})
			if err != nil {
				t.Fatal(err)
			}
			if after := mustCheck(t, img, "/p", Options{Deep: true}); !cleanButQuarantines(after) {
				t.Fatalf("not clean after repair:%s\nrepair said:%s", dumpProblems(after), dumpProblems(rr))
			}
			got := readRecords(t, img, "/p")
			if len(got) < synced {
				t.Fatalf("%d records after repair, %d were synced", len(got), synced)
			}
			for i, r := range got {
				if !bytes.Equal(r.Value, values[i]) {
					t.Fatalf("record %d differs", i)
				}
			}
		})
	}
}
