package fsck

import (
	"fmt"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

func TestCleanLogHasNoProblems(t *testing.T) {
	for _, codec := range []record.Codec{record.None, record.Zstd} {
		t.Run(codec.String(), func(t *testing.T) {
			fsys := vfs.NewMem()
			writeLog(t, fsys, "/p", codec, 200, 5)
			for _, deep := range []bool{false, true} {
				r := mustCheck(t, fsys, "/p", Options{Deep: deep})
				if !r.Clean() {
					t.Fatalf("deep=%v: problems in a clean log:%s", deep, dumpProblems(r))
				}
				st := r.Stats
				if st.Batches != 200 || st.Records != 1000 || st.FirstOffset != 0 || st.LastOffset != 999 {
					t.Errorf("stats %+v, want 200 batches, 1000 records, offsets [0, 999]", st)
				}
				if st.Segments < 2 {
					t.Errorf("%d segments; the test wants several", st.Segments)
				}
				if st.Codecs[codec.String()] != 200 {
					t.Errorf("codecs %v", st.Codecs)
				}
				if r.Layout != "seglog" {
					t.Errorf("layout %q", r.Layout)
				}
			}
		})
	}
}

// TestCheckBesideLiveLog checks an open log between appends: its active
// segment's preallocated indexes and missing final entry are normal then.
//
// The log syncs every append, so everything it writes (rolls included)
// happens inside Append and nothing runs in the background: with the
// default sync mode the background flusher writes the recovery-point
// checkpoint's .tmp at moments the test cannot control, and a check that
// lists the directory then would see it (a flake of about 1 run in 70).
func TestCheckBesideLiveLog(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := seglog.Open("/live", seglog.Options{FS: fsys, LogConfig: seglog.LogConfig{Sync: seglog.SyncAlways, SegmentBytes: 8 << 10, IndexIntervalBytes: 256, MaxIndexBytes: 8 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 300; i++ {
		if _, err := l.Append(record.Record{Timestamp: int64(1000 + i), Value: []byte(fmt.Sprintf("value %d of a live log", i))}); err != nil {
			t.Fatal(err)
		}
		if i%50 == 49 {
			r := mustCheck(t, fsys, "/live", Options{Deep: true})
			if !r.Clean() {
				t.Fatalf("after %d appends:%s", i+1, dumpProblems(r))
			}
			if r.Stats.Records != int64(i+1) {
				t.Fatalf("%d records seen, %d appended", r.Stats.Records, i+1)
			}
		}
	}
}
