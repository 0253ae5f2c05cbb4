package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// TestLogFlagsInvalid: every bad value is refused before the log is
// opened, with a message naming the flag and a non-zero exit.
func TestLogFlagsInvalid(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--compression", "brotli"}, "--compression"},
		{[]string{"--sync", "sometimes"}, "--sync"},
		{[]string{"--sync", "periodic"}, "--sync-bytes or --sync-interval"},
		{[]string{"--sync-bytes", "-1"}, "--sync-bytes"},
		{[]string{"--sync-interval", "-1s"}, "--sync-interval"},
		{[]string{"--sync-interval", "soon"}, "--sync-interval"},
		{[]string{"--timestamp-type", "now"}, "--timestamp-type"},
		{[]string{"--segment-bytes", "-5"}, "--segment-bytes"},
		{[]string{"--segment-bytes", "0"}, "--segment-bytes"},
		{[]string{"--segment-bytes", "10"}, "--segment-bytes"},
		{[]string{"--segment-bytes", "4294967296"}, "--segment-bytes"},
		{[]string{"--segment-ms", "0"}, "--segment-ms"},
		{[]string{"--segment-ms", "-1"}, "--segment-ms"},
		{[]string{"--segment-ms", "9223372036854775807"}, "--segment-ms"},
		{[]string{"--segment-jitter-ms", "-1"}, "--segment-jitter-ms"},
		{[]string{"--index-interval-bytes", "-1"}, "--index-interval-bytes"},
		{[]string{"--max-index-bytes", "10"}, "--max-index-bytes"},
		{[]string{"--max-batch-bytes", "0"}, "--max-batch-bytes"},
		{[]string{"--max-mapped-indexes", "0"}, "--max-mapped-indexes"},
		{[]string{"--max-open-segment-files", "0"}, "--max-open-segment-files"},
		{[]string{"--max-open-segment-files", "-3"}, "--max-open-segment-files"},
		{[]string{"--leader-epoch", "-1"}, "--leader-epoch"},
		{[]string{"--leader-epoch", "x"}, "--leader-epoch"},
		{[]string{"--batch", "0"}, "--batch"},
	} {
		dir := filepath.Join(t.TempDir(), "log")
		r := invoke(t, "a\n", append([]string{"produce", dir}, c.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("produce %v: exit %d, stderr %q; want an error naming %s", c.args, r.code, r.stderr, c.want)
		}
		if exists(dir) {
			t.Errorf("produce %v: created %s despite the bad flag", c.args, dir)
		}
	}
}

// TestLogFlagsOptions: the flags map onto seglog.Options, and with no
// flags give exactly Kafka's defaults.
func TestLogFlagsOptions(t *testing.T) {
	parse := func(args ...string) (seglog.Options, error) {
		cmd := &cobra.Command{Use: "x"}
		lf := bindLogFlags(cmd)
		if err := cmd.ParseFlags(args); err != nil {
			return seglog.Options{}, err
		}
		return lf.options(cmd)
	}
	o, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if o.SegmentBytes != seglog.DefaultSegmentBytes || o.SegmentAge != 7*24*time.Hour || o.SegmentJitter != 0 ||
		o.IndexIntervalBytes != 4096 || o.MaxIndexBytes != 10<<20 || o.MaxBatchBytes != 1048588 ||
		o.Compression != record.None || o.Sync != seglog.SyncNone || o.TimestampType != record.CreateTime || o.LeaderEpoch != 0 {
		t.Errorf("defaults: %+v", o)
	}
	o, err = parse("--segment-bytes", "123456", "--segment-ms", "60000", "--segment-jitter-ms", "500",
		"--index-interval-bytes", "0", "--max-index-bytes", "4096", "--max-batch-bytes", "100000",
		"--sync", "periodic", "--sync-bytes", "9999", "--sync-interval", "250ms", "--compression", "ZSTD",
		"--timestamp-type", "append", "--leader-epoch", "17", "--max-mapped-indexes", "3",
		"--max-open-segment-files", "5")
	if err != nil {
		t.Fatal(err)
	}
	want := seglog.Options{LogConfig: seglog.LogConfig{
		SegmentBytes:       123456,
		SegmentAge:         time.Minute,
		SegmentJitter:      500 * time.Millisecond,
		IndexIntervalBytes: 1,
		MaxIndexBytes:      4096,
		MaxBatchBytes:      100000,
		Sync:               seglog.SyncPeriodic,
		SyncBytes:          9999,
		SyncInterval:       250 * time.Millisecond,
		Compression:        record.Zstd,
		TimestampType:      record.LogAppendTime,
	},
		MaxMappedIndexes: 3, MaxOpenSegmentFiles: 5,

		LeaderEpoch: 17}
	o.Logger = nil
	if !reflect.DeepEqual(o, want) {
		t.Errorf("options\n got %+v\nwant %+v", o, want)
	}
	if o, err = parse("--segment-bytes", "2048"); err != nil || o.MaxBatchBytes != 2048 {
		t.Errorf("--segment-bytes 2048 alone: max batch bytes %d, %v; want it lowered to 2048", o.MaxBatchBytes, err)
	}
	if o, err = parse("--sync", "always"); err != nil || o.Sync != seglog.SyncAlways {
		t.Errorf("--sync always: %v, %v", o.Sync, err)
	}
}

