package store

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unicode/utf16"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Committed is a group's committed position on one partition: the offset
// of the next record it will read, as in Kafka.
type Committed struct {
	Offset int64
	// Timestamp is the commit time, in milliseconds since the epoch.
	Timestamp int64
}

// groupTable is the committed offsets, rebuilt from __consumer_offsets on
// Open. mu also serializes writes to the offsets topic, so that the table
// and the topic agree on the order of commits.
type groupTable struct {
	mu sync.Mutex
	m  map[string]map[tp]Committed
	// next is, per offsets partition, the offset after the last record
	// replayed: a read-only store's Refresh replays from there.
	next []int64
}

func (g *groupTable) init() { g.m = make(map[string]map[tp]Committed) }

// OffsetsPartitionFor is Kafka's GroupMetadataManager.partitionFor:
// Utils.abs(groupId.hashCode()) % partitions, with Java's String.hashCode
// over UTF-16 code units.
func OffsetsPartitionFor(group string, partitions int) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0 // Utils.abs(Integer.MIN_VALUE) is 0
	} else if h < 0 {
		h = -h
	}
	return h % int32(partitions)
}

// encodeCommit is a commit as Kafka's __consumer_offsets record: key
// OffsetCommitKey v1, value OffsetCommitValue v3; a nil value is a
// tombstone.
func encodeCommit(group string, k tp, c *Committed) record.Record {
	key := kmsg.NewOffsetCommitKey()
	key.Version = 1
	key.Group, key.Topic, key.Partition = group, k.topic, k.part
	r := record.Record{Key: key.AppendTo(nil)}
	if c != nil {
		v := kmsg.NewOffsetCommitValue()
		v.Version = 3
		v.Offset = c.Offset
		v.LeaderEpoch = -1
		v.CommitTimestamp = c.Timestamp
		r.Value = v.AppendTo(nil)
		r.Timestamp = c.Timestamp
	}
	return r
}

// EncodeCommit is a group's commit on a partition as the record the
// store and Kafka write to __consumer_offsets (key OffsetCommitKey v1,
// value OffsetCommitValue v3); c nil is the tombstone that deletes it. A
// cluster's coordinator writes these through the replication.
func EncodeCommit(group, topic string, partition int32, c *Committed) record.Record {
	return encodeCommit(group, tp{topic, partition}, c)
}

// DecodeCommit reads a __consumer_offsets record as the store replays it:
// ok false for a record that is not an offset commit (group metadata, key
// version 2), c nil for a tombstone, an error for a commit key or value
// that does not decode.
func DecodeCommit(key, value []byte) (group, topic string, partition int32, c *Committed, ok bool, err error) {
	group, k, c, ok, err := decodeCommit(key, value)
	return group, k.topic, k.part, c, ok, err
}

// eachCommit calls f for every offset commit among the records of
// offsets log l from offset from on (c nil: a tombstone), skipping records
// of other kinds (group metadata, key version 2), and returns the offset
// after the last record read. A commit key or value that does not decode
// is an error (a *commitDecodeError).
func eachCommit(l *seglog.Log, from int64, f func(group string, k tp, c *Committed)) (next int64, err error) {
	next = from
	for r, err := range l.Records(from) {
		if err != nil {
			return next, fmt.Errorf("store: reading %s: %w", l.Dir(), err)
		}
		next = r.Offset + 1
		group, k, c, ok, err := decodeCommit(r.Key, r.Value)
		if err != nil {
			return next, &commitDecodeError{fmt.Errorf("store: %s offset %d: %w", l.Dir(), r.Offset, err)}
		}
		if ok {
			f(group, k, c)
		}
	}
	return next, nil
}

// commitDecodeError is a record of the offsets topic that does not decode
// as the commit its key says it is: the log holds it, whichever way the
// log is opened.
type commitDecodeError struct{ err error }

func (e *commitDecodeError) Error() string { return e.err.Error() }
func (e *commitDecodeError) Unwrap() error { return e.err }

