package store

import (
	"fmt"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/vfs"
)

// SetTopicConfig replaces a topic's config, as Kafka's AlterConfigs and
// IncrementalAlterConfigs do: UpdateTopicConfig with cfg.
func (s *Store) SetTopicConfig(name string, cfg TopicConfig) error {
	return s.UpdateTopicConfig(name, false, func(TopicConfig) (TopicConfig, error) { return cfg, nil })
}

// TopicConfigOf returns a topic's config.
func (s *Store) TopicConfigOf(name string) (TopicConfig, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.topics[name]
	if !ok {
		return TopicConfig{}, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	return t.cfg, nil
}

// UpdateTopicConfig alters a topic's config: f is given the current
// config and returns the new one, with no other alter in between. The new
// config is checked (Validate) before anything is written; with
// validateOnly that is all. Otherwise it is stored durably in the topic's
// config file (the commit point), then applied to the live partitions:
// the cleaner's policy (cleanup.policy, retention.ms, retention.bytes and
// the compaction settings) from its next round; segment.bytes,
// max.message.bytes and compression.type from the partitions' next
// append (segment.bytes at the next roll); flush.messages, flush.ms and
// segment.index.bytes when a partition's Log is next opened (an idle one
// closed by the budget of open Logs, or a restart). An error from f, or
// from Validate (ErrInvalidConfig), changes nothing. The offsets topic's
// config is the store's own and is refused (ErrInternalTopic).
func (s *Store) UpdateTopicConfig(name string, validateOnly bool, f func(TopicConfig) (TopicConfig, error)) error {
	if s.readOnly {
		return s.errReadOnly("alter a topic's config")
	}
	if name == OffsetsTopic {
		return fmt.Errorf("%w: %s: its config is the store's own", ErrInternalTopic, name)
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
	cfg, err := f(t.cfg)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if validateOnly {
		return nil
	}
	file := topicFile{state: stateReady, partitions: len(t.parts), config: cfg}
	if err := vfs.WriteFileAtomic(s.fs, s.topicFile(name), file.format()); err != nil {
		return err
	}
	t.cfg = cfg
	for _, p := range t.parts {
		p.setConfig(cfg)
		if err := s.clean.SetPolicy(cleanerPart{p}, cfg.policy()); err != nil {
			// Only a partition the cleaner does not know fails here, and
			// every partition of a writable store is added to it.
			s.logger.Warn("store: applying a topic's cleaner policy", "topic", name, "partition", p.id, "err", err)
		}
	}
	return nil
}

// setConfig gives the partition its topic's new config: its open Log takes
// the limits it can change live, and the next open takes all of it.
func (p *partition) setConfig(cfg TopicConfig) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg = cfg
	if p.l != nil && !p.s.readOnly {
		lim := seglog.Limits{SegmentBytes: cfg.SegmentBytes, MaxBatchBytes: cfg.MaxMessageBytes, Compression: cfg.Compression}
		if err := p.l.SetLimits(lim); err != nil {
			// A validated TopicConfig's limits are valid Options; should
			// one not be, the Log keeps its old limits until reopened.
			p.s.logger.Warn("store: applying a topic's limits to an open partition", "dir", p.dir(), "err", err)
		}
	}
}

// config is the partition's topic config.
func (p *partition) config() TopicConfig {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cfg
}
