package store

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

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

	// set marks the keys set on this config by name (Set, SetAll), one
	// bit per configKeys entry: a topic's own settings, which Kafka calls
	// its dynamic topic configs, as against the values it inherited from
	// the default it was created with. See Source.
	set uint32
}

// DefaultTopicConfig returns Kafka's defaults.
func DefaultTopicConfig() TopicConfig {
	p := cleaner.DefaultPolicy()
	return TopicConfig{
		CleanupPolicy:     p.CleanupPolicy,
		RetentionMs:       p.Retention.Milliseconds(),
		RetentionBytes:    p.RetentionBytes,
		SegmentBytes:      defaults.SegmentBytes,
		Compression:       record.None,
		MaxMessageBytes:   defaults.MaxBatchBytes,
		SegmentIndexBytes: defaults.MaxIndexBytes,

		DeleteRetentionMs:      p.DeleteRetention.Milliseconds(),
		MinCleanableDirtyRatio: p.MinCleanableDirtyRatio,
		MinCompactionLagMs:     p.MinCompactionLag.Milliseconds(),
		MaxCompactionLagMs:     math.MaxInt64,
	}
}

// configKeys are the keys Set accepts, in the order Format writes them.
var configKeys = []string{"cleanup.policy", "retention.ms", "retention.bytes", "segment.bytes",
	"flush.messages", "flush.ms", "compression.type", "max.message.bytes", "segment.index.bytes",
	"delete.retention.ms", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "max.compaction.lag.ms"}

// Set changes one config by its Kafka name and marks it as set on this
// config (IsSet).
func (c *TopicConfig) Set(key, value string) error {
	if err := c.assign(key, value); err != nil {
		return err
	}
	c.set |= keyBit(key)
	return nil
}

// keyBit is key's bit in TopicConfig.set; 0 for an unknown key.
func keyBit(key string) uint32 {
	if i := slices.Index(configKeys, key); i >= 0 {
		return 1 << i
	}
	return 0
}

// assign parses and stores one config without marking it.
func (c *TopicConfig) assign(key, value string) error {
	bad := func(reason string) error {
		return fmt.Errorf("%w: %s=%q: %s", ErrInvalidConfig, key, value, reason)
	}
	num := func() (int64, error) {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return 0, bad("not an integer")
		}
		return n, nil
	}
	switch key {
	case "cleanup.policy":
		p, err := cleaner.ParseCleanupPolicy(value)
		if err != nil {
			return bad(`want "delete", "compact" or "compact,delete"`)
		}
		c.CleanupPolicy = p
	case "retention.ms", "retention.bytes":
		n, err := num()
		if err != nil {
			return err
		}
		if n < -1 {
			return bad("must be -1 (unlimited) or more")
		}
		if key == "retention.ms" {
			c.RetentionMs = n
		} else {
			c.RetentionBytes = n
		}
	case "segment.bytes":
		n, err := num()
		if err != nil {
			return err
		}
		if n < record.HeaderSize || n > 1<<31-1 {
			return bad(fmt.Sprintf("must be %d..%d", record.HeaderSize, 1<<31-1))
		}
		c.SegmentBytes = n
	case "flush.messages":
		n, err := num()
		if err != nil {
			return err
		}
		switch n {
		case 1:
			c.FlushMessages = 1
		case 0, 1<<63 - 1:
			c.FlushMessages = 0
		default:
			return bad("only 1 (sync every append) or 9223372036854775807 (never) are supported")
		}
	case "flush.ms":
		n, err := num()
		if err != nil {
			return err
		}
		if n < 0 {
			return bad("must not be negative")
		}
		if n == 1<<63-1 {
			n = 0
		}
		c.FlushMs = n
	case "compression.type":
		if value == "producer" || value == "uncompressed" {
			c.Compression = record.None
			return nil
		}
		codec, err := record.ParseCodec(value)
		if err != nil {
			return bad("want none, gzip, snappy, lz4 or zstd")
		}
		c.Compression = codec
	case "max.message.bytes":
		n, err := num()
		if err != nil {
			return err
		}
		if n < record.HeaderSize || n > 1<<31-1-12 {
			return bad(fmt.Sprintf("must be %d..%d", record.HeaderSize, 1<<31-1-12))
		}
		// Kafka's limit excludes the 12-byte log overhead; seglog's
		// MaxBatchBytes includes it.
		c.MaxMessageBytes = int(n) + 12
	case "segment.index.bytes":
		n, err := num()
		if err != nil {
			return err
		}
		if n < 24 || n > 1<<31-1 {
			return bad("must be 24..2147483647")
		}
		c.SegmentIndexBytes = int(n)
	case "delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms":
		n, err := num()
		if err != nil {
			return err
		}
		if n < 0 || (n == 0 && key == "max.compaction.lag.ms") {
			return bad("must not be negative (max.compaction.lag.ms: positive)")
		}
		switch key {
		case "delete.retention.ms":
			c.DeleteRetentionMs = n
		case "min.compaction.lag.ms":
			c.MinCompactionLagMs = n
		default:
			c.MaxCompactionLagMs = n
		}
	case "min.cleanable.dirty.ratio":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return bad("must be a number in [0, 1]")
		}
		c.MinCleanableDirtyRatio = f
	default:
		return fmt.Errorf("%w: unknown config %q (known: %s)", ErrInvalidConfig, key, strings.Join(configKeys, ", "))
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