// replayLocked applies the records of offsets partition p from where the
// last replay stopped.
func (g *groupTable) replayLocked(l *seglog.Log, p int) error {
	next, err := eachCommit(l, max(g.next[p], l.StartOffset()), func(group string, k tp, c *Committed) {
		if c == nil {
			g.deleteLocked(group, k)
		} else {
			g.setLocked(group, k, *c)
		}
	})
	g.next[p] = next
	return err
}

// decodeCommit reads a __consumer_offsets record as encodeCommit writes it
// and Kafka does: an OffsetCommitKey (version 0 or 1) and, unless the
// value is null (a tombstone, c nil), an OffsetCommitValue. A record of
// another kind (group metadata, key version 2) is not a commit: ok false.
// A commit key or value that does not decode is an error.
func decodeCommit(key, value []byte) (group string, k tp, c *Committed, ok bool, err error) {
	if len(key) < 2 || key[0] != 0 || key[1] > 1 {
		return "", tp{}, nil, false, nil
	}
	var kk kmsg.OffsetCommitKey
	if err := kk.ReadFrom(key); err != nil {
		return "", tp{}, nil, false, fmt.Errorf("bad offset-commit key: %w", err)
	}
	k = tp{kk.Topic, kk.Partition}
	if value == nil {
		return kk.Group, k, nil, true, nil
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(value); err != nil {
		return "", tp{}, nil, false, fmt.Errorf("bad offset-commit value: %w", err)
	}
	return kk.Group, k, &Committed{Offset: v.Offset, Timestamp: v.CommitTimestamp}, true, nil
}

func (g *groupTable) setLocked(group string, k tp, c Committed) {
	m := g.m[group]
	if m == nil {
		m = make(map[tp]Committed)
		g.m[group] = m
	}
	m[k] = c
}

func (g *groupTable) deleteLocked(group string, k tp) {
	delete(g.m[group], k)
	if len(g.m[group]) == 0 {
		delete(g.m, group)
	}
}

// committedFor returns every group's committed offset on a partition.
func (g *groupTable) committedFor(topic string, part int32) map[string]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int64)
	for name, m := range g.m {
		if c, ok := m[tp{topic, part}]; ok {
			out[name] = c.Offset
		}
	}
	return out
}

