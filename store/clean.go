package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
)

// ErrCleanerRunning is Clean's error on a store whose background cleaner
// runs (Start): that cleaner applies the same rules on its own schedule.
var ErrCleanerRunning = errors.New("store: the store's cleaner runs in the background")

// PartitionCleaned is what a Clean (or Compact) round did to one
// partition.
type PartitionCleaned struct {
	Topic     string
	Partition int32
	// Cleaned is the retention pass: the segments, records and bytes
	// deleted, and the start offset before and after.
	Cleaned cleaner.LogCleaned
	// Compacted is the compaction round, when the topic compacts and its
	// dirty ratio (or max.compaction.lag.ms) called for one, or Compact
	// ran it.
	Compacted *cleaner.LogCompacted
	// Err is why the partition was not cleaned (its Log does not open, a
	// pass failed). The other partitions were cleaned all the same.
	Err error
}

// Policy is the cleaner's policy of a topic with this config: its
// cleanup.policy, retention.ms and retention.bytes, and its compaction
// settings (delete.retention.ms, min.cleanable.dirty.ratio,
// min.compaction.lag.ms, max.compaction.lag.ms).
func (c TopicConfig) Policy() cleaner.Policy { return c.policy() }

// Clean runs one cleaning round now over every partition of the topics
// named (every topic, the offsets topic included, when none is), each
// under its own topic's config, as the background cleaner (Start) does on
// each of its rounds: retention by time and size for a delete policy,
// then, for a compacting one, a compaction round if the dirty ratio calls
// for it. Everything goes through the partitions' Logs and the log.dir's
// checkpoints, as the store's own writes do. It reports each partition's
// outcome, sorted by topic and partition; a partition that fails does not
// stop the others. It fails on a read-only store (ErrReadOnly), for an
// unknown topic, and while the background cleaner runs
// (ErrCleanerRunning).
func (s *Store) Clean(ctx context.Context, topics ...string) ([]PartitionCleaned, error) {
	return s.cleanNow(ctx, "clean", topics, false, func(c *cleaner.Cleaner, _ []*partition, _ []cleaner.Policy, _ func(string, error)) error {
		return c.RunOnce(ctx)
	})
}

// ErrNotCompacting is Compact's error for a topic named whose
// cleanup.policy does not compact.
var ErrNotCompacting = errors.New("store: the topic's cleanup.policy does not compact")

// Compact runs a compaction round now on every partition of the topics
// named (every topic whose cleanup.policy compacts, the offsets topic
// included, when none is), each under its own topic's config, whatever
// its dirty ratio: the sealed segments are rewritten even when nothing
// is dirty (seglog clean DIR --compact). Superseded records and expired
// tombstones go as in any round; it is also what rewrites the compressed
// empty headers compactions before 2026-12-06 left, which Kafka clients
// cannot read past (fsck's empty-batch-codec). No retention pass runs.
// It reports each partition as Clean does, and fails as Clean does, and
// with ErrNotCompacting for a topic named that does not compact.
func (s *Store) Compact(ctx context.Context, topics ...string) ([]PartitionCleaned, error) {
	return s.cleanNow(ctx, "compact", topics, true, func(c *cleaner.Cleaner, parts []*partition, policies []cleaner.Policy, fail func(string, error)) error {
		for i, p := range parts {
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, err := c.Compact(ctx, cleanerPart{p}, policies[i]); err != nil {
				fail(p.dir(), err)
			}
		}
		return nil
	})
}

