package store

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/defaults"
	"github.com/seglog/seglog/record"
)

// configDef is one of Kafka's topic configs, as the store keeps it: the
// one place that knows its name, how a value is parsed, checked and
// printed, its default, what it sets on a partition's seglog.LogConfig
// or its cleaner.Policy, and what DescribeConfigs says of it. TopicConfig's
// Set, Get and Validate, the topic file, `seglog topics describe`, the
// server's DescribeConfigs and alters, and the conversion to the Options
// a partition opens with all read configTable.
type configDef struct {
	name string
	info ConfigInfo
	// parse checks value and stores it in c, or returns why it refuses
	// it (Set words the error around the reason).
	parse func(c *TopicConfig, value string) (reason string)
	// get prints c's value as Kafka spells it; parse takes it back.
	get func(c TopicConfig) string
	// field names the seglog.LogConfig field the config sets, and
	// options sets it from c; the cleaner's configs have neither, and
	// policy instead.
	field   string
	options func(c TopicConfig, o *seglog.LogConfig)
	policy  func(c TopicConfig, p *cleaner.Policy)
	// newer marks a config added after stores were already written: the
	// topic file carries it only when it is set or differs from its
	// default, so a store that never used it still opens with the
	// builds before it (they refuse a topic file naming a config they
	// do not know, and with it the whole store).
	newer bool
}

// ConfigInfo is what Kafka says of a topic config beside its value, as
// DescribeConfigs reports it (KeyInfo).
type ConfigInfo struct {
	// Type is the value's type in Kafka's ConfigDef terms: "LIST",
	// "LONG", "INT", "DOUBLE" or "STRING" (DescribeConfigs v3+).
	Type string
	// Default is Kafka's default value, spelled as TopicConfig.Get prints
	// it (DefaultTopicConfig holds it).
	Default string
	// BrokerConfig is the broker-level config the topic config defaults
	// from: its synonym, as Kafka's TopicConfigSynonyms names it.
	BrokerConfig string
	// DefaultSynonym, when set, is the broker config whose DEFAULT_CONFIG
	// synonym Kafka lists, with DefaultSynonymValue in its own unit: the
	// first synonym in TopicConfigSynonyms' list that has a default
	// (log.retention.ms has none; log.retention.hours is 168).
	DefaultSynonym, DefaultSynonymValue string
}

// Limits the table checks values against.
const (
	// maxLong is Kafka's Long.MAX_VALUE, which flush.messages and flush.ms
	// use for "never".
	maxLong = math.MaxInt64
)