// writeLocked appends commits (nil: tombstones) for one group to its
// offsets partition and applies them to the table once durable. The
// offsets topic syncs every append (flush.messages=1), so a commit that
// returned survives a power loss; one that did not return may or may not.
func (s *Store) writeCommitsLocked(group string, keys []tp, vals []*Committed) error {
	if s.opts.ReplicatedOffsets {
		return fmt.Errorf("%w: group %q", ErrReplicatedOffsets, group)
	}
	ot := s.topics[OffsetsTopic]
	part := ot.parts[OffsetsPartitionFor(group, len(ot.parts))]
	recs := make([]record.Record, len(keys))
	for i, k := range keys {
		recs[i] = encodeCommit(group, k, vals[i])
	}
	err := part.with(func(l *seglog.Log) error {
		_, err := l.Append(recs...)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: writing offsets of group %q: %w", group, err)
	}
	for i, k := range keys {
		if vals[i] == nil {
			s.groups.deleteLocked(group, k)
		} else {
			s.groups.setLocked(group, k, *vals[i])
		}
	}
	return nil
}

// Commit records a group's committed offsets for partitions of a topic
// (partition → the next offset to read). Any offset is stored, as Kafka
// stores it, also one below the partition's start, past its end (Position
// and DescribeGroup show such a commit as out of range) or negative (no
// commit for Position: -1 is Kafka's "none", kafkajs commits -2). Before the commit is
// written, the data up to each committed offset (or the partition's end)
// is made durable, so that after a power loss no group has committed into
// data the partition lost.
func (s *Store) Commit(group, topic string, offsets map[int32]int64) error {
	if s.readOnly {
		return s.errReadOnly("commit offsets")
	}
	if s.opts.ReplicatedOffsets {
		return fmt.Errorf("%w: group %q", ErrReplicatedOffsets, group)
	}
	if err := checkGroup(group); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var keys []tp
	var vals []*Committed
	now := s.opts.Clock.Now().UnixMilli()
	parts := make([]int32, 0, len(offsets))
	for p := range offsets {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		off := offsets[p]
		part, err := s.partLocked(topic, p)
		if err != nil {
			return err
		}
		if topic == OffsetsTopic {
			return fmt.Errorf("%w: %s", ErrInternalTopic, topic)
		}
		if err := part.checkCommit(off); err != nil {
			return err
		}
		keys = append(keys, tp{topic, p})
		vals = append(vals, &Committed{Offset: off, Timestamp: now})
	}
	if len(keys) == 0 {
		return nil
	}
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	return s.writeCommitsLocked(group, keys, vals)
}

// checkGroup refuses a group id a commit record cannot carry: empty, or
// longer than the int16 length of a Kafka string (the key's length would
// wrap and the record not decode back).
func checkGroup(group string) error {
	if group == "" || len(group) > math.MaxInt16 {
		return fmt.Errorf("%w: %d bytes", ErrInvalidGroup, len(group))
	}
	return nil
}

// CommittedOffset returns a group's committed offset on a partition.
func (s *Store) CommittedOffset(group, topic string, partition int32) (Committed, bool) {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	c, ok := s.groups.m[group][tp{topic, partition}]
	return c, ok
}

// Groups lists the groups that have committed offsets, sorted.
func (s *Store) Groups() []string {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	out := make([]string, 0, len(s.groups.m))
	for g := range s.groups.m {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// DeleteGroup removes a group's committed offsets by writing tombstones.
func (s *Store) DeleteGroup(group string) error {
	if s.readOnly {
		return s.errReadOnly("delete a group")
	}
	return s.tombstoneCommits(group, func(m map[tp]Committed) []tp {
		keys := make([]tp, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		return keys
	})
}

// forgetTopicLocked tombstones every group's offsets for a deleted topic
// (s.mu held for writing).
func (s *Store) forgetTopicLocked(topic string) error {
	s.groups.mu.Lock()
	defer s.groups.mu.Unlock()
	var errs []error
	for g, m := range s.groups.m {
		var keys []tp
		for k := range m {
			if k.topic == topic {
				keys = append(keys, k)
			}
		}
		if len(keys) > 0 {
			errs = append(errs, s.writeCommitsLocked(g, keys, make([]*Committed, len(keys))))
		}
	}
	return errors.Join(errs...)
}

// checkCommit makes the data up to off (or
// to the partition's end, for an offset past it) durable, so that a power
// loss leaves no commit pointing into data the partition lost. Any offset
// is stored, past the end too, as Kafka stores it: a consumer's
// auto.offset.reset deals with it when it fetches (kafkajs's setOffsets
// commits the offset it was given, whatever the partition holds). -1 is
// Kafka's "no offset": OffsetFetch answers it as if nothing were
// committed. A closed partition's data is durable already (its Log's Close
// flushed it, or the store's last clean shutdown did): it is not opened
// for this, only peeked at. A store opened only to commit (seglog consume --group) then
// writes the commit and nothing else: opening an empty partition would
// create its first segment.
func (p *partition) checkCommit(off int64) error {
	p.mu.Lock()
	durable := p.l == nil && p.gone == nil && !p.unclean && (p.opened || p.s.ckpt.clean)
	p.mu.Unlock()
	if durable {
		// Read as peek reads it: a partition that does not open refuses
		// the commit, as it would have opened.
		_, err := p.peek()
		return err
	}
	return p.with(func(l *seglog.Log) error {
		if min(off, l.EndOffset()) > l.RecoveryPoint() {
			return l.Sync()
		}
		return nil
	})
}
