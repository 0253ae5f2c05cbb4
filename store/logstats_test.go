package store

import (
	"fmt"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// LogStats sums the partitions' Logs: a partition filled to four
// segments rolled three times, and survives the Log's close by the budget
// of open Logs; after a crash, the partition's first use recovers it and
// counts one recovery, where a clean reopen counts none.
func TestLogStats(t *testing.T) {
	mem := vfs.NewMem()
	s := openStore(t, mem, newFakeClock())
	mustf(t, s.CreateTopic("r", 1, smallConfig()), "create")
	// Through Produce, which pins the Log only for the call (a Writer
	// would keep it open).
	fill := func(segments int) {
		t.Helper()
		for i := 0; ; i++ {
			info, err := s.DescribeTopic("r")
			mustf(t, err, "describe")
			if info.Partitions[0].Segments >= segments {
				return
			}
			_, err = s.ProduceTo("r", 0, kv("k", fmt.Sprintf("value %d %0200d", i, i)))
			mustf(t, err, "produce %d", i)
		}
	}
	fill(4)
	st := s.LogStats()
	if st.Rolls != 3 || st.Opens < 1 || st.Recoveries != 0 {
		t.Fatalf("after filling four segments: %+v", st)
	}
	// More partitions than the budget of open Logs: r's Log is closed
	// and reopened, and its rolls stay counted.
	mustf(t, s.CreateTopic("more", 2*testMaxOpenLogs, smallConfig()), "create more")
	for p := range int32(2 * testMaxOpenLogs) {
		_, err := s.ProduceTo("more", p, kv("k", "v"))
		mustf(t, err, "produce")
	}
	if st := s.LogStats(); st.Opens != 1+2*testMaxOpenLogs {
		t.Fatalf("opens: %+v", st)
	}
	fill(5)
	if st := s.LogStats(); st.Rolls != 4 || st.Opens != 2+2*testMaxOpenLogs {
		t.Fatalf("rolls after r's Log was closed and reopened: %+v", st)
	}
	crashed := mem.CrashClone()
	mustf(t, s.Close(), "close")

	clean := openStore(t, mem, newFakeClock())
	_, err := clean.ProduceTo("r", 0, kv("k", "v"))
	mustf(t, err, "produce after a clean close")
	if st := clean.LogStats(); st.Opens != 1 || st.Recoveries != 0 {
		t.Errorf("a clean reopen: %+v", st)
	}
	mustf(t, clean.Close(), "close")

	s = openStore(t, crashed, newFakeClock())
	defer s.Close()
	if st := s.LogStats(); st.Recoveries != 0 {
		t.Errorf("recoveries before any partition was used: %+v", st)
	}
	_, err = s.ProduceTo("r", 0, kv("k", "v"))
	mustf(t, err, "produce after the crash")
	if st := s.LogStats(); st.Recoveries != 1 || st.SegmentsRecovered < 1 || st.RecoveryTime <= 0 {
		t.Errorf("after the crash, r-0's first use: %+v", st)
	}
}
