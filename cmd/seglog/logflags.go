package main

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// logFlags holds the Log options every command that opens a log takes as
// flags. The defaults shown in --help are Kafka's (the seglog.Default*
// constants), so the flags and a zero seglog.Options mean the same log.
type logFlags struct {
	segmentBytes       int64
	segmentMs          int64
	segmentJitterMs    int64
	indexIntervalBytes int
	maxIndexBytes      int
	maxBatchBytes      int
	maxMappedIndexes   int
	maxOpenFiles       int
	sync               string
	syncBytes          int64
	syncInterval       time.Duration
	compression        string
	timestampType      string
	leaderEpoch        int32
	preallocate        bool
}

// bindPreallocate adds --preallocate, for the commands that write a log.
func (f *logFlags) bindPreallocate(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.preallocate, "preallocate", false,
		"create each active segment's .log at --segment-bytes with fallocate, trimmed when sealed or closed (Kafka's log.preallocate); an fdatasync then has no file size to commit")
}

// bindLogFlags adds the Log-option flags to cmd and returns the values they
// will hold once cmd's flags are parsed; call options first in RunE.
func bindLogFlags(cmd *cobra.Command) *logFlags { return bindLogFlagsExcept(cmd) }

// appendOnlyFlags are the Log-option flags that only matter to a command
// that appends: what an append stamps, compresses, when it rolls and when it
// syncs. clean, which only deletes and rewrites, does not take them.
var appendOnlyFlags = []string{"compression", "timestamp-type", "leader-epoch", "segment-ms", "segment-jitter-ms", "sync", "sync-bytes", "sync-interval"}

// syncFlags choose when appends are synced; bench durable always syncs and
// does not take them.
var syncFlags = []string{"sync", "sync-bytes", "sync-interval"}

// bindLogFlagsExcept is bindLogFlags without the flags named in omit, for
// a command they would do nothing for: their options keep the default.
func bindLogFlagsExcept(cmd *cobra.Command, omit ...string) *logFlags {
	f := &logFlags{}
	// Defined on a set of their own, which sets every option's default,
	// and then added to cmd but for the omitted ones.
	fl := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	defer func() {
		fl.VisitAll(func(flag *pflag.Flag) {
			if !slices.Contains(omit, flag.Name) {
				cmd.Flags().AddFlag(flag)
				// Validated by options, which every command that binds
				// them calls before it opens or creates anything.
				if numericTypes[flag.Value.Type()] {
					checkedBy(cmd, "logFlags.options", flag.Name)
				}
			}
		})
		if cmd.Flags().Lookup("sync") != nil {
			onlyWith(cmd, "sync-bytes", "sync=periodic")
			onlyWith(cmd, "sync-interval", "sync=periodic")
		}
	}()
	fl.Int64Var(&f.segmentBytes, "segment-bytes", seglog.DefaultSegmentBytes,
		"roll the active segment at this many bytes (Kafka segment.bytes)")
	fl.Int64Var(&f.segmentMs, "segment-ms", seglog.DefaultSegmentAge.Milliseconds(),
		"roll a segment whose first batch is this many milliseconds old (segment.ms)")
	fl.Int64Var(&f.segmentJitterMs, "segment-jitter-ms", 0,
		"subtract a random [0, N) ms from --segment-ms per segment (segment.jitter.ms)")
	fl.IntVar(&f.indexIntervalBytes, "index-interval-bytes", seglog.DefaultIndexIntervalBytes,
		"bytes of batches between two offset-index entries (index.interval.bytes)")
	fl.IntVar(&f.maxIndexBytes, "max-index-bytes", seglog.DefaultMaxIndexBytes,
		"preallocated size of each index file; a full index rolls the segment (segment.index.bytes)")
	fl.IntVar(&f.maxBatchBytes, "max-batch-bytes", seglog.DefaultMaxBatchBytes,
		"largest batch stored, including its 12-byte log overhead (max.message.bytes); lowered to --segment-bytes when not given; a larger batch takes a segment of its own")
	fl.IntVar(&f.maxMappedIndexes, "max-mapped-indexes", seglog.DefaultMaxMappedIndexes,
		"how many sealed segments' indexes may be memory mapped at once")
	fl.IntVar(&f.maxOpenFiles, "max-open-segment-files", seglog.DefaultMaxOpenSegmentFiles,
		"how many sealed segments keep their .log descriptor open once read (the least recently used idle one is closed, and reopened when read)")
	fl.StringVar(&f.sync, "sync", seglog.SyncNone.String(),
		"durability: none (OS flushes; Kafka's default), always (fdatasync before each append returns), periodic (see --sync-bytes, --sync-interval)")
	fl.Int64Var(&f.syncBytes, "sync-bytes", 0,
		"with --sync periodic: flush once this many bytes are unflushed (flush.messages, in bytes)")
	fl.DurationVar(&f.syncInterval, "sync-interval", 0,
		"with --sync periodic: flush unflushed data at least this often, e.g. 100ms (flush.ms)")
	fl.StringVar(&f.compression, "compression", record.None.String(),
		"codec for appended records: none, gzip, snappy, lz4 or zstd (producer batches keep theirs)")
	fl.StringVar(&f.timestampType, "timestamp-type", "create",
		"create: keep the records' timestamps (CreateTime); append: stamp the append time (LogAppendTime)")
	fl.Int32Var(&f.leaderEpoch, "leader-epoch", 0,
		"partition leader epoch stamped into every appended batch")
	return f
}

