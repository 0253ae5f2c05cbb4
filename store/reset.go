package store

import (
	"errors"
	"fmt"
	"slices"

	"github.com/seglog/seglog"
)

// ResetKind selects how ResetOffsets moves a group, as
// kafka-consumer-groups.sh --reset-offsets does.
type ResetKind int

const (
	// ToEarliest moves to each partition's start (--to-earliest).
	ToEarliest ResetKind = iota
	// ToLatest moves to each partition's end (--to-latest).
	ToLatest
	// ToOffset moves to Reset.Offset, clamped to the partition
	// (--to-offset).
	ToOffset
	// ToTime moves to the first offset whose timestamp is at least
	// Reset.Time, or the end when there is none (--to-datetime).
	ToTime
	// ShiftBy moves the committed offset by Reset.Shift, clamped
	// (--shift-by); a partition with no commit shifts from its start.
	ShiftBy
)

// Reset is a reset request.
type Reset struct {
	Kind   ResetKind
	Offset int64 // ToOffset
	Time   int64 // ToTime, milliseconds since the epoch
	Shift  int64 // ShiftBy
}

// ResetOffsets moves a group's committed offsets on a topic's partitions
// (all of them when none are named) and returns the new offsets. Like
// Kafka's tool, it writes commits: the group reads from there next.
func (s *Store) ResetOffsets(group, topic string, r Reset, partitions ...int32) (map[int32]int64, error) {
	if s.readOnly {
		return nil, s.errReadOnly("reset offsets")
	}
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	n, err := s.Partitions(topic)
	if err != nil {
		return nil, err
	}
	if len(partitions) == 0 {
		for p := range n {
			partitions = append(partitions, int32(p))
		}
	}
	out := make(map[int32]int64)
	for _, p := range partitions {
		part, err := s.part(topic, p)
		if err != nil {
			return nil, err
		}
		pi, err := part.peek()
		if err != nil {
			return nil, err
		}
		start, end := pi.start, pi.end
		var off int64
		switch r.Kind {
		case ToEarliest:
			off = start
		case ToLatest:
			off = end
		case ToOffset:
			off = r.Offset
		case ToTime:
			var o int64
			err := part.with(func(l *seglog.Log) (err error) {
				o, err = l.OffsetForTime(r.Time)
				return err
			})
			switch {
			case errors.Is(err, seglog.ErrTimestampNotFound):
				off = end
			case err != nil:
				return nil, err
			default:
				off = o
			}
		case ShiftBy:
			c, ok := s.CommittedOffset(group, topic, p)
			base := start
			if ok {
				base = c.Offset
			}
			off = base + r.Shift
		default:
			return nil, fmt.Errorf("store: unknown reset kind %d", r.Kind)
		}
		out[p] = min(max(off, start), end)
	}
	if err := s.Commit(group, topic, out); err != nil {
		return nil, err
	}
	return out, nil
}

// AutoOffsetReset is Kafka's auto.offset.reset: where a group starts on a
// partition where it has no committed offset, or whose committed offset is
// out of range (below the start after retention, or past the end).
type AutoOffsetReset int

const (
	// Earliest starts at the partition's start (Kafka's "earliest").
	Earliest AutoOffsetReset = iota
	// Latest starts at the partition's end (Kafka's default, "latest").
	Latest
)

// Position is where a group reads a partition from.
type Position struct {
	Offset int64
	// Committed is false when the group had no commit here.
	Committed bool
	// Reset is true when auto.offset.reset chose Offset: no commit, or a
	// commit out of range.
	Reset bool
	// Skipped counts the records the group never read because retention
	// removed them: start minus the committed offset, when the commit
	// fell below the start. Kafka skips them silently; the store reports
	// them.
	Skipped int64
}

// Position returns where a group reads a partition from: its committed
// offset, or auto.offset.reset's choice when it has none or it is out of
// range. It changes nothing; Commit records progress.
func (s *Store) Position(group, topic string, partition int32, reset AutoOffsetReset) (Position, error) {
	part, err := s.part(topic, partition)
	if err != nil {
		return Position{}, err
	}
	pi, err := part.peek()
	if err != nil {
		return Position{}, err
	}
	start, end := pi.start, pi.end
	c, ok := s.CommittedOffset(group, topic, partition)
	// A negative commit is no offset: -1 is Kafka's "none", and kafkajs's
	// resetOffsets commits -2 for "earliest" (stored as given).
	ok = ok && c.Offset >= 0
	pos := Position{Offset: c.Offset, Committed: ok}
	if ok && c.Offset >= start && c.Offset <= end {
		return pos, nil
	}
	pos.Reset = true
	if ok && c.Offset < start {
		pos.Skipped = start - c.Offset
	}
	if reset == Earliest {
		pos.Offset = start
	} else {
		pos.Offset = end
	}
	if ok && c.Offset < start && reset == Latest {
		pos.Skipped = end - c.Offset
	}
	return pos, nil
}

// PartitionLag is one row of a group's description, as
// kafka-consumer-groups.sh --describe prints it.
type PartitionLag struct {
	Topic     string
	Partition int32
	Committed int64
	Start     int64
	End       int64
	// Lag is End minus Committed, counted from Start when retention
	// removed records below the commit; negative when the commit is past
	// the end (Kafka stores any commit), which PastEnd reports.
	Lag int64
	// Err is why the partition could not be read (its Log does not
	// open); Start, End and Lag are then zero and not in the total.
	Err error
}

// PastEnd reports a commit past the partition's end: Lag is negative.
func (r PartitionLag) PastEnd() bool { return r.Err == nil && r.Committed > r.End }

// DescribeGroup returns a group's committed offsets and lag per
// partition, sorted by topic and partition, and the total lag: the sum of
// the rows' positive lags (a commit past the end, a negative lag, does not
// cancel another partition's records to read). A partition that cannot be
// read has a row with its error.
func (s *Store) DescribeGroup(group string) ([]PartitionLag, int64, error) {
	s.groups.mu.Lock()
	m, ok := s.groups.m[group]
	var keys []tp
	for k := range m {
		keys = append(keys, k)
	}
	commits := make([]Committed, len(keys))
	for i, k := range keys {
		commits[i] = m[k]
	}
	s.groups.mu.Unlock()
	if !ok {
		return nil, 0, fmt.Errorf("%w: %q", ErrUnknownGroup, group)
	}
	var rows []PartitionLag
	var total int64
	for i, k := range keys {
		part, err := s.part(k.topic, k.part)
		if err != nil {
			continue // a topic deleted since; its tombstones are written
		}
		pi, err := part.peek()
		if errors.Is(err, ErrUnknownTopic) {
			continue // deleted between the lookup and the look
		} else if err != nil {
			// One partition that does not open is reported, not the
			// whole group.
			rows = append(rows, PartitionLag{Topic: k.topic, Partition: k.part, Committed: commits[i].Offset, Err: err})
			continue
		}
		row := PartitionLag{Topic: k.topic, Partition: k.part, Committed: commits[i].Offset, Start: pi.start, End: pi.end}
		row.Lag = lag(row.Start, row.End, row.Committed)
		total += max(row.Lag, 0)
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b PartitionLag) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return rows, total, nil
}
