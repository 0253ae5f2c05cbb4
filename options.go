package seglog

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/seglog/seglog/defaults"
	"github.com/seglog/seglog/internal/embed"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Kafka's defaults, used wherever an Options field is left at its zero value.
const (
	DefaultSegmentBytes       = defaults.SegmentBytes       // segment.bytes, 1 GiB
	DefaultSegmentAge         = defaults.SegmentAge         // segment.ms, 7 days
	DefaultIndexIntervalBytes = defaults.IndexIntervalBytes // index.interval.bytes, 4096
	DefaultMaxIndexBytes      = defaults.MaxIndexBytes      // segment.index.bytes, 10 MiB
	DefaultMaxBatchBytes      = defaults.MaxBatchBytes      // max.message.bytes, 1 MiB + the 12-byte log overhead
	DefaultMaxMappedIndexes   = 1024                        // Options.MaxMappedIndexes' default
	// DefaultMaxOpenSegmentFiles is Options.MaxOpenSegmentFiles' default.
	DefaultMaxOpenSegmentFiles = 1024
)

// minSegmentBytes keeps a segment large enough to hold at least one minimal
// batch; Kafka 4.x refuses anything under 1 MiB, but tests want small
// segments, so seglog only refuses sizes that cannot work at all.
const minSegmentBytes = record.HeaderSize

// SyncMode selects when appended data is made durable with fdatasync.
type SyncMode int

const (
	// SyncNone leaves flushing to the operating system, as Kafka does by
	// default; data reaches disk on segment roll, on Sync and on Close.
	SyncNone SyncMode = iota
	// SyncAlways makes Append return only after its batch is on disk.
	// Concurrent appenders share one fdatasync (group commit).
	SyncAlways
	// SyncPeriodic flushes once SyncBytes have been appended since the last
	// flush, or SyncInterval has passed with unflushed data, whichever comes
	// first. Appends do not wait for the flush.
	SyncPeriodic
)

// String returns the mode's flag spelling.
func (m SyncMode) String() string {
	switch m {
	case SyncNone:
		return "none"
	case SyncAlways:
		return "always"
	case SyncPeriodic:
		return "periodic"
	}
	return fmt.Sprintf("SyncMode(%d)", int(m))
}

// LogConfig is the part of a Log's Options that Kafka calls a topic's
// config (Kafka's LogConfig): how segments roll and are indexed, the
// largest batch, the codec, the timestamp type and the durability policy.
// The zero value of every field means Kafka's default for it. Package
// store's topic configs (store.TopicConfig, by Kafka's names) set these
// fields for each partition it opens.
type LogConfig struct {
	// SegmentBytes is the size at which the active segment rolls. Default
	// 1 GiB; at most 2^31-1 because index positions are 32-bit. A batch
	// larger than it (MaxBatchBytes may be) is stored alone in a segment
	// of its own, as Kafka stores it.
	SegmentBytes int64
	// SegmentAge rolls a non-empty active segment once its first batch is
	// this old (by record time). Default 7 days.
	SegmentAge time.Duration
	// SegmentJitter subtracts a random duration in [0, SegmentJitter) from
	// SegmentAge per segment, so logs created together do not roll together.
	// Default 0.
	SegmentJitter time.Duration
	// IndexIntervalBytes is how many bytes of batches may be appended between
	// two offset-index entries. Default 4096.
	IndexIntervalBytes int
	// MaxIndexBytes is the preallocated size of each index file; a full index
	// rolls the segment. Default 10 MiB; from 24 bytes (two time-index
	// entries) to 2 GiB - 1, the range of a store's segment.index.bytes.
	MaxIndexBytes int
	// MaxBatchBytes is the largest batch, including its 12-byte log overhead,
	// that Append or AppendBatch will store. Default 1,048,588. It bounds
	// appends only: batches already stored, under a larger limit or by
	// Kafka, are kept by recovery and read whatever their size (as a broker
	// lowering max.message.bytes loses nothing).
	MaxBatchBytes int
	// Compression is the codec Append uses. AppendBatch stores producer
	// batches with the codec they arrived in. Default none.
	Compression record.Codec
	// Sync is the durability policy. Default SyncNone.
	Sync SyncMode
	// Preallocate creates each active segment's .log at SegmentBytes with
	// fallocate (Kafka's log.preallocate, as etcd's WAL and raft-wal do),
	// so the fdatasync behind SyncAlways has no file size to commit (on
	// ext4 a synced 1 KiB append took 109–124 µs with it, 177–220 µs
	// without).
	// The end of the data is kept in memory; a segment is trimmed to it
	// when it is sealed and when the log is closed, so sealed segments
	// have exactly Kafka's layout. After a crash, recovery treats zero
	// bytes from the last batch to the end of a file as its end (cut
	// without loss), with or without this option, so a log written with
	// it opens without it and the reverse. A full disk while a new
	// segment is preallocated fails the append or the roll with the
	// error. It costs SegmentBytes of disk per active segment. Default
	// off; see docs/design.md.
	Preallocate bool
	// SyncBytes and SyncInterval drive SyncPeriodic; at least one must be set
	// for that mode.
	SyncBytes    int64
	SyncInterval time.Duration
	// TimestampType selects how appended batches are stamped: CreateTime
	// (default) keeps the records' timestamps and recomputes the batch's max
	// timestamp from them; LogAppendTime replaces it with the append time.
	TimestampType record.TimestampType
}

