package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/defaults"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
)

// ErrInvalidConfig matches every error about a topic config.
var ErrInvalidConfig = errors.New("store: invalid topic config")

// TopicConfig is a topic's configuration, named after Kafka's topic
// configs. Start from DefaultTopicConfig: the zero value is not Kafka's
// default.
type TopicConfig struct {
	// CleanupPolicy is cleanup.policy: delete (retention), compact (the
	// store's cleaner compacts the partitions) or both.
	CleanupPolicy cleaner.CleanupPolicy
	// RetentionMs is retention.ms; -1 keeps records forever.
	RetentionMs int64
	// RetentionBytes is retention.bytes per partition; -1 is unlimited.
	RetentionBytes int64
	// SegmentBytes is segment.bytes.
	SegmentBytes int64
	// FlushMessages is flush.messages: 1 syncs every append
	// (seglog.SyncAlways); 0 leaves flushing to the OS (Kafka's default,
	// Long.MAX_VALUE). Other counts are not supported.
	FlushMessages int64
	// FlushMs is flush.ms: a periodic sync (seglog.SyncPeriodic); 0 is
	// none.
	FlushMs int64
	// Compression is compression.type for records the store encodes.
	Compression record.Codec
	// MaxMessageBytes is max.message.bytes: the largest batch.
	MaxMessageBytes int
	// SegmentIndexBytes is segment.index.bytes: the preallocated size of
	// each index file.
	SegmentIndexBytes int
	// DeleteRetentionMs is delete.retention.ms: how long a compacted
	// topic keeps tombstones after the round that first copies them.
	DeleteRetentionMs int64
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio: a compact
	// partition is compacted once its dirty bytes exceed this share.
	MinCleanableDirtyRatio float64
	// MinCompactionLagMs is min.compaction.lag.ms: records younger than
	// this are not compacted.
	MinCompactionLagMs int64
	// MaxCompactionLagMs is max.compaction.lag.ms: a dirty segment older
	// than this is compacted whatever the ratio.
	MaxCompactionLagMs int64
	// MinInsyncReplicas is min.insync.replicas: an acks=all write is
	// refused (NOT_ENOUGH_REPLICAS) unless at least this many of the
	// partition's replicas are in sync, and is answered once that many
	// hold it. In a cluster raft's majority is the floor whatever the
	// value (docs/cluster.md, "What acks mean here").
	MinInsyncReplicas int

	// set marks the keys set on this config by name (Set, SetAll), one
	// bit per configKeys entry: a topic's own settings, which Kafka calls
	// its dynamic topic configs, as against the values it inherited from
	// the default it was created with. See Source.
	set uint32
}

// DefaultTopicConfig returns Kafka's defaults (each config's
// ConfigInfo.Default).
func DefaultTopicConfig() TopicConfig { return defaultConfig }

// Set changes one config by its Kafka name and marks it as set on this
// config (IsSet). An unknown key or a value that does not parse is an error
// matching ErrInvalidConfig.
func (c *TopicConfig) Set(key, value string) error {
	if err := c.assign(key, value); err != nil {
		return err
	}
	c.set |= keyBit(key)
	return nil
}

// keyBit is key's bit in TopicConfig.set; 0 for an unknown key.
func keyBit(key string) uint32 {
	if _, i, ok := lookup(key); ok {
		return 1 << i
	}
	return 0
}

// errUnknownKey is the error for a config a TopicConfig does not carry.
func errUnknownKey(key string) error {
	return fmt.Errorf("%w: unknown config %q (known: %s)", ErrInvalidConfig, key, strings.Join(configKeys, ", "))
}

// assign parses and stores one config without marking it.
func (c *TopicConfig) assign(key, value string) error {
	d, _, ok := lookup(key)
	if !ok {
		return errUnknownKey(key)
	}
	if reason := d.parse(c, value); reason != "" {
		return fmt.Errorf("%w: %s=%q: %s", ErrInvalidConfig, key, value, reason)
	}
	return nil
}

// SetAll applies "key=value" strings in order.
func (c *TopicConfig) SetAll(kvs []string) error {
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("%w: %q is not key=value", ErrInvalidConfig, kv)
		}
		if err := c.Set(strings.TrimSpace(k), strings.TrimSpace(v)); err != nil {
			return err
		}
	}
	return c.Validate()
}

