package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/vfs"
)

// TestSetTopicConfig alters a live topic's config: the file records the
// values and which were set, a lowered retention.ms is applied by the
// next retention round, a lowered segment.bytes by the next roll, and a
// reopened store has the same config with the same sources.
func TestSetTopicConfig(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	cfg := smallConfig().Inherited()
	mustf(t, cfg.Set("compression.type", "gzip"), "set")
	mustf(t, s.CreateTopic("t", 1, cfg), "create")
	for i := range 40 {
		_, err := s.ProduceTo("t", 0, kv("k", strings.Repeat("v", 200+i)))
		mustf(t, err, "produce")
	}
	info, err := s.DescribeTopic("t")
	mustf(t, err, "describe")
	if got := info.Config.Source("compression.type"); got != SourceTopic {
		t.Errorf("compression.type set at creation: source %v", got)
	}
	if got := info.Config.Source("segment.bytes"); got != SourceBroker {
		t.Errorf("segment.bytes inherited, not Kafka's default: source %v", got)
	}
	if got := info.Config.Source("retention.bytes"); got != SourceDefault {
		t.Errorf("retention.bytes: source %v", got)
	}
	before := info.Partitions[0]

	clock.Advance(time.Hour)
	next := info.Config
	mustf(t, next.Set("retention.ms", "60000"), "set retention")
	mustf(t, next.Set("segment.bytes", "100000"), "set segment.bytes")
	mustf(t, s.SetTopicConfig("t", next), "alter")
	mustf(t, s.CleanOnce(context.Background()), "retention")
	info, err = s.DescribeTopic("t")
	mustf(t, err, "describe")
	after := info.Partitions[0]
	// Retention deletes every sealed segment and keeps the active one.
	if after.StartOffset <= before.StartOffset || after.Segments != 1 {
		t.Errorf("a lowered retention.ms was not applied: %+v, before %+v", after, before)
	}
	for range 20 {
		_, err := s.ProduceTo("t", 0, kv("k", strings.Repeat("w", 1000)))
		mustf(t, err, "produce")
	}
	info, err = s.DescribeTopic("t")
	mustf(t, err, "describe")
	if n := info.Partitions[0].Segments; n > 2 {
		t.Errorf("%d segments after 20 KB under segment.bytes=100000: the old 2 KB still rolls", n)
	}

	bad := next
	bad.MinCompactionLagMs, bad.MaxCompactionLagMs = 10, 5
	if err := s.SetTopicConfig("t", bad); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("invalid config: %v", err)
	}
	if err := s.SetTopicConfig("nope", next); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("unknown topic: %v", err)
	}
	if err := s.SetTopicConfig(OffsetsTopic, offsetsTopicConfig()); !errors.Is(err, ErrInternalTopic) {
		t.Errorf("offsets topic: %v", err)
	}
	mustf(t, s.Close(), "close")

	s = openStore(t, fs, clock)
	defer s.Close()
	info, err = s.DescribeTopic("t")
	mustf(t, err, "describe after reopen")
	if info.Config != next {
		t.Errorf("after reopen: %+v, want %+v", info.Config, next)
	}
	for k, want := range map[string]ConfigSource{"retention.ms": SourceTopic, "compression.type": SourceTopic, "segment.index.bytes": SourceBroker, "cleanup.policy": SourceDefault} {
		if got := info.Config.Source(k); got != want {
			t.Errorf("after reopen, %s: source %v, want %v", k, got, want)
		}
	}
}

// TestTopicFileWithoutOverrides reads a config file written before seglog
// recorded which configs were set: those differing from Kafka's defaults
// are taken as set on the topic.
func TestTopicFileWithoutOverrides(t *testing.T) {
	f, err := parseTopicFile("x", []byte("state=ready\npartitions=1\nretention.ms=1000\nretention.bytes=-1\n"))
	mustf(t, err, "parse")
	if !f.config.IsSet("retention.ms") || f.config.IsSet("retention.bytes") || len(f.config.Overrides()) != 1 {
		t.Errorf("overrides %v", f.config.Overrides())
	}
	var c TopicConfig = DefaultTopicConfig()
	mustf(t, c.Set("retention.ms", "5"), "set")
	mustf(t, c.Unset("retention.ms", DefaultTopicConfig()), "unset")
	if c != DefaultTopicConfig() {
		t.Errorf("Unset did not restore the default: %+v", c)
	}
	if err := c.Unset("nope", DefaultTopicConfig()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Unset of an unknown key: %v", err)
	}
}

