package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/storelog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// CreateTopic creates a topic of n partitions. The config file is written
// in state creating first and in state ready last, so a crash in between
// leaves a topic that the next Open removes: no topic half exists. It
// fails with ErrTopicExists, ErrInvalidTopic (also for a name Kafka would
// confuse with an existing one, '.' and '_' being alike), ErrInternalTopic,
// ErrInvalidPartitions, ErrInvalidConfig, or ErrReadOnly; nothing is
// created then.
func (s *Store) CreateTopic(name string, n int, cfg TopicConfig) error {
	if s.readOnly {
		return s.errReadOnly("create a topic")
	}
	if err := ValidateTopic(name); err != nil {
		return err
	}
	if name == OffsetsTopic {
		return fmt.Errorf("%w: %s", ErrInternalTopic, name)
	}
	if err := validatePartitions(n); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if _, ok := s.topics[name]; ok {
		return fmt.Errorf("%w: %s", ErrTopicExists, name)
	}
	for t := range s.topics {
		if collisionKey(t) == collisionKey(name) {
			return fmt.Errorf("%w: %q collides with existing topic %q (Kafka treats '.' and '_' alike)", ErrInvalidTopic, name, t)
		}
	}
	return s.createTopic(name, n, cfg)
}

func (s *Store) createTopic(name string, n int, cfg TopicConfig) error {
	f := topicFile{state: stateCreating, partitions: n, config: cfg}
	if err := vfs.WriteFileAtomic(s.fs, s.topicFile(name), f.format()); err != nil {
		return err
	}
	t := &topic{name: name, cfg: cfg}
	fail := func(err error) error {
		s.shutPartitions(t.parts, fmt.Errorf("%w: %s", ErrUnknownTopic, name))
		parts := make([]int32, n)
		for i := range parts {
			parts[i] = int32(i)
		}
		if derr := s.finishDelete(name, parts); derr != nil {
			s.logger.Warn("store: rolling back a topic failed; Open will finish it", "topic", name, "err", derr)
		}
		return err
	}
	// An empty directory is an empty partition: its Log opens on first
	// use, so creating many partitions opens no file.
	for p := 0; p < n; p++ {
		if err := s.fs.MkdirAll(filepath.Join(s.dir, layout.PartitionDirName(name, int32(p)))); err != nil {
			return fail(err)
		}
	}
	if err := s.newPartitions(t, 0, n); err != nil {
		return fail(err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fail(err)
	}
	f.state = stateReady
	if err := vfs.WriteFileAtomic(s.fs, s.topicFile(name), f.format()); err != nil {
		return fail(err)
	}
	s.topics[name] = t
	return nil
}

// DeleteTopic deletes a topic as Kafka does: its config file goes to state
// deleting (the commit point), its partition directories are renamed to
// topic-N.<uuid>-delete and removed in the background, and the file goes.
// Groups' committed offsets for it are tombstoned.
func (s *Store) DeleteTopic(name string) error {
	if s.readOnly {
		return s.errReadOnly("delete a topic")
	}
	if name == OffsetsTopic {
		return fmt.Errorf("%w: %s", ErrInternalTopic, name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	t, ok := s.topics[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	f := topicFile{state: stateDeleting, partitions: len(t.parts), config: t.cfg}
	if err := vfs.WriteFileAtomic(s.fs, s.topicFile(name), f.format()); err != nil {
		return err
	}
	delete(s.topics, name)
	parts := make([]int32, len(t.parts))
	for i := range t.parts {
		parts[i] = int32(i)
	}
	if err := s.shutPartitions(t.parts, fmt.Errorf("%w: %s (deleted)", ErrUnknownTopic, name)); err != nil {
		s.logger.Warn("store: closing a deleted partition", "topic", name, "err", err)
	}
	if err := s.finishDelete(name, parts); err != nil {
		return err
	}
	return s.forgetTopicLocked(name)
}

// AddPartitions grows a topic to n partitions. The new directories are
// created before the config file records the count, so a crash in between
// leaves directories the next Open removes (they were never written to).
// As in Kafka, keys move: a key's partition is its hash mod the count.
func (s *Store) AddPartitions(name string, n int) error {
	if s.readOnly {
		return s.errReadOnly("add partitions")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.checkAddPartitionsLocked(name, n)
	if err != nil {
		return err
	}
	for p := len(t.parts); p < n; p++ {
		if err := s.fs.MkdirAll(filepath.Join(s.dir, layout.PartitionDirName(name, int32(p)))); err != nil {
			return err
		}
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return err
	}
	f := topicFile{state: stateReady, partitions: n, config: t.cfg}
	if err := vfs.WriteFileAtomic(s.fs, s.topicFile(name), f.format()); err != nil {
		return err
	}
	return s.newPartitions(t, len(t.parts), n)
}

// CheckAddPartitions returns the error AddPartitions(name, n) would
// return before changing anything (unknown or internal topic, a count
// that does not grow or is over MaxPartitions), changing nothing: a
// CreatePartitions request with ValidateOnly.
func (s *Store) CheckAddPartitions(name string, n int) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, err := s.checkAddPartitionsLocked(name, n)
	return err
}

func (s *Store) checkAddPartitionsLocked(name string, n int) (*topic, error) {
	if s.closed {
		return nil, ErrClosed
	}
	t, ok := s.topics[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	if name == OffsetsTopic {
		return nil, fmt.Errorf("%w: %s", ErrInternalTopic, name)
	}
	if n <= len(t.parts) {
		return nil, fmt.Errorf("%w: %s has %d partitions; the count can only grow", ErrInvalidPartitions, name, len(t.parts))
	}
	if err := validatePartitions(n); err != nil {
		return nil, err
	}
	return t, nil
}

// Topics lists the user topics, sorted (the internal offsets topic is
// left out, as kafka-topics.sh --list leaves it out unless asked).
func (s *Store) Topics() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for t := range s.topics {
		if t != OffsetsTopic {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// PartitionInfo describes one partition.
type PartitionInfo struct {
	Partition   int32
	StartOffset int64
	EndOffset   int64
	Size        int64
	Segments    int
	// Lag is each group's lag on this partition, for the groups with a
	// committed offset here.
	Lag map[string]int64
	// Err is why the partition could not be read (its Log does not
	// open: damage, an inconsistent checkpoint); the other fields are
	// then zero. The other partitions are described all the same.
	Err error
}

// TopicInfo describes a topic.
type TopicInfo struct {
	Name       string
	Config     TopicConfig
	Partitions []PartitionInfo
}

// DescribeTopic describes a topic's partitions and the lag of every group
// that committed offsets for it. A partition that cannot be read is
// described by its error (PartitionInfo.Err).
func (s *Store) DescribeTopic(name string) (TopicInfo, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[name]
	if !ok {
		return TopicInfo{}, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	info := TopicInfo{Name: name, Config: t.cfg}
	for i, p := range t.parts {
		pi, err := p.peek()
		if err != nil {
			info.Partitions = append(info.Partitions, PartitionInfo{Partition: int32(i), Err: err})
			continue
		}
		row := PartitionInfo{Partition: int32(i), StartOffset: pi.start, EndOffset: pi.end,
			Size: pi.size, Segments: pi.segments, Lag: make(map[string]int64)}
		for g, off := range s.groups.committedFor(name, int32(i)) {
			row.Lag[g] = lag(row.StartOffset, row.EndOffset, off)
		}
		info.Partitions = append(info.Partitions, row)
	}
	return info, nil
}

// Partitions returns a topic's partition count.
func (s *Store) Partitions(name string) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[name]
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return len(t.parts), nil
}

// Log returns a read-only view of a partition (bounds, Records, Read,
// Follow, OffsetForTime); Writer appends to it, DeleteRecords deletes
// its oldest records, and nothing else a caller holds changes it. The
// partition stays open until the topic is deleted or the store closed (in
// a read-only store: until a Refresh finds the topic deleted, or the
// partition truncated under its view), and the view's reads answer
// seglog.ErrClosed from then on: ask Log again. Such a partition is
// never closed by the budget of open Logs (Options.MaxOpenLogs): callers
// that visit many partitions use AcquireLog instead. It fails with
// ErrUnknownTopic or ErrUnknownPartition, or with the error of opening
// the partition's Log (damage, seglog.ErrLogStartBeyondEnd, ...).
func (s *Store) Log(name string, partition int32) (seglog.View, error) {
	l, _, err := s.foreverLog(name, partition)
	if err != nil {
		return seglog.View{}, err
	}
	return l.View(), nil
}

// foreverLog opens a partition for good: Log and Writer.
func (s *Store) foreverLog(name string, partition int32) (*seglog.Log, *partition, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, err := s.partLocked(name, partition)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	p.forever = true
	p.mu.Unlock()
	l, err := p.acquire()
	if err != nil {
		return nil, nil, err
	}
	p.release() // forever keeps it open
	return l, p, nil
}

// AcquireLog returns a read-only view of a partition, opened if it was
// closed, and a release function. Until release is called the partition
// stays open; after, the store may close it when more than
// Options.MaxOpenLogs are open (a later AcquireLog reopens it), and the
// view's reads then answer seglog.ErrClosed: do not use it after
// release. release may be called more than once.
func (s *Store) AcquireLog(name string, partition int32) (seglog.View, func(), error) {
	l, release, err := s.acquireLog(name, partition)
	if err != nil {
		return seglog.View{}, nil, err
	}
	return l.View(), release, nil
}

// acquireLog is AcquireLog with the Log itself: the store's own uses, and
// seglog clean's through internal/storelog.
func (s *Store) acquireLog(name string, partition int32) (*seglog.Log, func(), error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, err := s.partLocked(name, partition)
	if err != nil {
		return nil, nil, err
	}
	l, err := p.acquire()
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return l, func() { once.Do(p.release) }, nil
}

func init() {
	storelog.Acquire = func(st any, topic string, partition int32) (*seglog.Log, func(), error) {
		return st.(*Store).acquireLog(topic, partition)
	}
}

// part returns a partition.
func (s *Store) part(name string, partition int32) (*partition, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.partLocked(name, partition)
}

func (s *Store) partLocked(name string, partition int32) (*partition, error) {
	if s.closed {
		return nil, ErrClosed
	}
	t, ok := s.topics[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	if partition < 0 || int(partition) >= len(t.parts) {
		return nil, fmt.Errorf("%w: %s-%d (the topic has %d)", ErrUnknownPartition, name, partition, len(t.parts))
	}
	return t.parts[partition], nil
}

// lag is Kafka's consumer lag: end minus the committed offset, counted
// from the start when retention removed records below the commit, and
// negative for a commit past the end (kafka-consumer-groups.sh prints it
// so too).
func lag(start, end, committed int64) int64 {
	if committed > end {
		return end - committed // negative: the commit is past the log end
	}
	return end - max(committed, start)
}

// TopicPartitions returns the partition count of a topic of the store in
// dir as the topic's config file says, reading that file alone: no lock
// is taken, nothing is written, the store is not opened. It is for a
// caller that must refuse a partition the topic does not have before it
// opens the store to write it (the lock file and the store's own repairs
// would change the log.dir for a command that then fails). A topic being
// created or deleted, which Open rolls back or forward, is unknown; so is
// one with no config file (the error matches fs.ErrNotExist too), though
// Open adopts a Kafka broker's partition directories that have none.
func TopicPartitions(fsys vfs.FS, dir, topic string) (int, error) {
	if fsys == nil {
		fsys = vfs.Default
	}
	if err := ValidateTopic(topic); err != nil {
		return 0, err
	}
	path := filepath.Join(dir, topic+topicFileSuffix)
	data, err := vfs.ReadFileLimit(fsys, path, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%w: %s: %w", ErrUnknownTopic, topic, err)
	}
	if err != nil {
		return 0, err
	}
	f, err := parseTopicFile(path, data)
	if err != nil {
		return 0, err
	}
	if f.state != stateReady {
		return 0, fmt.Errorf("%w: %s (%s says state=%s: it is being created or deleted)", ErrUnknownTopic, topic, path, f.state)
	}
	return f.partitions, nil
}
