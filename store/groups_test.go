package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consume reads every partition of topic from the group's position to the
// end, commits, and returns the records per partition.
func consume(t testing.TB, s *Store, group, topic string, reset AutoOffsetReset) (map[int32][]record.Record, int64) {
	t.Helper()
	n, err := s.Partitions(topic)
	mustf(t, err, "partitions")
	out := make(map[int32][]record.Record)
	var skipped int64
	commit := make(map[int32]int64)
	for p := range int32(n) {
		pos, err := s.Position(group, topic, p, reset)
		mustf(t, err, "position")
		skipped += pos.Skipped
		recs := partitionRecords(t, s, topic, p, pos.Offset)
		out[p] = recs
		next := pos.Offset
		if len(recs) > 0 {
			next = recs[len(recs)-1].Offset + 1
		}
		commit[p] = next
	}
	mustf(t, s.Commit(group, topic, commit), "commit")
	return out, skipped
}

// The Kafka lesson's scenario: bookings keyed by id over 12 partitions,
// three events each, two groups, a rewind by time, 7-day retention and a
// group stopped past the window.
func TestBookingsLesson(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	defer func() { s.Close() }()
	cfg := DefaultTopicConfig()
	cfg.SegmentBytes = 16 << 10
	cfg.MaxMessageBytes = 8 << 10
	cfg.SegmentIndexBytes = 4096
	mustf(t, s.CreateTopic("bookings", 12, cfg), "create")

	events := []string{"BookingCreated", "PaymentCaptured", "TicketIssued"}
	const perDay = 400
	day := 0
	produceDay := func() {
		for i := range perDay {
			id := fmt.Sprintf("booking-%d-%d", day, i)
			for _, e := range events {
				_, err := s.Produce("bookings", kv(id, e))
				mustf(t, err, "produce")
			}
		}
		day++
		clock.Advance(24 * time.Hour)
	}
	for range 5 {
		produceDay()
	}
	// Every booking's events are in order in one partition, the one
	// Kafka's partitioner picks.
	seen := make(map[string]int)
	for p := range int32(12) {
		for _, r := range partitionRecords(t, s, "bookings", p, 0) {
			id := string(r.Key)
			if PartitionForKey(r.Key, 12) != p {
				t.Fatalf("%s in partition %d", id, p)
			}
			if want := events[seen[id]]; string(r.Value) != want {
				t.Fatalf("%s: %s after %d events, want %s", id, r.Value, seen[id], want)
			}
			seen[id]++
		}
	}
	if len(seen) != 5*perDay {
		t.Fatalf("%d bookings, want %d", len(seen), 5*perDay)
	}

	// Two groups read independently.
	billing, _ := consume(t, s, "billing", "bookings", Earliest)
	email, _ := consume(t, s, "email", "bookings", Earliest)
	if count(billing) != 5*perDay*3 || count(email) != 5*perDay*3 {
		t.Fatalf("billing read %d, email %d", count(billing), count(email))
	}
	produceDay()
	_, lagEmail, _ := s.DescribeGroup("email")
	if lagEmail != perDay*3 {
		t.Errorf("email lag %d, want %d", lagEmail, perDay*3)
	}
	more, _ := consume(t, s, "billing", "bookings", Earliest)
	if count(more) != perDay*3 {
		t.Errorf("billing read %d new records, want %d", count(more), perDay*3)
	}
	if _, lag, _ := s.DescribeGroup("billing"); lag != 0 {
		t.Errorf("billing lag %d after catching up", lag)
	}
	if _, lag, _ := s.DescribeGroup("email"); lag != perDay*3 {
		t.Errorf("email lag moved with billing: %d", lag)
	}

	// Billing rewinds two days by time and re-reads exactly the same
	// records it read then.
	since := clock.Now().Add(-48 * time.Hour).UnixMilli()
	_, err := s.ResetOffsets("billing", "bookings", Reset{Kind: ToTime, Time: since})
	mustf(t, err, "reset")
	again, _ := consume(t, s, "billing", "bookings", Earliest)
	var want []string
	for p := range int32(12) {
		for _, r := range partitionRecords(t, s, "bookings", p, 0) {
			if r.Timestamp >= since {
				want = append(want, fmt.Sprintf("%d/%d/%s", p, r.Offset, r.Key))
			}
		}
	}
	var got []string
	for p := range int32(12) {
		for _, r := range again[p] {
			got = append(got, fmt.Sprintf("%d/%d/%s", p, r.Offset, r.Key))
		}
	}
	if len(got) != 2*perDay*3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rewind re-read %d records, want %d (the last two days)", len(got), 2*perDay*3)
	}

	// Email stops; ten more days pass; retention of 7 days trims every
	// partition whether or not anyone read it.
	for range 10 {
		produceDay()
		mustf(t, s.CleanOnce(context.Background()), "retention")
	}
	info, err := s.DescribeTopic("bookings")
	mustf(t, err, "describe")
	for _, p := range info.Partitions {
		if p.StartOffset == 0 {
			t.Errorf("partition %d untrimmed", p.Partition)
		}
		if p.Lag["email"] != p.EndOffset-p.StartOffset {
			t.Errorf("partition %d: email lag %d, want end-start %d", p.Partition, p.Lag["email"], p.EndOffset-p.StartOffset)
		}
	}
	var trimmed int64
	for p := range int32(12) {
		c, _ := s.CommittedOffset("email", "bookings", p)
		info := info.Partitions[p]
		trimmed += info.StartOffset - c.Offset
	}
	_, skipped := consume(t, s, "email", "bookings", Earliest)
	if skipped != trimmed || skipped == 0 {
		t.Errorf("email skipped %d records, want %d (trimmed past its commit)", skipped, trimmed)
	}

	// Everything survives a restart: commits are rebuilt from the
	// offsets topic.
	rows, lag, err := s.DescribeGroup("billing")
	mustf(t, err, "describe")
	mustf(t, s.Close(), "close")
	s = openStore(t, fs, clock)
	rows2, lag2, err := s.DescribeGroup("billing")
	mustf(t, err, "describe after reopen")
	if fmt.Sprint(rows) != fmt.Sprint(rows2) || lag != lag2 {
		t.Errorf("after reopen: %v %d, want %v %d", rows2, lag2, rows, lag)
	}
}

