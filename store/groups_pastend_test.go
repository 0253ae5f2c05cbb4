package store

import (
	"testing"

	"github.com/seglog/seglog/vfs"
)

// Any offset is committed as Kafka commits it, past the end too and below
// zero (kafkajs's resetOffsets commits -2); it survives a reopen, Position
// treats a commit past the end as out of range and a negative one as no
// commit, and DescribeGroup shows a negative lag it does not total.
func TestCommitPastEndAndMinusOne(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	mustf(t, s.CreateTopic("t", 2, smallConfig()), "create")
	_, err := s.ProduceTo("t", 0, kv("a", "1"), kv("b", "2"))
	mustf(t, err, "produce")
	mustf(t, s.Commit("g", "t", map[int32]int64{0: 7, 1: -1}), "commit")
	mustf(t, s.Commit("h", "t", map[int32]int64{0: -2}), "commit -2")
	mustf(t, s.Close(), "close")

	s = openStore(t, fs, clock)
	defer s.Close()
	if c, ok := s.CommittedOffset("g", "t", 0); !ok || c.Offset != 7 {
		t.Errorf("partition 0 after reopen: %+v %v, want 7", c, ok)
	}
	if c, ok := s.CommittedOffset("g", "t", 1); !ok || c.Offset != -1 {
		t.Errorf("partition 1 after reopen: %+v %v, want -1", c, ok)
	}
	if c, ok := s.CommittedOffset("h", "t", 0); !ok || c.Offset != -2 {
		t.Errorf("-2 after reopen: %+v %v", c, ok)
	}
	pos, err := s.Position("h", "t", 0, Earliest)
	mustf(t, err, "position of -2")
	if pos != (Position{Offset: 0, Reset: true}) {
		t.Errorf("position of -2: %+v", pos)
	}
	pos, err = s.Position("g", "t", 0, Earliest)
	mustf(t, err, "position 0")
	if pos != (Position{Offset: 0, Committed: true, Reset: true}) {
		t.Errorf("position past the end: %+v", pos)
	}
	pos, err = s.Position("g", "t", 1, Latest)
	mustf(t, err, "position 1")
	if pos != (Position{Offset: 0, Reset: true}) {
		t.Errorf("position of -1: %+v", pos)
	}
	rows, total, err := s.DescribeGroup("g")
	mustf(t, err, "describe")
	if len(rows) != 2 || rows[0].Lag != -5 || !rows[0].PastEnd() || rows[1].Lag != 0 || rows[1].PastEnd() || total != 0 {
		t.Errorf("describe: %+v total %d", rows, total)
	}
	info, err := s.DescribeTopic("t")
	mustf(t, err, "describe topic")
	if l := info.Partitions[0].Lag["g"]; l != -5 {
		t.Errorf("topic describe lag %d, want -5", l)
	}
}