// configTable holds every config a TopicConfig carries, in the order Keys
// lists them and the topic file writes them.
var configTable = []configDef{
	{
		name: "cleanup.policy",
		info: ConfigInfo{Type: "LIST", Default: cleaner.Delete.String(), BrokerConfig: "log.cleanup.policy"},
		parse: func(c *TopicConfig, v string) string {
			p, err := cleaner.ParseCleanupPolicy(v)
			if err != nil {
				return `want "delete", "compact" or "compact,delete"`
			}
			c.CleanupPolicy = p
			return ""
		},
		get:    func(c TopicConfig) string { return c.CleanupPolicy.String() },
		policy: func(c TopicConfig, p *cleaner.Policy) { p.CleanupPolicy = c.CleanupPolicy },
	},
	{
		name: "retention.ms",
		info: ConfigInfo{Type: "LONG", Default: msString(defaults.Retention), BrokerConfig: "log.retention.ms",
			DefaultSynonym: "log.retention.hours", DefaultSynonymValue: "168"},
		parse: unlimitedOrMore(func(c *TopicConfig) *int64 { return &c.RetentionMs }),
		get:   func(c TopicConfig) string { return strconv.FormatInt(c.RetentionMs, 10) },
		policy: func(c TopicConfig, p *cleaner.Policy) {
			p.Retention = time.Duration(c.RetentionMs) * time.Millisecond
			if c.RetentionMs < 0 {
				p.Retention = cleaner.Forever
			}
		},
	},
	{
		name:   "retention.bytes",
		info:   ConfigInfo{Type: "LONG", Default: strconv.Itoa(defaults.RetentionBytes), BrokerConfig: "log.retention.bytes"},
		parse:  unlimitedOrMore(func(c *TopicConfig) *int64 { return &c.RetentionBytes }),
		get:    func(c TopicConfig) string { return strconv.FormatInt(c.RetentionBytes, 10) },
		policy: func(c TopicConfig, p *cleaner.Policy) { p.RetentionBytes = c.RetentionBytes },
	},
	{
		name: "segment.bytes",
		info: ConfigInfo{Type: "INT", Default: strconv.Itoa(defaults.SegmentBytes), BrokerConfig: "log.segment.bytes"},
		parse: integer(func(c *TopicConfig, n int64) string {
			if n < record.HeaderSize || n > defaults.MaxSegmentBytes {
				return fmt.Sprintf("must be %d..%d", record.HeaderSize, defaults.MaxSegmentBytes)
			}
			c.SegmentBytes = n
			return ""
		}),
		get:     func(c TopicConfig) string { return strconv.FormatInt(c.SegmentBytes, 10) },
		field:   "SegmentBytes",
		options: func(c TopicConfig, o *seglog.LogConfig) { o.SegmentBytes = c.SegmentBytes },
	},
	{
		name: "flush.messages",
		info: ConfigInfo{Type: "LONG", Default: strconv.FormatInt(maxLong, 10), BrokerConfig: "log.flush.interval.messages"},
		parse: integer(func(c *TopicConfig, n int64) string {
			switch n {
			case 1:
				c.FlushMessages = 1
			case 0, maxLong:
				c.FlushMessages = 0
			default:
				return "only 1 (sync every append) or 9223372036854775807 (never) are supported"
			}
			return ""
		}),
		get: func(c TopicConfig) string {
			if c.FlushMessages == 1 {
				return "1"
			}
			return strconv.FormatInt(maxLong, 10)
		},
		field: "Sync",
		options: func(c TopicConfig, o *seglog.LogConfig) {
			if c.FlushMessages == 1 {
				o.Sync = seglog.SyncAlways
			}
		},
	},
	{
		name: "flush.ms",
		info: ConfigInfo{Type: "LONG", Default: strconv.FormatInt(maxLong, 10), BrokerConfig: "log.flush.interval.ms",
			DefaultSynonym: "log.flush.scheduler.interval.ms", DefaultSynonymValue: strconv.FormatInt(maxLong, 10)},
		parse: integer(func(c *TopicConfig, n int64) string {
			if n < 0 {
				return "must not be negative"
			}
			if n == maxLong {
				n = 0
			}
			c.FlushMs = n
			return ""
		}),
		get: func(c TopicConfig) string {
			if c.FlushMs == 0 {
				return strconv.FormatInt(maxLong, 10)
			}
			return strconv.FormatInt(c.FlushMs, 10)
		},
		// flush.messages=1 syncs every append and wins over a period,
		// as Kafka flushes on whichever comes first.
		field: "SyncInterval",
		options: func(c TopicConfig, o *seglog.LogConfig) {
			if c.FlushMessages != 1 && c.FlushMs > 0 {
				o.Sync = seglog.SyncPeriodic
				o.SyncInterval = time.Duration(c.FlushMs) * time.Millisecond
			}
		},
	},
	{
		name: "compression.type",
		info: ConfigInfo{Type: "STRING", Default: record.None.String(), BrokerConfig: "compression.type"},
		parse: func(c *TopicConfig, v string) string {
			if v == "producer" || v == "uncompressed" {
				c.Compression = record.None
				return ""
			}
			codec, err := record.ParseCodec(v)
			if err != nil {
				return "want none, gzip, snappy, lz4 or zstd"
			}
			c.Compression = codec
			return ""
		},
		get:     func(c TopicConfig) string { return c.Compression.String() },
		field:   "Compression",
		options: func(c TopicConfig, o *seglog.LogConfig) { o.Compression = c.Compression },
	},
	{
		name: "max.message.bytes",
		// A batch's whole size, its 12-byte log overhead (offset and
		// length) included, as Kafka compares it (sizeInBytes), whose
		// default is 1048588. Until 2026-12-06 seglog added the 12 bytes
		// to the value, and reported 1048576 as the default.
		info: ConfigInfo{Type: "INT", Default: strconv.Itoa(defaults.MaxBatchBytes), BrokerConfig: "message.max.bytes"},
		parse: integer(func(c *TopicConfig, n int64) string {
			if n < record.HeaderSize || n > defaults.MaxSegmentBytes {
				return fmt.Sprintf("must be %d..%d", record.HeaderSize, defaults.MaxSegmentBytes)
			}
			c.MaxMessageBytes = int(n)
			return ""
		}),
		get:     func(c TopicConfig) string { return strconv.Itoa(c.MaxMessageBytes) },
		field:   "MaxBatchBytes",
		options: func(c TopicConfig, o *seglog.LogConfig) { o.MaxBatchBytes = c.MaxMessageBytes },
	},
	{
		name: "segment.index.bytes",
		info: ConfigInfo{Type: "INT", Default: strconv.Itoa(defaults.MaxIndexBytes), BrokerConfig: "log.index.size.max.bytes"},
		parse: integer(func(c *TopicConfig, n int64) string {
			if n < defaults.MinIndexBytes || n > defaults.MaxSegmentBytes {
				return fmt.Sprintf("must be %d..%d", defaults.MinIndexBytes, defaults.MaxSegmentBytes)
			}
			c.SegmentIndexBytes = int(n)
			return ""
		}),
		get:     func(c TopicConfig) string { return strconv.Itoa(c.SegmentIndexBytes) },
		field:   "MaxIndexBytes",
		options: func(c TopicConfig, o *seglog.LogConfig) { o.MaxIndexBytes = c.SegmentIndexBytes },
	},
	{
		name:   "delete.retention.ms",
		info:   ConfigInfo{Type: "LONG", Default: msString(defaults.DeleteRetention), BrokerConfig: "log.cleaner.delete.retention.ms"},
		parse:  msAtLeast(func(c *TopicConfig) *int64 { return &c.DeleteRetentionMs }, 0),
		get:    func(c TopicConfig) string { return strconv.FormatInt(c.DeleteRetentionMs, 10) },
		policy: func(c TopicConfig, p *cleaner.Policy) { p.DeleteRetention = msDuration(c.DeleteRetentionMs) },
	},
	{
		name: "min.cleanable.dirty.ratio",
		info: ConfigInfo{Type: "DOUBLE", Default: strconv.FormatFloat(defaults.MinCleanableDirtyRatio, 'g', -1, 64),
			BrokerConfig: "log.cleaner.min.cleanable.ratio"},
		parse: func(c *TopicConfig, v string) string {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
				return "must be a number in [0, 1]"
			}
			c.MinCleanableDirtyRatio = f
			return ""
		},
		get:    func(c TopicConfig) string { return strconv.FormatFloat(c.MinCleanableDirtyRatio, 'g', -1, 64) },
		policy: func(c TopicConfig, p *cleaner.Policy) { p.MinCleanableDirtyRatio = c.MinCleanableDirtyRatio },
	},
	{
		name:   "min.compaction.lag.ms",
		info:   ConfigInfo{Type: "LONG", Default: msString(defaults.MinCompactionLag), BrokerConfig: "log.cleaner.min.compaction.lag.ms"},
		parse:  msAtLeast(func(c *TopicConfig) *int64 { return &c.MinCompactionLagMs }, 0),
		get:    func(c TopicConfig) string { return strconv.FormatInt(c.MinCompactionLagMs, 10) },
		policy: func(c TopicConfig, p *cleaner.Policy) { p.MinCompactionLag = msDuration(c.MinCompactionLagMs) },
	},
	{
		// Kafka's default is Long.MAX_VALUE ms, which no time.Duration
		// holds: the policy saturates it (msDuration).
		name:   "max.compaction.lag.ms",
		info:   ConfigInfo{Type: "LONG", Default: strconv.FormatInt(maxLong, 10), BrokerConfig: "log.cleaner.max.compaction.lag.ms"},
		parse:  msAtLeast(func(c *TopicConfig) *int64 { return &c.MaxCompactionLagMs }, 1),
		get:    func(c TopicConfig) string { return strconv.FormatInt(c.MaxCompactionLagMs, 10) },
		policy: func(c TopicConfig, p *cleaner.Policy) { p.MaxCompactionLag = msDuration(c.MaxCompactionLagMs) },
	},
	{
		// Nothing in the Log: the leader checks it before an acks=all
		// write (NOT_ENOUGH_REPLICAS when fewer replicas are in sync).
		// A single node is its one in-sync replica, so above 1 it
		// refuses every acks=all write there, as Kafka's does for a
		// topic of replication factor 1. No upper bound, as Kafka: a
		// value above the replication factor refuses them everywhere.
		name: "min.insync.replicas",
		info: ConfigInfo{Type: "INT", Default: "1", BrokerConfig: "min.insync.replicas"},
		parse: integer(func(c *TopicConfig, n int64) string {
			if n < 1 || n > math.MaxInt32 {
				return fmt.Sprintf("must be 1..%d", math.MaxInt32)
			}
			c.MinInsyncReplicas = int(n)
			return ""
		}),
		get:   func(c TopicConfig) string { return strconv.Itoa(c.MinInsyncReplicas) },
		newer: true,
	},
}