// setDefault changes the default of one of cmd's flags (the value used and
// the one --help shows), for a command whose natural default differs from
// Kafka's, such as demo's small segments.
func setDefault(cmd *cobra.Command, name, value string) {
	fl := cmd.Flags().Lookup(name)
	if fl == nil {
		panic("seglog: setDefault of unknown flag " + name) // a programming error, not input
	}
	if err := fl.Value.Set(value); err != nil {
		panic(fmt.Sprintf("seglog: default %q for --%s: %v", value, name, err))
	}
	fl.DefValue = value
}

// options converts the flags into seglog.Options, logging to stderr, and
// validates them: a bad value is an error naming the flag.
func (f *logFlags) options(cmd *cobra.Command) (seglog.Options, error) {
	var o seglog.Options
	msDuration := func(name string, ms int64) (time.Duration, error) {
		if ms < 0 {
			return 0, usageErrorf(cmd, "invalid --%s %d: must not be negative", name, ms)
		}
		if ms > math.MaxInt64/int64(time.Millisecond) {
			return 0, usageErrorf(cmd, "invalid --%s %d: too large", name, ms)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	var err error
	if o.SegmentAge, err = msDuration("segment-ms", f.segmentMs); err != nil {
		return o, err
	}
	if f.segmentMs == 0 {
		// Zero would mean "default" to the Log; for the flag it is an
		// explicit value that can only be a mistake.
		return o, usageErrorf(cmd, "invalid --segment-ms 0: must be positive")
	}
	if o.SegmentJitter, err = msDuration("segment-jitter-ms", f.segmentJitterMs); err != nil {
		return o, err
	}
	if o.Compression, err = record.ParseCodec(f.compression); err != nil {
		return o, usageErrorf(cmd, "invalid --compression %q: want none, gzip, snappy, lz4 or zstd", f.compression)
	}
	switch strings.ToLower(f.sync) {
	case "none":
		o.Sync = seglog.SyncNone
	case "always":
		o.Sync = seglog.SyncAlways
	case "periodic":
		o.Sync = seglog.SyncPeriodic
	default:
		return o, usageErrorf(cmd, "invalid --sync %q: want none, always or periodic", f.sync)
	}
	switch strings.ToLower(f.timestampType) {
	case "create", "createtime":
		o.TimestampType = record.CreateTime
	case "append", "logappendtime":
		o.TimestampType = record.LogAppendTime
	default:
		return o, usageErrorf(cmd, "invalid --timestamp-type %q: want create or append", f.timestampType)
	}
	if f.indexIntervalBytes == 0 {
		// Kafka reads index.interval.bytes=0 as "index every batch"; the
		// Log reads 0 as its default, and 1 has Kafka's meaning.
		f.indexIntervalBytes = 1
	}
	for _, p := range []struct {
		name string
		v    int64
	}{
		{"segment-bytes", f.segmentBytes},
		{"index-interval-bytes", int64(f.indexIntervalBytes)},
		{"max-index-bytes", int64(f.maxIndexBytes)},
		{"max-batch-bytes", int64(f.maxBatchBytes)},
		{"max-mapped-indexes", int64(f.maxMappedIndexes)},
		{"max-open-segment-files", int64(f.maxOpenFiles)},
	} {
		// The Log reads zero as "Kafka's default"; on the command line a
		// zero size is a mistake, not a request for the default.
		if p.v <= 0 {
			return o, usageErrorf(cmd, "invalid --%s %d: must be positive", p.name, p.v)
		}
	}
	o.SegmentBytes = f.segmentBytes
	o.IndexIntervalBytes = f.indexIntervalBytes
	o.MaxIndexBytes = f.maxIndexBytes
	o.MaxBatchBytes = f.maxBatchBytes
	if !cmd.Flags().Changed("max-batch-bytes") && int64(o.MaxBatchBytes) > o.SegmentBytes {
		// Small segments for a test or a demo should not also need the
		// batch limit lowered by hand (produce batches up to it); an
		// explicit larger limit is taken, each larger batch then in a
		// segment of its own, as Kafka stores it.
		o.MaxBatchBytes = int(o.SegmentBytes)
	}
	o.MaxMappedIndexes = f.maxMappedIndexes
	o.MaxOpenSegmentFiles = f.maxOpenFiles
	o.SyncBytes = f.syncBytes
	o.SyncInterval = f.syncInterval
	o.LeaderEpoch = f.leaderEpoch
	o.Preallocate = f.preallocate
	o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
	if err := o.Validate(); err != nil {
		return o, &usageError{cmd: cmd, err: &flagError{msg: optionFlagNames.Replace(err.Error()), err: err}}
	}
	return o, nil
}

// optionFlagNames rewrites the Options field names in Validate's messages
// as the flags that set them, longest names first so that SyncBytes is not
// read as Sync.
var optionFlagNames = strings.NewReplacer(
	"IndexIntervalBytes", "--index-interval-bytes",
	"MaxMappedIndexes", "--max-mapped-indexes",
	"MaxOpenSegmentFiles", "--max-open-segment-files",
	"MaxIndexBytes", "--max-index-bytes",
	"MaxBatchBytes", "--max-batch-bytes",
	"SegmentBytes", "--segment-bytes",
	"SegmentJitter", "--segment-jitter-ms",
	"SegmentAge", "--segment-ms",
	"SyncInterval", "--sync-interval",
	"SyncBytes", "--sync-bytes",
	"Sync ", "--sync ",
	"LeaderEpoch", "--leader-epoch",
	"TimestampType", "--timestamp-type",
	"Compression", "--compression",
)

// flagError is a Validate error reworded in terms of flags; it still
// matches seglog.ErrInvalidOptions with errors.Is.
type flagError struct {
	msg string
	err error
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.err }

// readFlags holds the Log options that matter to a command that only
// reads: the others shape segments, indexes and syncs as they are
// written, and a read-only open ignores them.
type readFlags struct {
	maxBatchBytes    int
	maxMappedIndexes int
	maxOpenFiles     int
}

// bindReadFlags adds the reading commands' Log-option flags to cmd.
func bindReadFlags(cmd *cobra.Command) *readFlags {
	f := &readFlags{}
	fl := cmd.Flags()
	fl.IntVar(&f.maxBatchBytes, "max-batch-bytes", seglog.DefaultMaxBatchBytes,
		"the log's max.message.bytes: a compressed batch may decompress to 8 times this (at least 8 MiB); stored batches of any size are read")
	fl.IntVar(&f.maxMappedIndexes, "max-mapped-indexes", seglog.DefaultMaxMappedIndexes,
		"how many segments' indexes may be held at once")
	fl.IntVar(&f.maxOpenFiles, "max-open-segment-files", seglog.DefaultMaxOpenSegmentFiles,
		"how many sealed segments keep their .log descriptor open once read")
	checkedBy(cmd, "readFlags.options", "max-batch-bytes", "max-mapped-indexes", "max-open-segment-files")
	return f
}

// options returns read-only seglog.Options, logging to stderr.
func (f *readFlags) options(cmd *cobra.Command) (seglog.Options, error) {
	for _, p := range []struct {
		name string
		v    int
	}{{"max-batch-bytes", f.maxBatchBytes}, {"max-mapped-indexes", f.maxMappedIndexes}, {"max-open-segment-files", f.maxOpenFiles}} {
		if p.v <= 0 {
			return seglog.Options{}, usageErrorf(cmd, "invalid --%s %d: must be positive", p.name, p.v)
		}
	}
	o := seglog.Options{
		ReadOnly:            true,
		LogConfig:           seglog.LogConfig{MaxBatchBytes: f.maxBatchBytes},
		MaxMappedIndexes:    f.maxMappedIndexes,
		MaxOpenSegmentFiles: f.maxOpenFiles,
		Logger:              slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
	}
	if err := o.Validate(); err != nil {
		return o, &usageError{cmd: cmd, err: &flagError{msg: optionFlagNames.Replace(err.Error()), err: err}}
	}
	return o, nil
}