func count(m map[int32][]record.Record) int {
	n := 0
	for _, rs := range m {
		n += len(rs)
	}
	return n
}

// The offsets topic holds Kafka's records: kmsg decodes them.
func TestOffsetsTopicIsKafkas(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	defer s.Close()
	mustf(t, s.CreateTopic("t", 3, smallConfig()), "create")
	for p := range int32(3) {
		_, err := s.ProduceTo("t", p, kv("a", "1"))
		mustf(t, err, "produce")
	}
	mustf(t, s.Commit("my-group", "t", map[int32]int64{0: 1, 2: 0}), "commit")
	mustf(t, s.DeleteGroup("my-group"), "delete group")
	if err := s.DeleteGroup("my-group"); !errors.Is(err, ErrUnknownGroup) {
		t.Errorf("second delete: %v", err)
	}
	l, err := s.Log(OffsetsTopic, OffsetsPartitionFor("my-group", 5))
	mustf(t, err, "offsets log")
	var lines []string
	for r, err := range l.Records(0) {
		mustf(t, err, "read")
		var k kmsg.OffsetCommitKey
		mustf(t, k.ReadFrom(r.Key), "key")
		line := fmt.Sprintf("v%d %s %s-%d", k.Version, k.Group, k.Topic, k.Partition)
		if r.Value != nil {
			var v kmsg.OffsetCommitValue
			mustf(t, v.ReadFrom(r.Value), "value")
			line += fmt.Sprintf(" v%d offset=%d epoch=%d ts=%d", v.Version, v.Offset, v.LeaderEpoch, v.CommitTimestamp)
		} else {
			line += " tombstone"
		}
		lines = append(lines, line)
	}
	ts := clock.Now().UnixMilli()
	want := []string{
		fmt.Sprintf("v1 my-group t-0 v3 offset=1 epoch=-1 ts=%d", ts),
		fmt.Sprintf("v1 my-group t-2 v3 offset=0 epoch=-1 ts=%d", ts),
	}
	if len(lines) != 4 || fmt.Sprint(lines[:2]) != fmt.Sprint(want) {
		t.Errorf("offsets records:\n%q\nwant first\n%q", lines, want)
	}
	for _, l := range lines[2:] {
		if l[len(l)-9:] != "tombstone" {
			t.Errorf("delete wrote %q", l)
		}
	}
}

// TestCommitLongestGroup: a group id of the most bytes a Kafka string
// holds is committed and found again after a reopen; one byte more is
// refused (TestCommitRefusals), where its key's length used to wrap and
// the offsets topic not replay.
func TestCommitLongestGroup(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	mustf(t, s.CreateTopic("t", 1, smallConfig()), "create")
	_, err := s.Produce("t", kv("a", "1"))
	mustf(t, err, "produce")
	g := strings.Repeat("\xff", math.MaxInt16)
	mustf(t, s.Commit(g, "t", map[int32]int64{0: 1}), "commit")
	mustf(t, s.Close(), "close")
	s = openStore(t, fs, clock)
	defer s.Close()
	if c, ok := s.CommittedOffset(g, "t", 0); !ok || c.Offset != 1 {
		t.Fatalf("after reopen: %+v, %v; want offset 1", c, ok)
	}
}

func TestCommitRefusals(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, fs, clock)
	defer s.Close()
	mustf(t, s.CreateTopic("t", 2, smallConfig()), "create")
	_, err := s.Produce("t", kv("a", "1"))
	mustf(t, err, "produce")
	p := PartitionForKey([]byte("a"), 2)
	for _, c := range []struct {
		group, topic string
		offs         map[int32]int64
		want         error
	}{
		{"", "t", map[int32]int64{0: 0}, ErrInvalidGroup},
		{strings.Repeat("g", math.MaxInt16+1), "t", map[int32]int64{0: 0}, ErrInvalidGroup},
		{"g", "nope", map[int32]int64{0: 0}, ErrUnknownTopic},
		{"g", "t", map[int32]int64{5: 0}, ErrUnknownPartition},
		{"g", OffsetsTopic, map[int32]int64{0: 0}, ErrInternalTopic},
	} {
		err := s.Commit(c.group, c.topic, c.offs)
		if !errors.Is(err, c.want) {
			t.Errorf("Commit(%q, %q, %v) = %v, want %v", c.group, c.topic, c.offs, err, c.want)
		}
	}
	if gs := s.Groups(); len(gs) != 0 {
		t.Errorf("refused commits created groups %v", gs)
	}
	// Resets clamp to the partition.
	got, err := s.ResetOffsets("g", "t", Reset{Kind: ToOffset, Offset: 99})
	mustf(t, err, "reset")
	if got[p] != 1 || got[1-p] != 0 {
		t.Errorf("reset to 99 gave %v", got)
	}
	got, err = s.ResetOffsets("g", "t", Reset{Kind: ShiftBy, Shift: -5})
	mustf(t, err, "shift")
	if got[p] != 0 {
		t.Errorf("shift by -5 gave %v", got)
	}
	got, err = s.ResetOffsets("g", "t", Reset{Kind: ToLatest}, p)
	mustf(t, err, "latest")
	if len(got) != 1 || got[p] != 1 {
		t.Errorf("latest gave %v", got)
	}
}
