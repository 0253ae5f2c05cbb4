package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// checkJSON checks that a result's JSON has the fields DESIGN.md promises,
// with values that follow from the run.
func checkJSON(t *testing.T, res *Result, workload string) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"workload", "records", "record_bytes", "records_per_sec", "bytes_per_sec", "baseline_records_per_sec", "ratio"} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: JSON lacks %q: %s", workload, k, b)
		}
	}
	if m["workload"] != workload {
		t.Errorf("workload %v, want %s", m["workload"], workload)
	}
	for _, k := range []string{"records", "records_per_sec", "bytes_per_sec", "baseline_records_per_sec", "ratio"} {
		if v, _ := m[k].(float64); !(v > 0) {
			t.Errorf("%s: %s = %v, want > 0", workload, k, m[k])
		}
	}
	if got := res.RecordsPerSec / res.BaselineRecordsPerSec; res.Rounds == 1 && !near(got, res.Ratio) {
		t.Errorf("%s: one round, ratio %v but rates give %v", workload, res.Ratio, got)
	}
	if len(res.RoundRatios) != res.Rounds {
		t.Errorf("%s: %d round ratios for %d rounds", workload, len(res.RoundRatios), res.Rounds)
	}
	if res.Latency.P50 <= 0 || res.Latency.P50 > res.Latency.Max {
		t.Errorf("%s: latency %+v", workload, res.Latency)
	}
}

func near(a, b float64) bool { return a/b > 0.999 && a/b < 1.001 }

// leftovers fails if a run left anything in dir.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 {
		t.Errorf("run left %v in %s", names, dir)
	}
}

func TestSmokeWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  WriteConfig
	}{
		{"append", WriteConfig{RecordSize: 100, Batch: 10, Records: 2000, Rounds: 2}},
		{"producer-zstd", WriteConfig{RecordSize: 100, Batch: 10, Records: 2000, Rounds: 1, Producer: true,
			Options: seglog.Options{LogConfig: seglog.LogConfig{Compression: record.Zstd}}}},
		{"writers-always", WriteConfig{RecordSize: 64, Batch: 1, Records: 64, Writers: 4, Rounds: 1,
			Options: seglog.Options{LogConfig: seglog.LogConfig{Sync: seglog.SyncAlways}}}},
		{"periodic-duration", WriteConfig{RecordSize: 64, Batch: 5, Duration: 100 * time.Millisecond, Rounds: 2,
			Options: seglog.Options{LogConfig: seglog.LogConfig{Sync: seglog.SyncPeriodic, SyncBytes: 4096, SyncInterval: 5 * time.Millisecond}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res, err := RunWrite(context.Background(), Env{Dir: dir, SampleEvery: time.Millisecond}, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkJSON(t, res, "write")
			if tc.cfg.Records > 0 {
				// Whole batches per writer, rounded up.
				if res.Records < tc.cfg.Records || res.Records%int64(tc.cfg.Batch) != 0 {
					t.Errorf("wrote %d records, asked for %d in batches of %d", res.Records, tc.cfg.Records, tc.cfg.Batch)
				}
			}
			// Every round, warm-up included, is read back: a warm-up
			// round writes as many records as a timed one, or, bounded by
			// time, some.
			if tc.cfg.Records > 0 {
				if want := res.Records / int64(res.Rounds) * int64(res.Rounds+1); res.Verified != want {
					t.Errorf("verified %d records, want %d (%d timed rounds of %d, and the warm-up)", res.Verified, want, res.Rounds, res.Records/int64(res.Rounds))
				}
			} else if res.Verified <= res.Records {
				t.Errorf("verified %d records, wrote %d in timed rounds and more in the warm-up", res.Verified, res.Records)
			}
			if want := map[bool]string{false: "append", true: "batch"}[tc.cfg.Producer]; res.Mode != want {
				t.Errorf("mode %q, want %q", res.Mode, want)
			}
			if res.StoredBytesPerRecord <= 0 {
				t.Errorf("stored bytes per record %v", res.StoredBytesPerRecord)
			}
			leftovers(t, dir)
		})
	}
}

func TestSmokeRead(t *testing.T) {
	dir := t.TempDir()
	res, err := RunRead(context.Background(), Env{Dir: dir}, ReadConfig{RecordSize: 100, Batch: 10, LogBytes: 256 << 10, FetchBytes: 16 << 10, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkJSON(t, res, "read")
	if res.Verified != res.Records {
		t.Errorf("peer parsed %d records, each pass sends %d", res.Verified, res.Records)
	}
	if res.StoredBytesPerRecord < 100 {
		t.Errorf("%v wire bytes per 100-byte record", res.StoredBytesPerRecord)
	}
	leftovers(t, dir)
}

func TestSmokeLookup(t *testing.T) {
	dir := t.TempDir()
	res, err := RunLookup(context.Background(), Env{Dir: dir}, LookupConfig{RecordSize: 100, Batch: 5, LogBytes: 256 << 10, Lookups: 500, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkJSON(t, res, "lookup")
	if res.Verified != 500 {
		t.Errorf("verified %d lookups against the baseline, want 500", res.Verified)
	}
	leftovers(t, dir)
}

func TestSmokeDurable(t *testing.T) {
	dir := t.TempDir()
	results, err := RunDurable(context.Background(), Env{Dir: dir}, DurableConfig{RecordSize: 64, MaxWriters: 4, Duration: 60 * time.Millisecond, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("%d results for writers 1, 2, 4", len(results))
	}
	for i, res := range results {
		checkJSON(t, res, "durable")
		if res.Writers != 1<<i || res.Sync != "always" || res.Verified == 0 {
			t.Errorf("level %d: writers %d, sync %s, verified %d", i, res.Writers, res.Sync, res.Verified)
		}
		if want := res.RecordsPerSec / results[0].RecordsPerSec; !near(res.Speedup, want) {
			t.Errorf("level %d: speedup %v, rates give %v", i, res.Speedup, want)
		}
	}
	leftovers(t, dir)
}

// The table is made from real results: every workload row is there
// (package benchplot draws the same results).
func TestTable(t *testing.T) {
	dir := t.TempDir()
	var results []*Result
	for _, size := range []int{50, 200} {
		res, err := RunWrite(context.Background(), Env{Dir: dir, SampleEvery: time.Millisecond},
			WriteConfig{RecordSize: size, Batch: 10, Duration: 40 * time.Millisecond, Rounds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Samples) == 0 {
			t.Fatal("no throughput samples")
		}
		results = append(results, res)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, results); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(buf.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "seglog" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("table has %d seglog rows, want 2:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "baseline:") {
		t.Errorf("table does not say what the baseline is:\n%s", buf.String())
	}
}

func TestInvalidConfig(t *testing.T) {
	ctx := context.Background()
	env := Env{Dir: t.TempDir()}
	for _, cfg := range []WriteConfig{
		{RecordSize: -1, Records: 1},
		{Batch: -1, Records: 1},
		{Writers: -2, Records: 1},
		{},
		{Records: 1, Options: seglog.Options{LogConfig: seglog.LogConfig{Sync: seglog.SyncPeriodic}}},
	} {
		if _, err := RunWrite(ctx, env, cfg); !errors.Is(err, ErrInvalidConfig) && !errors.Is(err, seglog.ErrInvalidOptions) {
			t.Errorf("%+v: err %v, want ErrInvalidConfig or ErrInvalidOptions", cfg, err)
		}
	}
	if _, err := RunLookup(ctx, env, LookupConfig{Lookups: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("negative lookups: %v", err)
	}
	if _, err := RunRead(ctx, env, ReadConfig{FetchBytes: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("read, negative fetch bytes: %v", err)
	}
	for _, cfg := range []ScanConfig{{Rounds: -1}, {LogBytes: -1}, {Mode: "bogus"}} {
		if _, err := RunScan(ctx, env, cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("scan %+v: err %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// A read pass whose peer sees a damaged batch fails verification: the
// parser is what makes the read workload's read-back mean something.
func TestPeerRejectsDamage(t *testing.T) {
	p, err := newPeer(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	cur := &valueCursor{pool: valuePool(10, 9), size: 10}
	batches, err := buildBatches(cur, 2, 3, record.None)
	if err != nil {
		t.Fatal(err)
	}
	record.Batch(batches[1]).SetBaseOffset(3) // follows on from the first batch's 3 records
	stream := append(append([]byte(nil), batches[0]...), batches[1]...)
	p.expect(int64(len(stream)), true)
	if _, err := p.conn.Write(stream); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(); err != nil || p.records != 6 {
		t.Fatalf("clean stream: %v, %d records", err, p.records)
	}
	stream[len(stream)-1] ^= 1
	p.expect(int64(len(stream)), true)
	if _, err := p.conn.Write(stream); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(); !errors.Is(err, ErrVerify) {
		t.Fatalf("damaged stream: %v, want ErrVerify", err)
	}
}