// Options configures a Log: its LogConfig, the part Kafka calls a
// topic's config, and how the Log is embedded (filesystem, logger, clock,
// event hooks, read-only mode) and tuned (mapped and open file bounds).
// The zero value of every field means the default for it; LogConfig's
// fields are read as Options' own (opts.SegmentBytes).
type Options struct {
	LogConfig

	// FS is the filesystem; nil means the real one. The others, a
	// crash-simulating in-memory FS (vfs.NewMem) and a fault injector
	// (vfs.Inject), are public so that embedders can crash-test their own
	// programs over seglog.
	FS vfs.FS
	// MaxMappedIndexes bounds how many sealed segments' indexes are memory
	// mapped at once (least recently used are unmapped). Default 1024. It
	// bounds, separately, how many segments' .log files are mapped
	// read-only for reading batch headers without a system call.
	MaxMappedIndexes int
	// MaxOpenSegmentFiles bounds how many sealed segments keep their .log
	// descriptor open once read: past it, the least recently used idle
	// one is closed, and reopened by its next read. Default 1024. Without
	// it a consumer reading a long log from its start would leave every
	// segment it passed open until Close (Kafka keeps them all open). The
	// active segment's files, and a segment that a Slice or an iteration
	// is using, are never closed. A ReadOnly Log keeps every .log it read
	// open: the writer beside it may replace a file under the same name
	// (compaction's swap), and a reopen would read the new file.
	MaxOpenSegmentFiles int
	// LeaderEpoch is stamped into every appended batch's partition leader
	// epoch field. Default 0.
	LeaderEpoch int32
	// Logger receives recovery and maintenance messages. Default
	// slog.Default().
	Logger *slog.Logger
	// OnQuarantine, when set, is called by Open for each quarantine file
	// its recovery made (bytes it cut from the log but kept, see Open and
	// Quarantine), after the file is durable and before Open returns. It
	// must not call back into the Log; a function shared by the Options
	// of several logs may be called by their Opens at the same time.
	OnQuarantine func(Quarantine)
	// Stats, when set, counts the Log's rolls, flushes and its Open's
	// recovery (see Stats); several Logs may share one. Nil counts nothing.
	Stats *Stats
	// Clock is the time source of append, roll and delete-delay times;
	// nil means RealClock. Tests set a fake one.
	Clock Clock
	// ReadOnly opens an existing log without writing anything: no
	// directory is created (a missing one is an error matching
	// fs.ErrNotExist), no lock is taken, no index, checkpoint or marker is
	// written, no leftover is deleted or renamed, and a torn tail is not
	// truncated, only not served. Indexes that are missing, torn or being
	// written by a live writer are rebuilt in memory. It needs only read
	// permission and works beside a writer, in this process or another;
	// Follow and Refresh pick up what the writer appends. Damage below the
	// recovery point is a *CorruptionError as for a writable open. Methods
	// that would change the log return ErrReadOnly. A directory with an
	// interrupted segment swap is refused (open it writable once). The
	// options that only shape writes (segment size, sync policy, codec)
	// are ignored, except that Sync must stay SyncNone.
	ReadOnly bool

	// checkpoints, flushPool and lockHeld are package store's hooks
	// (internal/embed.Hooks, set with embed.WithHooks): the log.dir's
	// checkpoints and clean-shutdown marker instead of the directory's own
	// files, a flush pool shared with its other logs instead of a goroutine
	// of the log's own, and the log.dir lock it holds instead of one of the
	// directory's own.
	checkpoints embed.Checkpointer
	flushPool   *flushPool
	lockHeld    bool
	// raftLog is package raftlog's hook: it is the writer of a raft log
	// store's partition (refuseInRaftLog).
	raftLog bool
}