// TestLogFlagsTakeEffect: the options reach the stored batches.
func TestLogFlagsTakeEffect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	in := strings.Repeat("some key\tsome fairly compressible value value value value\n", 200)
	mustInvoke(t, in, "produce", dir, "--batch", "10", "--compression", "gzip", "--leader-epoch", "9",
		"--timestamp-type", "append", "--segment-bytes", "2048", "--sync", "always")
	batches := storedBatches(t, dir)
	if len(batches) != 20 {
		t.Fatalf("%d batches, want 20", len(batches))
	}
	for i, b := range batches {
		if b.Codec() != record.Gzip || b.PartitionLeaderEpoch() != 9 || b.TimestampType() != record.LogAppendTime {
			t.Fatalf("batch %d: codec %v, epoch %d, timestamp type %v; want gzip, 9, LogAppendTime", i, b.Codec(), b.PartitionLeaderEpoch(), b.TimestampType())
		}
	}
	if n := len(storedLogs(t, dir)); n < 2 {
		t.Errorf("%d segments with --segment-bytes 2048, want several", n)
	}
	// Under LogAppendTime every record reads back with its batch's time.
	got := parseConsumed(t, mustInvoke(t, "", "consume", dir, "--json").stdout)
	if len(got) != 200 {
		t.Fatalf("consumed %d records, want 200", len(got))
	}
	for i, r := range got {
		if want := batches[i/10].MaxTimestamp(); r.Timestamp != want {
			t.Fatalf("record %d: timestamp %d, want the batch's append time %d", i, r.Timestamp, want)
		}
	}
}

// TestSyncModesRoundTrip: every durability mode stores what it is given,
// and an empty stdin stores nothing.
func TestSyncModesRoundTrip(t *testing.T) {
	for _, mode := range [][]string{
		{"--sync", "none"},
		{"--sync", "always"},
		{"--sync", "periodic", "--sync-interval", "5ms"},
		{"--sync", "periodic", "--sync-bytes", "100"},
	} {
		dir := filepath.Join(t.TempDir(), "log")
		r := mustInvoke(t, "", append([]string{"produce", dir}, mode...)...)
		if !strings.Contains(r.stderr, "produced 0 records") {
			t.Errorf("%v, empty stdin: summary %q", mode, r.stderr)
		}
		mustInvoke(t, "a\nb\nc\n", append([]string{"produce", dir, "--batch", "1"}, mode...)...)
		if got := len(parseConsumed(t, mustInvoke(t, "", "consume", dir, "--json").stdout)); got != 3 {
			t.Errorf("%v: %d records read back, want 3", mode, got)
		}
	}
}
