package store

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// fakeClock is the shared fake clock, but its After never fires: tests run
// retention with CleanOnce, so no background pass races them.
type fakeClock struct{ *testutil.Clock }

func newFakeClock() *fakeClock {
	return &fakeClock{testutil.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))}
}

func (c *fakeClock) After(time.Duration) <-chan time.Time { return make(chan time.Time) }

const testDir = "/data"

// testMaxOpenLogs is a budget of open Logs small enough that every test
// closes and reopens partitions as it goes.
const testMaxOpenLogs = 3

// quiet drops the recovery warnings that crash tests provoke on purpose.
var quiet = slog.New(slog.DiscardHandler)

func openStore(t testing.TB, fs vfs.FS, clock *fakeClock) *Store {
	t.Helper()
	s, err := Open(testDir, Options{FS: fs, OffsetsPartitions: 5, Clock: clock, Logger: quiet, OffsetsConfig: &offsetsCfg, MaxOpenLogs: testMaxOpenLogs})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// offsetsCfg keeps the offsets topic's indexes small: every test opens
// it, and the in-memory FS zeroes whole preallocated indexes.
var offsetsCfg = func() TopicConfig {
	c := offsetsTopicConfig()
	c.SegmentIndexBytes = 4096
	return c
}()

// smallConfig rolls segments every few records, so retention has
// something to delete.
func smallConfig() TopicConfig {
	c := DefaultTopicConfig()
	c.SegmentBytes = 2 << 10
	c.MaxMessageBytes = 1 << 10
	c.SegmentIndexBytes = 4096
	return c
}

func kv(key, value string) record.Record {
	var k []byte
	if key != "" {
		k = []byte(key)
	}
	return record.Record{Key: k, Value: []byte(value)}
}

// partitionRecords returns a partition's records from offset from.
func partitionRecords(t testing.TB, s *Store, topic string, p int32, from int64) []record.Record {
	t.Helper()
	l, err := s.Log(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	return testutil.ReadRecords(t, l, from)
}

func mustf(t testing.TB, err error, format string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}
