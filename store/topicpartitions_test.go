package store

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TopicPartitions answers from the topic's config file alone, and writes
// nothing: a ready topic's count; a topic with no file, or one being
// created or deleted, is unknown; a bad name or file is refused.
func TestTopicPartitions(t *testing.T) {
	mem, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, mem, clock)
	mustf(t, s.CreateTopic("bookings", 7, smallConfig()), "create")
	mustf(t, s.Close(), "close")
	before := vfstest.Snapshot(t, mem, testDir)
	if n, err := TopicPartitions(mem, testDir, "bookings"); err != nil || n != 7 {
		t.Fatalf("TopicPartitions(bookings) = %d, %v; want 7", n, err)
	}
	if _, err := TopicPartitions(mem, testDir, "nope"); !errors.Is(err, ErrUnknownTopic) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a topic with no config file: %v", err)
	}
	if _, err := TopicPartitions(mem, testDir, "../x"); !errors.Is(err, ErrInvalidTopic) {
		t.Fatalf("a bad topic name: %v", err)
	}
	vfstest.Unchanged(t, "TopicPartitions", before, vfstest.Snapshot(t, mem, testDir))

	for _, state := range []string{stateCreating, stateDeleting} {
		f := topicFile{state: state, partitions: 2, config: DefaultTopicConfig()}
		vfstest.WriteFile(t, mem, testDir+"/half"+topicFileSuffix, f.format())
		if _, err := TopicPartitions(mem, testDir, "half"); !errors.Is(err, ErrUnknownTopic) {
			t.Fatalf("a topic in state %s: %v", state, err)
		}
	}
	vfstest.WriteFile(t, mem, testDir+"/bad"+topicFileSuffix, []byte("state=ready\npartitions=x\n"))
	if _, err := TopicPartitions(mem, testDir, "bad"); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("an unreadable config file: %v", err)
	}
}