// cleanNow sets up a cleaner of its own over the partitions of topics (all,
// or with compacting all that compact, when none is named) and hands it
// to run; op names the call in a read-only store's error. run reports a
// partition's failure with fail.
func (s *Store) cleanNow(ctx context.Context, op string, topics []string, compacting bool, run func(c *cleaner.Cleaner, parts []*partition, policies []cleaner.Policy, fail func(dir string, err error)) error) ([]PartitionCleaned, error) {
	if s.readOnly {
		return nil, s.errReadOnly(op)
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	if s.started {
		s.mu.RUnlock()
		return nil, ErrCleanerRunning
	}
	named := len(topics) > 0
	if !named {
		for name := range s.topics {
			topics = append(topics, name)
		}
	}
	var parts []*partition
	var policies []cleaner.Policy
	for _, name := range topics {
		t, ok := s.topics[name]
		if !ok {
			s.mu.RUnlock()
			return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
		}
		if compacting && t.cfg.CleanupPolicy == cleaner.Delete {
			if !named {
				continue
			}
			s.mu.RUnlock()
			return nil, fmt.Errorf("%w: %s has cleanup.policy=%s", ErrNotCompacting, name, t.cfg.CleanupPolicy)
		}
		for _, p := range t.parts {
			parts = append(parts, p)
			policies = append(policies, t.cfg.policy())
		}
	}
	s.mu.RUnlock()

	var mu sync.Mutex
	byDir := make(map[string]*PartitionCleaned, len(parts))
	out := make([]PartitionCleaned, len(parts))
	for i, p := range parts {
		out[i] = PartitionCleaned{Topic: p.topic, Partition: p.id}
		byDir[p.dir()] = &out[i]
	}
	report := func(dir string, f func(*PartitionCleaned)) {
		mu.Lock()
		defer mu.Unlock()
		if pc := byDir[dir]; pc != nil {
			f(pc)
		}
	}
	// A cleaner of its own, for these partitions only, with the store's
	// settings; the background one is not running (checked above), so
	// no partition is cleaned by two at once.
	c := cleaner.New(cleaner.Options{Workers: s.opts.CleanerWorkers, Clock: s.opts.Clock, Logger: s.logger,
		Events: cleaner.Events{
			LogCleaned: func(e cleaner.LogCleaned) { report(e.Dir, func(pc *PartitionCleaned) { pc.Cleaned = e }) },
			Failure:    func(f cleaner.Failure) { report(f.Dir, func(pc *PartitionCleaned) { pc.Err = f.Err }) },
		}})
	c.SetCompaction(cleaner.CompactionOptions{DedupeBufferBytes: s.opts.DedupeBufferBytes,
		LogCompacted: func(e cleaner.LogCompacted) { report(e.Dir, func(pc *PartitionCleaned) { pc.Compacted = &e }) }})
	for i, p := range parts {
		if err := c.Add(cleanerPart{p}, policies[i]); err != nil {
			return nil, err
		}
		if err := c.SetUpperBound(cleanerPart{p}, p.cleanerUpper()); err != nil {
			return nil, err
		}
	}
	fail := func(dir string, err error) { report(dir, func(pc *PartitionCleaned) { pc.Err = err }) }
	if err := run(c, parts, policies, fail); err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b PartitionCleaned) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// DeleteRecords makes offset the start of a partition, as Kafka's
// DeleteRecords (kafka-delete-records.sh) does: the segments wholly below
// it are deleted and the records below it in the segment holding it
// become unreadable. The new start is in the log.dir's log-start
// checkpoint before anything is removed, so every reader of the store (a
// consumer, a group's lag, a read-only view, a restart) starts there.
// offset -1 is the partition's end. An offset past the end is refused
// (seglog.ErrOffsetOutOfRange), and so is the offsets topic
// (ErrInternalTopic), as Kafka refuses an internal topic. It returns the
// partition's start offset afterwards.
func (s *Store) DeleteRecords(topic string, partition int32, offset int64) (int64, error) {
	if s.readOnly {
		return 0, s.errReadOnly("delete records")
	}
	if topic == OffsetsTopic {
		return 0, fmt.Errorf("%w: %s holds the groups' commits; its records are not deleted by hand", ErrInternalTopic, topic)
	}
	p, err := s.part(topic, partition)
	if err != nil {
		return 0, err
	}
	var start int64
	err = p.with(func(l *seglog.Log) error {
		end := l.EndOffset()
		if offset == -1 {
			offset = end
		}
		if offset < 0 || offset > end {
			return fmt.Errorf("%w: cannot delete records of %s-%d before %d: the partition ends at %d", seglog.ErrOffsetOutOfRange, topic, partition, offset, end)
		}
		if _, err := l.DeleteBefore(offset); err != nil {
			return err
		}
		start = l.StartOffset()
		return nil
	})
	return start, err
}
