package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/vfs"
)

// Compact runs a round on a compacted topic whose dirty ratio calls for
// none (Clean compacts nothing there), under the topic's own config;
// unnamed it passes the topics that do not compact, named such a topic
// is ErrNotCompacting, and nothing of that topic changes.
func TestCompactNowWhateverTheDirtyRatio(t *testing.T) {
	fsys := vfs.NewMem()
	clock := newFakeClock()
	s := openStore(t, fsys, clock)
	comp := smallConfig()
	comp.CleanupPolicy = cleaner.Compact
	comp.MinCleanableDirtyRatio = 0.99 // no round for the background rules
	mustf(t, s.CreateTopic("comp", 1, comp), "create comp")
	mustf(t, s.CreateTopic("del", 1, smallConfig()), "create del")
	big := strings.Repeat("x", 300)
	for i := range 40 {
		for _, topic := range []string{"comp", "del"} {
			_, err := s.ProduceTo(topic, 0, kv(fmt.Sprint("k", i%4), big))
			mustf(t, err, "produce %s", topic)
		}
	}
	ctx := context.Background()
	// Everything is dirty at first (no checkpoint): a round. Then some
	// dirt, under the ratio the topic asks for.
	_, err := s.Clean(ctx, "comp")
	mustf(t, err, "clean comp")
	for i := range 20 {
		_, err := s.ProduceTo("comp", 0, kv(fmt.Sprint("k", i%4), big))
		mustf(t, err, "produce comp")
	}
	clock.Advance(time.Hour)
	res, err := s.Clean(ctx, "comp")
	mustf(t, err, "clean comp")
	if len(res) != 1 || res[0].Compacted != nil || res[0].Err != nil {
		t.Fatalf("Clean at a dirty ratio under min.cleanable.dirty.ratio 0.99: %+v, want no round", res)
	}
	delBefore, err := s.DescribeTopic("del")
	mustf(t, err, "describe del")

	res, err = s.Compact(ctx)
	mustf(t, err, "compact all")
	var compacted *PartitionCleaned
	for i, r := range res {
		switch {
		case r.Err != nil || r.Compacted == nil:
			t.Fatalf("Compact of every compacting topic: %s-%d: %+v", r.Topic, r.Partition, r)
		case r.Topic == "comp":
			compacted = &res[i]
		case r.Topic != OffsetsTopic:
			t.Fatalf("Compact of every compacting topic compacted %s", r.Topic)
		}
	}
	if compacted == nil || compacted.Compacted.RecordsRemoved == 0 {
		t.Fatalf("Compact of every compacting topic: comp %+v, want its superseded records removed", compacted)
	}
	if _, err := s.Compact(ctx, "del"); !errors.Is(err, ErrNotCompacting) || !strings.Contains(err.Error(), "del has cleanup.policy=delete") {
		t.Fatalf("Compact of a delete topic: %v, want ErrNotCompacting naming it", err)
	}
	if _, err := s.Compact(ctx, "nope"); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("Compact of an unknown topic: %v", err)
	}
	delAfter, err := s.DescribeTopic("del")
	mustf(t, err, "describe del")
	if a, b := delAfter.Partitions[0], delBefore.Partitions[0]; a.Segments != b.Segments || a.StartOffset != b.StartOffset || a.EndOffset != b.EndOffset {
		t.Fatalf("del changed: %+v, was %+v", a, b)
	}
	mustf(t, s.Close(), "close")
}
