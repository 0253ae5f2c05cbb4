package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestRunCompactSmall(t *testing.T) {
	res, err := RunCompact(context.Background(), Env{Dir: t.TempDir()}, CompactConfig{
		Keys: []int{50, 5000}, Records: 20_000, BatchRecords: 50, SegmentBytes: 256 << 10, MapBytes: 1 << 20, Idle: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.InputBytes <= 0 || r.InputMBps <= 0 || r.BaselineMBps <= 0 || r.RecordsRemoved <= 0 || r.PeakHeapBytes == 0 ||
			r.CPUSeconds <= 0 || r.Appends == 0 || r.AppendP99Idle <= 0 {
			t.Fatalf("run %+v", r)
		}
		if r.OutputBytes >= r.InputBytes {
			t.Fatalf("%d keys: output %d of input %d", r.Keys, r.OutputBytes, r.InputBytes)
		}
	}
	// 50 keys leave far less than 5,000 do.
	if res.Runs[0].OutputBytes >= res.Runs[1].OutputBytes {
		t.Fatalf("outputs %d and %d", res.Runs[0].OutputBytes, res.Runs[1].OutputBytes)
	}
	var out bytes.Buffer
	if err := WriteCompact(&out, res); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 3 || !strings.Contains(lines[0], "input MB/s") {
		t.Fatalf("table:\n%s", out.String())
	}
}

func TestParseKeys(t *testing.T) {
	if k, err := ParseKeys("10000, 1000000"); err != nil || len(k) != 2 || k[1] != 1_000_000 {
		t.Fatalf("%v %v", k, err)
	}
	for _, bad := range []string{"", "0", "x", "5,-1"} {
		if _, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) accepted", bad)
		}
	}
}