// Validate checks every value and the combination (the cleaner's
// settings); its error matches ErrInvalidConfig. max.message.bytes may
// exceed segment.bytes, as in Kafka: a larger batch gets a segment of its
// own (seglog.LogConfig.SegmentBytes).
func (c TopicConfig) Validate() error {
	// Every value must be one Set accepts: the topic's config file is read
	// back through Set when the store reopens, and a value it refuses
	// there would make the whole store fail to open.
	for _, k := range configKeys {
		var probe TopicConfig
		if err := probe.Set(k, c.Get(k)); err != nil {
			return err
		}
	}
	if err := c.policy().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// Get returns one config's value as Kafka spells it; "" for an unknown
// key.
func (c TopicConfig) Get(key string) string {
	if d, _, ok := lookup(key); ok {
		return d.get(c)
	}
	return ""
}

// Keys lists the config names a TopicConfig carries.
func Keys() []string { return slices.Clone(configKeys) }

// logOptions is the seglog.Options a partition of this topic opens with:
// each config's field, the others left to the Log's defaults.
func (c TopicConfig) logOptions() seglog.Options {
	var o seglog.Options
	for _, d := range configTable {
		if d.options != nil {
			d.options(c, &o.LogConfig)
		}
	}
	return o
}

// policy is the cleaner policy of the topic's partitions: retention for
// delete, compaction rounds for compact, both for compact,delete.
func (c TopicConfig) policy() cleaner.Policy {
	p := cleaner.DefaultPolicy()
	for _, d := range configTable {
		if d.policy != nil {
			d.policy(c, &p)
		}
	}
	return p
}

// topicFileSuffix names a topic's config file in the log.dir:
// "<topic>.seglog-topic". A file, not a directory, because a broker
// loading the log.dir takes every directory for a partition.
const topicFileSuffix = layout.TopicConfigSuffix

// Topic states in the config file. A topic is created by writing the
// file in state creating, then its partition directories, then the file in
// state ready; it is deleted by writing state deleting, renaming its
// directories and removing the file. Open rolls a creating topic back and
// a deleting one forward, so no topic half exists.
const (
	stateCreating = "creating"
	stateReady    = "ready"
	stateDeleting = "deleting"
)

// topicFile is the persisted form of a topic.
type topicFile struct {
	state      string
	partitions int
	config     TopicConfig
}

// format renders the file: a comment line, then key=value lines, Java
// properties style.
func (f topicFile) format() []byte {
	var b bytes.Buffer
	b.WriteString(topicFileHeader + "\n")
	fmt.Fprintf(&b, "state=%s\npartitions=%d\n", f.state, f.partitions)
	for i, d := range configTable {
		if d.newer && f.config.set&(1<<i) == 0 && d.get(f.config) == d.info.Default {
			continue
		}
		fmt.Fprintf(&b, "%s=%s\n", d.name, d.get(f.config))
	}
	// Which of the values above were set on the topic; the others are
	// what it inherited when created (TopicConfig.Source).
	fmt.Fprintf(&b, "%s=%s\n", overridesKey, strings.Join(f.config.Overrides(), ","))
	return b.Bytes()
}

// overridesKey is the topic file's line listing the configs set on the
// topic. A file without it (written before seglog kept it) is taken to
// have set the values that differ from Kafka's defaults.
const overridesKey = "overrides"

// topicFileHeader is the topic file's first line. v2 files hold
// max.message.bytes as Kafka means it, a batch's whole size; v1 files
// (before 2026-12-06) held it 12 bytes smaller, the log overhead left
// out, and parseTopicFile adds those 12 bytes back, so that a topic
// keeps exactly the limit it had. An older build reads a v2 file as v1
// (the line is a comment to it), 12 bytes more lenient.
const (
	topicFileHeader   = "# seglog topic config v2"
	topicFileHeaderV1 = "# seglog topic config v1"
)

func parseTopicFile(path string, data []byte) (topicFile, error) {
	f := topicFile{config: DefaultTopicConfig()}
	var overrides *uint32
	v1, sawMax := false, false
	bad := func(line int, reason string) error {
		return fmt.Errorf("%w: %s line %d: %s", ErrInvalidConfig, path, line, reason)
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == topicFileHeaderV1 {
			v1 = true
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return f, bad(i+1, "not key=value")
		}
		switch k {
		case "state":
			if v != stateCreating && v != stateReady && v != stateDeleting {
				return f, bad(i+1, "unknown state "+strconv.Quote(v))
			}
			f.state = v
		case "partitions":
			n, err := strconv.Atoi(v)
			if err != nil || validatePartitions(n) != nil {
				return f, bad(i+1, "bad partition count "+strconv.Quote(v))
			}
			f.partitions = n
		case overridesKey:
			var set uint32
			for _, k := range strings.Split(v, ",") {
				if k == "" {
					continue
				}
				if !IsKey(k) {
					return f, bad(i+1, "unknown config in overrides: "+strconv.Quote(k))
				}
				set |= keyBit(k)
			}
			overrides = &set
		default:
			if err := f.config.Set(k, v); err != nil {
				return f, bad(i+1, err.Error())
			}
			sawMax = sawMax || k == "max.message.bytes"
		}
	}
	if v1 && sawMax {
		// Its max.message.bytes left the log overhead out.
		f.config.MaxMessageBytes = min(f.config.MaxMessageBytes+record.LogOverhead, defaults.MaxSegmentBytes)
	}
	if overrides != nil {
		f.config.set = *overrides
	} else {
		f.config.markDiffering()
	}
	if f.state == "" || f.partitions == 0 {
		return f, fmt.Errorf("%w: %s: state or partitions missing", ErrInvalidConfig, path)
	}
	return f, nil
}