// TestSetTopicConfigWhileProducing alters a topic's limits while appends
// and a compaction-free retention round run (go test -race checks the
// Logs' limits and the partitions' configs are shared safely); every
// append lands.
func TestSetTopicConfigWhileProducing(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	defer s.Close()
	mustf(t, s.CreateTopic("t", 2, smallConfig()), "create")
	done := make(chan error)
	go func() {
		for i := range 200 {
			if _, err := s.ProduceTo("t", int32(i%2), kv("k", strings.Repeat("v", 100))); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := range 20 {
		cfg := smallConfig()
		mustf(t, cfg.Set("segment.bytes", strconv.Itoa(2048+i*100)), "set")
		mustf(t, cfg.Set("compression.type", []string{"none", "gzip"}[i%2]), "set")
		mustf(t, s.SetTopicConfig("t", cfg), "alter %d", i)
		mustf(t, s.CleanOnce(context.Background()), "retention")
	}
	mustf(t, <-done, "produce")
	var n int
	for p := range int32(2) {
		n += len(partitionRecords(t, s, "t", p, 0))
	}
	if n != 200 {
		t.Errorf("%d records, want 200", n)
	}
}

// TestTopicFileNewerConfig: a config added after stores were written
// (min.insync.replicas) is in a topic's file only when the topic sets it
// or it differs from the default, so a store that never used it opens
// with the builds before it; set, it is read back.
func TestTopicFileNewerConfig(t *testing.T) {
	f := topicFile{state: stateReady, partitions: 1, config: DefaultTopicConfig()}
	if text := string(f.format()); strings.Contains(text, "min.insync.replicas") || !strings.Contains(text, "max.compaction.lag.ms=") {
		t.Fatalf("a topic that does not set min.insync.replicas:\n%s", text)
	}
	for _, v := range []string{"1", "3"} {
		f.config = DefaultTopicConfig()
		mustf(t, f.config.Set("min.insync.replicas", v), "set")
		text := f.format()
		if !strings.Contains(string(text), "min.insync.replicas="+v+"\n") {
			t.Fatalf("set to %s:\n%s", v, text)
		}
		back, err := parseTopicFile("x", text)
		mustf(t, err, "parse")
		if back.config.Get("min.insync.replicas") != v || !back.config.IsSet("min.insync.replicas") {
			t.Errorf("set to %s, read back %q (set %v)", v, back.config.Get("min.insync.replicas"), back.config.IsSet("min.insync.replicas"))
		}
	}
}

// TestMaxMessageAboveSegmentBytes: segment.bytes=1048576, Kafka 4's
// smallest, with the default max.message.bytes (1048588 with the log
// overhead): the topic is created as on Kafka, and a batch larger than
// segment.bytes and within max.message.bytes is stored alone in a segment
// of its own, then read back after a reopen.
func TestMaxMessageAboveSegmentBytes(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	cfg := DefaultTopicConfig()
	mustf(t, cfg.Set("segment.bytes", "1048576"), "set")
	mustf(t, cfg.Set("segment.index.bytes", "4096"), "set")
	mustf(t, s.CreateTopic("t", 1, cfg), "create with segment.bytes below max.message.bytes")
	big := strings.Repeat("b", 1048510) // a batch of 1048583 bytes with its overhead
	for _, v := range []string{"small", big, "small"} {
		_, err := s.ProduceTo("t", 0, kv("k", v))
		mustf(t, err, "produce %d bytes", len(v))
	}
	mustf(t, s.Close(), "close")
	s = openStore(t, fs, clock)
	defer s.Close()
	info, err := s.DescribeTopic("t")
	mustf(t, err, "describe")
	if p := info.Partitions[0]; p.EndOffset != 3 || p.Segments != 3 {
		t.Errorf("end %d in %d segments, want 3 records in 3 (the large one alone)", p.EndOffset, p.Segments)
	}
	recs := partitionRecords(t, s, "t", 0, 0)
	if len(recs) != 3 || string(recs[1].Value) != big {
		t.Fatalf("read back %d records", len(recs))
	}
}

// TestMaxMessageBytesIsTheWholeBatch: max.message.bytes bounds a batch's
// whole size, its 12-byte log overhead included, as Kafka's check does;
// the largest batch stored under max.message.bytes=1000 is within it
// (seglog used to add the 12 bytes, storing batches up to 1012).
func TestMaxMessageBytesIsTheWholeBatch(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	defer s.Close()
	cfg := DefaultTopicConfig()
	mustf(t, cfg.Set("max.message.bytes", "1000"), "set")
	mustf(t, s.CreateTopic("t", 1, cfg), "create")
	largest := int64(0)
	for n := 900; n < 1000; n++ {
		before := partitionSize(t, s)
		if _, err := s.ProduceTo("t", 0, kv("k", strings.Repeat("v", n))); err != nil {
			if !errors.Is(err, seglog.ErrBatchTooLarge) {
				t.Fatalf("value of %d bytes: %v", n, err)
			}
			break
		}
		largest = partitionSize(t, s) - before
	}
	if largest > 1000 || largest < 990 {
		t.Fatalf("the largest batch stored is %d bytes under max.message.bytes=1000", largest)
	}
}

func partitionSize(t *testing.T, s *Store) int64 {
	t.Helper()
	info, err := s.DescribeTopic("t")
	mustf(t, err, "describe")
	return info.Partitions[0].Size
}

// TestTopicFileV1MaxMessageBytes: a topic file written before
// max.message.bytes meant the whole batch (v1) keeps exactly the limit it
// had: 12 bytes are added to its value; a v2 file is read as written.
func TestTopicFileV1MaxMessageBytes(t *testing.T) {
	for _, c := range []struct {
		file   string
		want   int
		source ConfigSource
	}{
		{"# seglog topic config v1\nstate=ready\npartitions=1\nmax.message.bytes=1048576\noverrides=\n", 1048588, SourceDefault},
		{"# seglog topic config v1\nstate=ready\npartitions=1\nmax.message.bytes=5000\noverrides=max.message.bytes\n", 5012, SourceTopic},
		{"# seglog topic config v1\nstate=ready\npartitions=1\noverrides=\n", 1048588, SourceDefault},
		{"# seglog topic config v2\nstate=ready\npartitions=1\nmax.message.bytes=5000\noverrides=max.message.bytes\n", 5000, SourceTopic},
	} {
		f, err := parseTopicFile("x", []byte(c.file))
		mustf(t, err, "parse %q", c.file)
		if f.config.MaxMessageBytes != c.want || f.config.Source("max.message.bytes") != c.source {
			t.Errorf("%q: max.message.bytes %d from %v, want %d from %v", c.file, f.config.MaxMessageBytes, f.config.Source("max.message.bytes"), c.want, c.source)
		}
		again, err := parseTopicFile("x", f.format())
		mustf(t, err, "parse the file rewritten")
		if again.config != f.config {
			t.Errorf("%q rewritten and read back: %+v, was %+v", c.file, again.config, f.config)
		}
	}
}