// configKeys are configTable's names, in its order.
var configKeys = func() []string {
	keys := make([]string, len(configTable))
	for i, d := range configTable {
		keys[i] = d.name
	}
	return keys
}()

// defaultConfig is Kafka's defaults, each parsed from its table entry.
var defaultConfig = func() TopicConfig {
	var c TopicConfig
	for _, d := range configTable {
		if reason := d.parse(&c, d.info.Default); reason != "" {
			panic(fmt.Sprintf("store: the default of %s, %q: %s", d.name, d.info.Default, reason))
		}
	}
	return c
}()

// lookup is key's table entry and index; ok is false for an unknown key.
func lookup(key string) (def *configDef, i int, ok bool) {
	i = slices.IndexFunc(configTable, func(d configDef) bool { return d.name == key })
	if i < 0 {
		return nil, -1, false
	}
	return &configTable[i], i, true
}

// KeyInfo returns what Kafka says of the topic config key beside its
// value; ok is false for a key a TopicConfig does not carry (IsKey).
func KeyInfo(key string) (info ConfigInfo, ok bool) {
	d, _, ok := lookup(key)
	if !ok {
		return ConfigInfo{}, false
	}
	return d.info, true
}

// integer parses a Kafka integer config and hands it to set, which
// checks its range and stores it.
func integer(set func(c *TopicConfig, n int64) (reason string)) func(*TopicConfig, string) string {
	return func(c *TopicConfig, v string) string {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "not an integer"
		}
		return set(c, n)
	}
}

// unlimitedOrMore parses retention.ms and retention.bytes: -1 is no
// limit.
func unlimitedOrMore(field func(c *TopicConfig) *int64) func(*TopicConfig, string) string {
	return integer(func(c *TopicConfig, n int64) string {
		if n < -1 {
			return "must be -1 (unlimited) or more"
		}
		*field(c) = n
		return ""
	})
}

// msAtLeast parses the compaction's millisecond configs, which must be at
// least least (max.compaction.lag.ms: 1). The three share one reason, as
// they always have.
func msAtLeast(field func(c *TopicConfig) *int64, least int64) func(*TopicConfig, string) string {
	return integer(func(c *TopicConfig, n int64) string {
		if n < least {
			return "must not be negative (max.compaction.lag.ms: positive)"
		}
		*field(c) = n
		return ""
	})
}

// msString prints a default duration as Kafka's milliseconds.
func msString(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// msDuration converts a Kafka millisecond config, saturating: Kafka's
// Long.MAX_VALUE ms ("never") does not fit a time.Duration.
func msDuration(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}