// withDefaults returns a copy of o with zero fields replaced by defaults.
func (o Options) withDefaults() Options {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.SegmentAge == 0 {
		o.SegmentAge = DefaultSegmentAge
	}
	if o.IndexIntervalBytes == 0 {
		o.IndexIntervalBytes = DefaultIndexIntervalBytes
	}
	if o.MaxIndexBytes == 0 {
		o.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if o.MaxBatchBytes == 0 {
		o.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if o.MaxMappedIndexes == 0 {
		o.MaxMappedIndexes = DefaultMaxMappedIndexes
	}
	if o.MaxOpenSegmentFiles == 0 {
		o.MaxOpenSegmentFiles = DefaultMaxOpenSegmentFiles
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = RealClock
	}
	return o
}

// Validate reports the first option that cannot work, as an error wrapping
// ErrInvalidOptions. Zero values are valid: they mean the defaults.
func (o Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
	}
	switch {
	case o.SegmentBytes < 0 || (o.SegmentBytes > 0 && o.SegmentBytes < minSegmentBytes):
		return bad("SegmentBytes %d: must be at least %d", o.SegmentBytes, minSegmentBytes)
	case o.SegmentBytes > defaults.MaxSegmentBytes:
		return bad("SegmentBytes %d: must be at most %d (index positions are 32-bit)", o.SegmentBytes, defaults.MaxSegmentBytes)
	case o.SegmentAge < 0:
		return bad("SegmentAge %v: must not be negative", o.SegmentAge)
	case o.SegmentJitter < 0:
		return bad("SegmentJitter %v: must not be negative", o.SegmentJitter)
	case o.IndexIntervalBytes < 0:
		return bad("IndexIntervalBytes %d: must not be negative", o.IndexIntervalBytes)
	case o.MaxIndexBytes < 0 || (o.MaxIndexBytes > 0 && o.MaxIndexBytes < defaults.MinIndexBytes):
		return bad("MaxIndexBytes %d: must hold at least two time-index entries (%d bytes)", o.MaxIndexBytes, defaults.MinIndexBytes)
	case o.MaxIndexBytes > defaults.MaxSegmentBytes:
		// The bound a store's segment.index.bytes has: an index larger
		// than any segment indexes nothing more, and is reserved on disk
		// and mapped whole for every segment.
		return bad("MaxIndexBytes %d: must be at most %d", o.MaxIndexBytes, defaults.MaxSegmentBytes)
	case o.MaxBatchBytes < 0 || (o.MaxBatchBytes > 0 && o.MaxBatchBytes < record.HeaderSize):
		return bad("MaxBatchBytes %d: must be at least %d", o.MaxBatchBytes, record.HeaderSize)
	case o.MaxMappedIndexes < 0:
		return bad("MaxMappedIndexes %d: must not be negative", o.MaxMappedIndexes)
	case o.MaxOpenSegmentFiles < 0:
		return bad("MaxOpenSegmentFiles %d: must not be negative", o.MaxOpenSegmentFiles)
	case o.Compression < record.None || o.Compression > record.Zstd:
		return bad("Compression %d: unknown codec", o.Compression)
	case o.Sync < SyncNone || o.Sync > SyncPeriodic:
		return bad("Sync %d: unknown mode", o.Sync)
	case o.Sync == SyncPeriodic && o.SyncBytes <= 0 && o.SyncInterval <= 0:
		return bad("Sync periodic needs SyncBytes or SyncInterval")
	case o.SyncBytes < 0 || o.SyncInterval < 0:
		return bad("SyncBytes and SyncInterval must not be negative")
	case o.TimestampType != record.CreateTime && o.TimestampType != record.LogAppendTime:
		return bad("TimestampType %d: unknown", o.TimestampType)
	case o.LeaderEpoch < 0:
		return bad("LeaderEpoch %d: must not be negative", o.LeaderEpoch)
	case o.ReadOnly && (o.Sync != SyncNone || o.SyncBytes != 0 || o.SyncInterval != 0):
		return bad("ReadOnly with Sync %v: a read-only log writes nothing to sync", o.Sync)
	}
	return nil
}