// Validate checks the combination.
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
	if int64(c.MaxMessageBytes) > c.SegmentBytes {
		return fmt.Errorf("%w: max.message.bytes %d exceeds segment.bytes %d", ErrInvalidConfig, c.MaxMessageBytes-12, c.SegmentBytes)
	}
	if err := c.policy().Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// Get returns one config's value as Kafka spells it.
func (c TopicConfig) Get(key string) string {
	switch key {
	case "cleanup.policy":
		return c.CleanupPolicy.String()
	case "retention.ms":
		return strconv.FormatInt(c.RetentionMs, 10)
	case "retention.bytes":
		return strconv.FormatInt(c.RetentionBytes, 10)
	case "segment.bytes":
		return strconv.FormatInt(c.SegmentBytes, 10)
	case "flush.messages":
		if c.FlushMessages == 1 {
			return "1"
		}
		return "9223372036854775807"
	case "flush.ms":
		if c.FlushMs == 0 {
			return "9223372036854775807"
		}
		return strconv.FormatInt(c.FlushMs, 10)
	case "compression.type":
		return c.Compression.String()
	case "max.message.bytes":
		return strconv.Itoa(c.MaxMessageBytes - 12)
	case "segment.index.bytes":
		return strconv.Itoa(c.SegmentIndexBytes)
	case "delete.retention.ms":
		return strconv.FormatInt(c.DeleteRetentionMs, 10)
	case "min.cleanable.dirty.ratio":
		return strconv.FormatFloat(c.MinCleanableDirtyRatio, 'g', -1, 64)
	case "min.compaction.lag.ms":
		return strconv.FormatInt(c.MinCompactionLagMs, 10)
	case "max.compaction.lag.ms":
		return strconv.FormatInt(c.MaxCompactionLagMs, 10)
	}
	return ""
}

// Keys lists the config names a TopicConfig carries.
func Keys() []string { return slices.Clone(configKeys) }

// logOptions is the seglog.Options a partition of this topic opens with.
func (c TopicConfig) logOptions() seglog.Options {
	o := seglog.Options{
		SegmentBytes:  c.SegmentBytes,
		MaxBatchBytes: c.MaxMessageBytes,
		MaxIndexBytes: c.SegmentIndexBytes,
		Compression:   c.Compression,
	}
	switch {
	case c.FlushMessages == 1:
		o.Sync = seglog.SyncAlways
	case c.FlushMs > 0:
		o.Sync = seglog.SyncPeriodic
		o.SyncInterval = time.Duration(c.FlushMs) * time.Millisecond
	}
	return o
}

// policy is the cleaner policy of the topic's partitions: retention for
// delete, compaction rounds for compact, both for compact,delete.
func (c TopicConfig) policy() cleaner.Policy {
	p := cleaner.DefaultPolicy()
	p.CleanupPolicy = c.CleanupPolicy
	p.Retention = time.Duration(c.RetentionMs) * time.Millisecond
	if c.RetentionMs < 0 {
		p.Retention = cleaner.Forever
	}
	p.RetentionBytes = c.RetentionBytes
	p.DeleteRetention = msDuration(c.DeleteRetentionMs)
	p.MinCleanableDirtyRatio = c.MinCleanableDirtyRatio
	p.MinCompactionLag = msDuration(c.MinCompactionLagMs)
	p.MaxCompactionLag = msDuration(c.MaxCompactionLagMs)
	return p
}

// msDuration converts a Kafka millisecond config, saturating: Kafka's
// Long.MAX_VALUE ms ("never") does not fit a time.Duration.
func msDuration(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
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
	b.WriteString("# seglog topic config v1\n")
	fmt.Fprintf(&b, "state=%s\npartitions=%d\n", f.state, f.partitions)
	for _, k := range configKeys {
		fmt.Fprintf(&b, "%s=%s\n", k, f.config.Get(k))
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

func parseTopicFile(path string, data []byte) (topicFile, error) {
	f := topicFile{config: DefaultTopicConfig()}
	var overrides *uint32
	bad := func(line int, reason string) error {
		return fmt.Errorf("%w: %s line %d: %s", ErrInvalidConfig, path, line, reason)
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
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
		}
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
