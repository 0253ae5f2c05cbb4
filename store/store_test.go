package store

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

func TestValidateTopic(t *testing.T) {
	good := []string{"a", "bookings", "a.b_c-D9", strings.Repeat("x", 249), "..."}
	for _, n := range good {
		if err := ValidateTopic(n); err != nil {
			t.Errorf("ValidateTopic(%q) = %v", n, err)
		}
	}
	bad := []string{"", ".", "..", strings.Repeat("x", 250), "a b", "a/b", "é", "a\x00", "t:1"}
	for _, n := range bad {
		if err := ValidateTopic(n); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("ValidateTopic(%q) = %v, want ErrInvalidTopic", n, err)
		}
	}
}

func TestLogDirLayout(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	if _, err := Open(testDir, Options{FS: fs}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	mustf(t, s.CreateTopic("bookings", 3, smallConfig()), "create")
	mustf(t, s.CreateTopic("a_b", 1, smallConfig()), "create a_b")
	for _, bad := range []struct {
		name string
		n    int
		want error
	}{
		{"bookings", 1, ErrTopicExists},
		{"a.b", 1, ErrInvalidTopic}, // collides with a_b, as Kafka says
		{"", 1, ErrInvalidTopic},
		{"x", 0, ErrInvalidPartitions},
		{"x", MaxPartitions + 1, ErrInvalidPartitions},
		{OffsetsTopic, 1, ErrInternalTopic},
	} {
		if err := s.CreateTopic(bad.name, bad.n, smallConfig()); !errors.Is(err, bad.want) {
			t.Errorf("CreateTopic(%q, %d) = %v, want %v", bad.name, bad.n, err, bad.want)
		}
	}
	for i := range 10 {
		_, err := s.Produce("bookings", kv("k"+string(rune('a'+i)), "v"))
		mustf(t, err, "produce")
	}
	mustf(t, s.Close(), "close")

	names, err := fs.List(testDir)
	mustf(t, err, "list")
	for _, want := range []string{"bookings-0", "bookings-1", "bookings-2", "__consumer_offsets-4",
		layout.RecoveryPointFile, layout.LogStartOffsetFile, layout.CleanerOffsetFile, layout.CleanShutdownFile, "bookings.seglog-topic"} {
		if !slices.Contains(names, want) {
			t.Errorf("log.dir lacks %s: %v", want, names)
		}
	}
	part, err := fs.List(filepath.Join(testDir, "bookings-0"))
	mustf(t, err, "list partition")
	for _, n := range part {
		if n == layout.RecoveryPointFile || n == layout.LogStartOffsetFile || n == layout.CleanShutdownFile {
			t.Errorf("partition directory has its own %s: the log.dir's speaks for it", n)
		}
	}
	entries, err := layout.ReadCheckpoint(fs, filepath.Join(testDir, layout.RecoveryPointFile))
	mustf(t, err, "read checkpoint")
	var sum int64
	lines := 0
	for _, e := range entries {
		if e.Topic == "bookings" {
			sum += e.Offset
			lines++
		}
	}
	if lines != 3 || sum != 10 {
		t.Errorf("recovery points of bookings: %d lines summing to %d, want 3 lines summing to 10: %v", lines, sum, entries)
	}

	s = openStore(t, fs, clock)
	defer s.Close()
	// Open writes nothing: the marker goes, durably, before the first
	// partition is opened writable (a crash after that must recover).
	if names, _ := fs.List(testDir); !slices.Contains(names, layout.CleanShutdownFile) {
		t.Error("Open removed the clean-shutdown marker: nothing was written yet")
	}
	_, err = s.ProduceTo("bookings", 0, kv("k", "v"))
	mustf(t, err, "produce")
	if names, _ := fs.CrashClone().List(testDir); slices.Contains(names, layout.CleanShutdownFile) {
		t.Error("the clean-shutdown marker survived an append: a crash now would skip recovery")
	}
	if got := s.Topics(); !slices.Equal(got, []string{"a_b", "bookings"}) {
		t.Errorf("Topics = %v", got)
	}
	info, err := s.DescribeTopic("bookings")
	mustf(t, err, "describe")
	var n int64
	for _, p := range info.Partitions {
		n += p.EndOffset - p.StartOffset
	}
	if n != 11 || info.Config.SegmentBytes != 2<<10 {
		t.Errorf("after reopen: %d records, segment.bytes %d", n, info.Config.SegmentBytes)
	}
}

func TestTopicConfigFile(t *testing.T) {
	c := DefaultTopicConfig()
	mustf(t, c.SetAll([]string{"retention.ms=3600000", "cleanup.policy=compact,delete", "flush.messages=1",
		"compression.type=zstd", "max.message.bytes=5000", "segment.bytes=100000", "retention.bytes=-1",
		"delete.retention.ms=1000", "min.cleanable.dirty.ratio=0.25", "min.compaction.lag.ms=5", "max.compaction.lag.ms=60000"}), "set")
	if p := c.policy(); p.DeleteRetention != time.Second || p.MinCleanableDirtyRatio != 0.25 || p.MinCompactionLag != 5*time.Millisecond || p.MaxCompactionLag != time.Minute {
		t.Errorf("compaction policy %+v", p)
	}
	f := topicFile{state: stateReady, partitions: 7, config: c}
	got, err := parseTopicFile("x", f.format())
	mustf(t, err, "parse")
	if got != f {
		t.Errorf("round trip: %+v, want %+v\n%s", got, f, f.format())
	}
	for _, bad := range [][]string{{"retention.ms=abc"}, {"nope=1"}, {"cleanup.policy=keep"}, {"flush.messages=7"},
		{"compression.type=brotli"}, {"segment.bytes=1"}, {"min.compaction.lag.ms=10", "max.compaction.lag.ms=5"}, {"novalue"},
		{"min.cleanable.dirty.ratio=1.5"}, {"delete.retention.ms=-1"}, {"max.compaction.lag.ms=0"},
		{"min.compaction.lag.ms=100", "max.compaction.lag.ms=10"}} {
		c := DefaultTopicConfig()
		if err := c.SetAll(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("SetAll(%q) = %v, want ErrInvalidConfig", bad, err)
		}
	}
	for _, bad := range []string{"state=ready\n", "partitions=3\n", "state=odd\npartitions=1\n", "state=ready\npartitions=0\n", "garbage\n"} {
		if _, err := parseTopicFile("x", []byte(bad)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("parse %q = %v", bad, err)
		}
	}
}

func TestDeleteAndAddPartitions(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	mustf(t, s.CreateTopic("t", 2, smallConfig()), "create")
	_, err := s.Produce("t", kv("a", "1"), kv("b", "2"))
	mustf(t, err, "produce")
	mustf(t, s.Commit("g", "t", map[int32]int64{0: 0, 1: 0}), "commit")
	mustf(t, s.AddPartitions("t", 4), "add")
	if err := s.AddPartitions("t", 3); !errors.Is(err, ErrInvalidPartitions) {
		t.Errorf("shrinking: %v", err)
	}
	if err := s.AddPartitions("nope", 3); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
	if n, _ := s.Partitions("t"); n != 4 {
		t.Fatalf("partitions = %d", n)
	}
	mustf(t, s.DeleteTopic("t"), "delete")
	if err := s.DeleteTopic("t"); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := s.Produce("t", kv("a", "1")); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("produce to deleted: %v", err)
	}
	if gs := s.Groups(); len(gs) != 0 {
		t.Errorf("groups of a deleted topic remain: %v", gs)
	}
	mustf(t, s.Close(), "close")
	names, _ := fs.List(testDir)
	for _, n := range names {
		if strings.HasPrefix(n, "t-") || strings.HasPrefix(n, "t.") {
			t.Errorf("left behind: %s", n)
		}
	}
	entries, _ := layout.ReadCheckpoint(fs, filepath.Join(testDir, layout.RecoveryPointFile))
	for _, e := range entries {
		if e.Topic == "t" {
			t.Errorf("checkpoint line of a deleted topic: %v", e)
		}
	}
	// The topic can be created again, empty.
	s = openStore(t, fs, clock)
	defer s.Close()
	mustf(t, s.CreateTopic("t", 1, smallConfig()), "recreate")
	if info, _ := s.DescribeTopic("t"); info.Partitions[0].EndOffset != 0 {
		t.Errorf("recreated topic holds %d records", info.Partitions[0].EndOffset)
	}
}

// TestCreateTopicRefusesUnreadableConfig: a config that its own file could
// not be read back from (a zero TopicConfig has segment.bytes 0) is
// refused at create, with nothing on disk, instead of making the next
// open of the whole store fail.
func TestCreateTopicRefusesUnreadableConfig(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	if err := s.CreateTopic("zero", 1, TopicConfig{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("CreateTopic with a zero config: %v, want ErrInvalidConfig", err)
	}
	c := DefaultTopicConfig()
	c.SegmentIndexBytes = 3
	if err := s.CreateTopic("tiny-index", 1, c); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("CreateTopic with segment.index.bytes 3: %v, want ErrInvalidConfig", err)
	}
	mustf(t, s.CreateTopic("ok", 1, DefaultTopicConfig()), "create with defaults")
	mustf(t, s.Close(), "close")
	s = openStore(t, fs, clock)
	defer s.Close()
	if got := s.Topics(); !slices.Equal(got, []string{"ok"}) {
		t.Fatalf("topics after reopen %q, want [ok]", got)
	}
}
