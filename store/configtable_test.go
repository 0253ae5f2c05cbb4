package store

import (
	"flag"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/defaults"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestConfigTableGolden: every config, set to each of a spread of values
// (in range, at and past each bound, malformed, another config's
// spelling), gives exactly the answer it gave before the configs became
// one table: the same error text, the same printed value, the same
// Validate verdict, the same seglog.Options and cleaner.Policy; and so do
// a few combinations through SetAll. testdata/config_golden.txt was
// written by this test's loop run against the switch statements the
// table replaced (issue 28); min.insync.replicas's lines, added with the
// config, and the longer list of known configs, were written by the table;
// the combinations of max.message.bytes above segment.bytes became valid
// when such a batch got a segment of its own, as in Kafka, and
// max.message.bytes became the batch's whole size, as Kafka's (-update).
var updateGolden = flag.Bool("update", false, "rewrite testdata/config_golden.txt with the table's answers (a change to them meant)")

func TestConfigTableGolden(t *testing.T) {
	want := vfstest.ReadFile(t, vfs.Default, "testdata/config_golden.txt")

	var b strings.Builder
	for _, k := range append(Keys(), "segment.ms", "") {
		for _, v := range goldenValues {
			c := DefaultTopicConfig()
			res := "ok"
			if err := c.Set(k, v); err != nil {
				res = "err " + err.Error()
			}
			if res != "ok" {
				fmt.Fprintf(&b, "%s|%s|%s\n", k, v, res)
				continue
			}
			val := "valid"
			if err := c.Validate(); err != nil {
				val = err.Error()
			}
			fmt.Fprintf(&b, "%s|%s|%s|%s|%s|%s|%+v\n", k, v, res, c.Get(k), val, goldenOptions(c), c.policy())
		}
	}
	for _, kvs := range goldenSets {
		c := DefaultTopicConfig()
		res := "valid"
		if err := c.SetAll(kvs); err != nil {
			res = err.Error()
		}
		fmt.Fprintf(&b, "setall %s|%s|%s|%+v\n", strings.Join(kvs, " "), res, goldenOptions(c), c.policy())
	}
	if *updateGolden {
		vfstest.WriteFile(t, vfs.Default, "testdata/config_golden.txt", []byte(b.String()))
		return
	}
	got, wantLines := strings.Split(b.String(), "\n"), strings.Split(string(want), "\n")
	if len(got) != len(wantLines) {
		t.Fatalf("%d answers, want %d", len(got), len(wantLines))
	}
	for i := range got {
		if got[i] != wantLines[i] {
			t.Errorf("answer %d changed:\n got %s\nwant %s", i, got[i], wantLines[i])
		}
	}
}

// goldenOptions prints the topic-config fields of a partition's Options.
func goldenOptions(c TopicConfig) string {
	o := c.logOptions()
	return fmt.Sprintf("%d %d %d %v %v %d %v", o.SegmentBytes, o.MaxBatchBytes, o.MaxIndexBytes, o.Compression, o.Sync, o.SyncBytes, o.SyncInterval)
}

var goldenValues = []string{"", "x", "1.5", "-2", "-1", "0", "1", "23", "24", "60", "61", "62", "100", "2147483635", "2147483636", "2147483647", "2147483648",
	"9223372036854775806", "9223372036854775807", "9223372036854775808", "0.5", "NaN", "1.01", "-0.1", "1e0",
	"delete", "compact", "compact,delete", "delete,compact", " compact , delete ", "compact,", "producer", "uncompressed", "GZIP", "zstd", "lz4", "snappy", "none", "brotli"}

var goldenSets = [][]string{
	{"segment.bytes=1000", "max.message.bytes=988"},
	{"segment.bytes=1000", "max.message.bytes=989"},
	{"min.compaction.lag.ms=10", "max.compaction.lag.ms=5"},
	{"cleanup.policy=compact", "retention.ms=-1"},
	{"retention.ms"},
	{" retention.ms = 5 "},
	{"flush.messages=1", "flush.ms=100"},
	{"flush.ms=100"},
}

// TestDefaultTopicConfig: the defaults parsed from the table are the
// values DefaultTopicConfig returned before it, built from the cleaner's
// and the Log's defaults; each prints as its ConfigInfo.Default.
func TestDefaultTopicConfig(t *testing.T) {
	p := cleaner.DefaultPolicy()
	want := TopicConfig{
		CleanupPolicy:          p.CleanupPolicy,
		RetentionMs:            p.Retention.Milliseconds(),
		RetentionBytes:         p.RetentionBytes,
		SegmentBytes:           defaults.SegmentBytes,
		Compression:            record.None,
		MaxMessageBytes:        defaults.MaxBatchBytes,
		SegmentIndexBytes:      defaults.MaxIndexBytes,
		DeleteRetentionMs:      p.DeleteRetention.Milliseconds(),
		MinCleanableDirtyRatio: p.MinCleanableDirtyRatio,
		MinCompactionLagMs:     p.MinCompactionLag.Milliseconds(),
		MaxCompactionLagMs:     math.MaxInt64,
		MinInsyncReplicas:      1,
	}
	if got := DefaultTopicConfig(); got != want {
		t.Fatalf("DefaultTopicConfig() = %+v, want %+v", got, want)
	}
	for _, k := range Keys() {
		info, ok := KeyInfo(k)
		if !ok || info.Default != want.Get(k) {
			t.Errorf("%s: KeyInfo = %+v, %v; Get of the default is %q", k, info, ok, want.Get(k))
		}
	}
	if _, ok := KeyInfo("segment.ms"); ok {
		t.Error("KeyInfo knows segment.ms, which a TopicConfig does not carry")
	}
}

// TestConfigTableRoundTrip: each config parses what it prints (the topic
// file depends on it), and, marked as set, only its own bit.
func TestConfigTableRoundTrip(t *testing.T) {
	c := DefaultTopicConfig()
	if err := c.SetAll([]string{"cleanup.policy=compact,delete", "retention.ms=-1", "retention.bytes=5000", "segment.bytes=4096",
		"flush.messages=1", "flush.ms=250", "compression.type=zstd", "max.message.bytes=1000", "segment.index.bytes=48",
		"delete.retention.ms=7", "min.cleanable.dirty.ratio=0.125", "min.compaction.lag.ms=3", "max.compaction.lag.ms=9"}); err != nil {
		t.Fatal(err)
	}
	for _, k := range Keys() {
		again := DefaultTopicConfig()
		if err := again.Set(k, c.Get(k)); err != nil {
			t.Fatalf("%s: %s does not parse back: %v", k, c.Get(k), err)
		}
		if again.Get(k) != c.Get(k) || again.Overrides()[0] != k || len(again.Overrides()) != 1 {
			t.Errorf("%s: printed %q, parsed back %q, overrides %v", k, c.Get(k), again.Get(k), again.Overrides())
		}
	}
}

// unmappedLogConfig are the seglog.LogConfig fields no store topic config
// sets, with the Kafka config that would: a partition keeps seglog's
// default for them. SyncBytes has no Kafka config.
var unmappedLogConfig = map[string]string{
	"SegmentAge":         "segment.ms",
	"SegmentJitter":      "segment.jitter.ms",
	"IndexIntervalBytes": "index.interval.bytes",
	"Preallocate":        "preallocate",
	"TimestampType":      "message.timestamp.type",
	"SyncBytes":          "",
}

// producerChecks are the configs that set neither a LogConfig field nor
// the cleaner's policy: the server reads them as it takes a write.
var producerChecks = map[string]bool{"min.insync.replicas": true}

// TestConfigTableFields: each table entry sets either one seglog.LogConfig
// field or the cleaner's policy (or is one of producerChecks); every LogConfig field has exactly one
// entry or is listed as unmapped; and an entry's conversion changes its
// own field and no other (flush.ms also selects SyncPeriodic).
func TestConfigTableFields(t *testing.T) {
	typ := reflect.TypeOf(seglog.LogConfig{})
	claimed := map[string]string{}
	for _, d := range configTable {
		switch {
		case d.options != nil && d.policy == nil && d.field != "":
			if prev, dup := claimed[d.field]; dup {
				t.Errorf("LogConfig.%s is set by both %s and %s", d.field, prev, d.name)
			}
			claimed[d.field] = d.name
			if _, ok := typ.FieldByName(d.field); !ok {
				t.Errorf("%s: LogConfig has no field %s", d.name, d.field)
			}
		case d.options == nil && d.policy != nil && d.field == "":
		case d.options == nil && d.policy == nil && d.field == "" && producerChecks[d.name]:
		default:
			t.Errorf("%s: sets neither exactly one LogConfig field nor the policy", d.name)
		}
	}
	for _, f := range reflect.VisibleFields(typ) {
		_, c := claimed[f.Name]
		_, u := unmappedLogConfig[f.Name]
		if c == u {
			t.Errorf("LogConfig.%s: set by %q, listed as unmapped %v: want exactly one", f.Name, claimed[f.Name], u)
		}
	}
	nonDefault := map[string]string{"segment.bytes": "4096", "flush.messages": "1", "flush.ms": "250",
		"compression.type": "zstd", "max.message.bytes": "1000", "segment.index.bytes": "48"}
	base := reflect.ValueOf(DefaultTopicConfig().logOptions().LogConfig)
	for _, d := range configTable {
		if d.options == nil {
			continue
		}
		c := DefaultTopicConfig()
		if err := c.Set(d.name, nonDefault[d.name]); err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		got := reflect.ValueOf(c.logOptions().LogConfig)
		var changed []string
		for i := range got.NumField() {
			if got.Field(i).Interface() != base.Field(i).Interface() {
				changed = append(changed, typ.Field(i).Name)
			}
		}
		want := []string{d.field}
		if d.name == "flush.ms" {
			want = []string{"Sync", "SyncInterval"}
		}
		if !slices.Equal(changed, want) {
			t.Errorf("%s=%s changes LogConfig's %v, want %v", d.name, nonDefault[d.name], changed, want)
		}
	}
}
