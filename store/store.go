package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/internal/embed"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// ErrLocked is matched by Open's error when another Store, in this
// process or another, holds the log.dir: a *HeldError, which names the
// holder. It is vfs.ErrLocked (seglog.ErrLocked), the one value for a
// held lock.
var ErrLocked = seglog.ErrLocked

// DefaultRecoveryWorkers is Options.RecoveryWorkers' default. Recovering a
// partition is mostly waiting: on reads of its unflushed tail when a power
// loss emptied the page cache, on the syncs of what recovery had to
// change. A few partitions at once overlap those waits even on one or two
// cores, and let the filesystem commit their syncs together; more than a
// few only add mapped indexes and descriptors while the disk is already
// busy. Kafka's num.recovery.threads.per.data.dir defaults to 1.
const DefaultRecoveryWorkers = 4

// Options configures a Store. The zero value is usable.
type Options struct {
	// FS is the filesystem; nil means the real one.
	FS vfs.FS
	// OffsetsPartitions is offsets.topic.num.partitions, used when the
	// store creates __consumer_offsets (default 50). An existing offsets
	// topic keeps its count, as Kafka's does.
	OffsetsPartitions int
	// OffsetsConfig, when set, is the config __consumer_offsets is
	// created with. The default is Kafka's offsets topic config:
	// cleanup.policy=compact, retention.ms=-1, segment.bytes=100 MiB and
	// flush.messages=1 (every commit durable before it is acknowledged).
	OffsetsConfig *TopicConfig
	// Clock is the time source of record timestamps, commit times and
	// the cleaner's schedule (default seglog.RealClock); tests pass a fake
	// one and call CleanOnce.
	Clock seglog.Clock
	// CleanerWorkers bounds the retention and compaction passes run at
	// once (default 1).
	CleanerWorkers int
	// RetentionCheckInterval is the time between the background
	// cleaner's rounds (Start), Kafka's log.retention.check.interval.ms
	// (default 5 minutes, cleaner.DefaultCheckInterval).
	RetentionCheckInterval time.Duration
	// DedupeBufferBytes is log.cleaner.dedupe.buffer.size: the memory of
	// the compaction offset maps, shared by the cleaner's workers and
	// allocated on the first compaction round (default Kafka's 128 MiB).
	DedupeBufferBytes int
	// FlushWorkers is how many goroutines flush all partitions in the
	// background (default 2): partitions share them instead of running a
	// flusher goroutine each.
	FlushWorkers int
	// RecoveryWorkers bounds how many partitions are opened at once where
	// the store opens many together: the offsets topic's partitions at
	// Open, read through read-only views to rebuild the groups' offsets
	// (a partition only a writable open can read is recovered there), and,
	// at Close after a crash, those the session never used, so recovered
	// (Kafka's num.recovery.threads.per.data.dir). Default
	// DefaultRecoveryWorkers.
	RecoveryWorkers int
	// MaxOpenLogs is the budget of open partition Logs (default
	// DefaultMaxOpenLogs). A partition's Log opens on first use; past the
	// budget, the least recently used idle ones are closed, to be reopened
	// when used again. An open Log holds its active segment's three files
	// (.log, .index, .timeindex, the indexes mapped), at most 4 sealed
	// segments' index and .log mappings, and at most 4 sealed segments'
	// .log descriptors, however much of the partition was read: the
	// store's descriptors stay under about 15 × MaxOpenLogs (near 3 ×
	// MaxOpenLogs while reads stay at the partitions' ends), whatever the
	// number of partitions and segments. Partitions handed out by Log or
	// Writer (not AcquireLog) stay open until Close and count against the
	// budget without being closable.
	MaxOpenLogs int
	// Logger receives recovery and maintenance messages. Default
	// slog.Default().
	Logger *slog.Logger
	// OnQuarantine, when set, is told of each quarantine file a
	// partition's recovery made (seglog.Options.OnQuarantine, with the
	// topic and partition): bytes recovery cut from the partition's log
	// but kept, byte for byte, beside its segments, because valid batches
	// followed the damage (seglog.Quarantine; each is logged as a WARN
	// too). A partition is recovered when it is first opened after a
	// crash, or at Close for those the session did not use, so the call
	// comes from the store call that opened it, before that returns, and
	// several partitions recovering at once may call it at the same time.
	// It must not call back into the Store.
	OnQuarantine func(topic string, partition int32, q seglog.Quarantine)
	// ReadOnly opens an existing store without writing anything: no lock
	// is taken, no directory, checkpoint, marker or config file is
	// created, renamed or removed, and every partition is a read-only
	// seglog.Log (seglog.Options.ReadOnly). It needs only read permission
	// and works beside a live writer, in this process or another; Refresh
	// picks up what the writer did since. Methods that would write return
	// an error wrapping ErrReadOnly. A topic being created or deleted is
	// not shown; the offsets topic missing means no group has committed.
	// A directory that holds no store is refused (ErrNotAStore): a
	// reader never creates one.
	ReadOnly bool
	// Existing makes Open refuse (ErrNotAStore) a directory that holds no
	// store yet, instead of creating one there: for callers that work on
	// a store rather than make one, so that a mistyped directory is not
	// filled with a new store's files.
	Existing bool
	// ReplicatedOffsets says the offsets topic is a cluster's replicated
	// partitions (docs/cluster-node.md, "The offsets topic"), which only
	// the replication writes, through Writer: Open does not replay it
	// (the groups' offsets are the coordinator's, read from the
	// partitions it leads), and the store never writes it itself:
	// Commit, DeleteGroup, DeleteOffsets and ResetOffsets refuse with
	// ErrReplicatedOffsets, and deleting a topic or opening a store with
	// offsets for a topic gone writes no tombstones (a record appended
	// outside raft would make the replica's log disagree with the
	// leader's). cluster.Start refuses a store opened without it.
	ReplicatedOffsets bool
	// Holder says who opens the store: once Open has the log.dir's lock
	// it writes it into the lock file, so that an Open turned away (in
	// this process or another) names the holder (HeldError). PID defaults
	// to this process's and Command to the program's name. A read-only
	// Open takes no lock and writes nothing.
	Holder Holder
}

// Holder is who holds a store's lock, as the log.dir's lock file says:
// the command, its process id and, for a server, its Kafka listener.
type Holder = layout.Holder

// HeldError is Open's error when another Store, in this process or
// another, holds the log.dir's lock. It matches ErrLocked. Holder is who
// the lock file names; HolderKnown is false when it names nobody (a
// holder that writes no name, such as an older seglog or a Kafka broker).
// Nothing was written.
type HeldError struct {
	Dir         string
	Holder      Holder
	HolderKnown bool
	// Err is the lock's own error (vfs.ErrLocked).
	Err error
}

// Error names the store and, when the lock file says, who holds it.
func (e *HeldError) Error() string {
	if !e.HolderKnown {
		return fmt.Sprintf("store: %s is locked: another process holds it (its lock file does not say which)", e.Dir)
	}
	return fmt.Sprintf("store: %s is held by %s: one writer at a time, the store is locked until it stops", e.Dir, e.Holder)
}

// Unwrap returns ErrLocked and the lock's error.
func (e *HeldError) Unwrap() []error { return []error{ErrLocked, e.Err} }

// lockStore takes the log.dir's lock and writes the holder into it, or
// says who holds it.
func lockStore(fsys vfs.FS, dir string, h Holder) (vfs.Lock, error) {
	lock, err := fsys.Lock(filepath.Join(dir, layout.LockFile))
	if err != nil {
		if h, named, held := layout.HolderOf(err); held {
			return nil, &HeldError{Dir: dir, Holder: h, HolderKnown: named, Err: err}
		}
		if errors.Is(err, fs.ErrPermission) {
			// A walk's read-only DIR said only "open DIR/.lock:
			// permission denied".
			return nil, fmt.Errorf("store: %s cannot be written by this user, and a writer takes its lock file first (the read-only commands need no write access): %w", dir, err)
		}
		if errors.Is(err, syscall.EROFS) {
			// A walk's DIR on a read-only mount said only "open
			// DIR/.lock: read-only file system".
			return nil, fmt.Errorf("store: %s is on a read-only file system, and a writer takes its lock file first (the read-only commands need no write access): %w", dir, err)
		}
		return nil, err
	}
	if h.PID == 0 {
		h.PID = os.Getpid()
	}
	if h.Command == "" && len(os.Args) > 0 {
		h.Command = filepath.Base(os.Args[0])
	}
	if err := lock.SetOwner(h.Format()); err != nil {
		return nil, errors.Join(err, lock.Close())
	}
	return lock, nil
}

// Store is a Kafka log.dir of topics and the consumer groups' offsets. Its
// methods are safe for concurrent use.
type Store struct {
	dir    string
	fs     vfs.FS
	opts   Options
	logger *slog.Logger
	lock   vfs.Lock // a read-only store's stands in (nopLock)
	ckpt   *dirCheckpoints
	clean  *cleaner.Cleaner
	pool   embed.FlushPool
	// stats counts every partition Log's rolls, flushes and recoveries
	// across their opens and closes (LogStats).
	stats seglog.Stats

	// mu guards topics and closed; topic changes take it for writing,
	// produce and commit for reading.
	mu     sync.RWMutex
	topics map[string]*topic
	closed bool
	// started: the background cleaner runs (Start); Clean refuses.
	started bool

	groups groupTable
	sticky stickyTable
	lru    lru

	// removals is the queue of directories renamed for deletion; one
	// goroutine at a time (bg) works through it.
	removeMu sync.Mutex
	removals []string
	removing bool
	bg       sync.WaitGroup

	// markerGone: the clean-shutdown marker the store opened with was
	// removed, before the session's first writable open of a partition
	// (beginWrites). markerMu guards it.
	markerMu   sync.Mutex
	markerGone bool

	readOnly bool
}

type topic struct {
	name   string
	cfg    TopicConfig
	parts  []*partition
	rotate int // guarded by Store.sticky.mu
}

// Open opens or creates the store in dir and takes the log.dir's lock.
// It finishes whatever a crash interrupted: a topic being created is
// rolled back, a topic being deleted is deleted, directories already
// renamed for deletion are removed in the background. Partition
// directories with no config file (a broker's log.dir) are adopted with
// Kafka's default config. A directory that is not a store (a partition
// directory, a subdirectory that is not a partition's, files and nothing
// of a store) is refused with ErrNotAStore before anything is written.
//
// Open writes nothing else to a store that needs none of that: it takes
// the lock (naming Options.Holder in it), reads the groups' offsets
// through read-only views of the offsets partitions, and opens no
// partition writable. A partition is opened writable when first used,
// which after a crash recovers it; the log.dir's clean-shutdown marker is
// removed, durably, just before the first, and Close writes it again, or
// leaves it as it was when no partition was opened writable.
func Open(dir string, opts Options) (*Store, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.OffsetsPartitions == 0 {
		opts.OffsetsPartitions = DefaultOffsetsPartitions
	}
	if err := validatePartitions(opts.OffsetsPartitions); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = seglog.RealClock
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxOpenLogs <= 0 {
		opts.MaxOpenLogs = DefaultMaxOpenLogs
	}
	if opts.RecoveryWorkers <= 0 {
		opts.RecoveryWorkers = DefaultRecoveryWorkers
	}
	if opts.ReadOnly {
		return openReadOnly(dir, opts)
	}
	fsys := opts.FS
	if err := checkStoreDir(fsys, dir, opts.Existing); err != nil {
		return nil, err
	}
	if !opts.ReplicatedOffsets {
		if err := checkNotClusterNode(fsys, dir); err != nil {
			return nil, err
		}
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, err
	}
	lock, err := lockStore(fsys, dir, opts.Holder)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, fs: fsys, opts: opts, logger: opts.Logger, lock: lock, topics: make(map[string]*topic)}
	s.groups.init()
	s.lru.budget = opts.MaxOpenLogs
	if opts.FlushWorkers <= 0 {
		opts.FlushWorkers = 2
	}
	s.pool = embed.NewFlushPool(opts.FlushWorkers, 0)
	s.clean = cleaner.New(cleaner.Options{Workers: opts.CleanerWorkers, Clock: opts.Clock, Logger: opts.Logger,
		CheckInterval: opts.RetentionCheckInterval})
	s.clean.SetCompaction(cleaner.CompactionOptions{DedupeBufferBytes: opts.DedupeBufferBytes})
	if err := s.load(); err != nil {
		s.closeLogs()
		s.pool.Close()
		lock.Close()
		return nil, err
	}
	return s, nil
}

// ReplicatedOffsets reports whether the store was opened with
// Options.ReplicatedOffsets: its offsets topic is a cluster's.
func (s *Store) ReplicatedOffsets() bool { return s.opts.ReplicatedOffsets }

// Dir returns the store's log.dir.
func (s *Store) Dir() string { return s.dir }

// FS is the filesystem the store was opened on (Options.FS, vfs.Default
// when that was nil), for a caller that keeps its own files in Dir, as
// the server keeps meta.properties.
func (s *Store) FS() vfs.FS { return s.fs }

// DiskSpace returns the total and usable bytes of the file system holding
// the log.dir (vfs.ErrNoDiskSpace when the store's FS cannot tell).
func (s *Store) DiskSpace() (total, usable int64, err error) {
	return vfs.DiskSpace(s.fs, s.dir)
}

func (s *Store) topicFile(name string) string {
	return filepath.Join(s.dir, name+topicFileSuffix)
}

// dirScan is what a listing of the log.dir finds: the topics' config
// files, the partition directories and the directories renamed for
// deletion.
type dirScan struct {
	clean   bool // the clean-shutdown marker
	files   map[string]topicFile
	dirs    map[string][]int32
	deleted []string
}

func (s *Store) scan() (dirScan, error) {
	sc := dirScan{files: make(map[string]topicFile), dirs: make(map[string][]int32)}
	names, err := s.fs.List(s.dir)
	if err != nil {
		return sc, err
	}
	sc.clean = slices.Contains(names, layout.CleanShutdownFile)
	for _, n := range names {
		switch {
		case strings.HasSuffix(n, topicFileSuffix):
			t := strings.TrimSuffix(n, topicFileSuffix)
			if ValidateTopic(t) != nil {
				continue
			}
			data, err := vfs.ReadFileLimit(s.fs, filepath.Join(s.dir, n), 64<<10)
			if err != nil {
				if s.readOnly && errors.Is(err, fs.ErrNotExist) {
					continue // a writer removed it since the listing
				}
				return sc, err
			}
			f, err := parseTopicFile(filepath.Join(s.dir, n), data)
			if err != nil {
				return sc, err
			}
			sc.files[t] = f
		case isDeleteDir(n):
			sc.deleted = append(sc.deleted, n)
		default:
			if t, p, ok := parsePartitionDir(n); ok {
				if st, err := s.fs.Stat(filepath.Join(s.dir, n)); err == nil && st.IsDir() {
					sc.dirs[t] = append(sc.dirs[t], p)
				}
			}
		}
	}
	return sc, nil
}

// adopted is the config of a topic whose partition directories have no
// config file (a broker's log.dir): Kafka's defaults.
func adopted(t string, parts []int32) topicFile {
	f := topicFile{state: stateReady, partitions: int(slices.Max(parts)) + 1, config: DefaultTopicConfig()}
	if t == OffsetsTopic {
		f.config = offsetsTopicConfig()
	}
	return f
}

func (s *Store) load() error {
	sc, err := s.scan()
	if err != nil {
		return err
	}
	clean, files, dirs := sc.clean, sc.files, sc.dirs
	for _, n := range sc.deleted {
		s.removeInBackground(n)
	}
	if s.ckpt, err = loadCheckpoints(s.fs, s.dir, clean); err != nil {
		return err
	}
	// Directories with no config file: a broker's topic, adopted.
	for t, ps := range dirs {
		if _, ok := files[t]; ok {
			continue
		}
		f := adopted(t, ps)
		if err := vfs.WriteFileAtomic(s.fs, s.topicFile(t), f.format()); err != nil {
			return err
		}
		files[t] = f
	}
	for t, f := range files {
		switch f.state {
		case stateCreating, stateDeleting:
			// Never acknowledged, or acknowledged as deleted: either way
			// the topic goes.
			if err := s.finishDelete(t, dirs[t]); err != nil {
				return err
			}
			continue
		}
		var extra []int32
		for _, p := range dirs[t] {
			if int(p) >= f.partitions {
				extra = append(extra, p) // an add-partitions never acknowledged
			}
		}
		if len(extra) > 0 {
			if err := s.renameForDelete(t, extra); err != nil {
				return err
			}
		}
		tp := &topic{name: t, cfg: f.config}
		s.topics[t] = tp
		if err := s.newPartitions(tp, 0, f.partitions); err != nil {
			return err
		}
	}
	if _, ok := s.topics[OffsetsTopic]; !ok {
		cfg := offsetsTopicConfig()
		if s.opts.OffsetsConfig != nil {
			cfg = *s.opts.OffsetsConfig
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		if err := s.createTopic(OffsetsTopic, s.opts.OffsetsPartitions, cfg); err != nil {
			return err
		}
	}
	if err := s.ckpt.writeMissing(); err != nil {
		return err
	}
	if s.opts.ReplicatedOffsets {
		return nil // the offsets are the cluster coordinator's, not the store's
	}
	// Read, not opened writable: the marker stays until a partition is
	// (beginWrites).
	if err := s.replayGroups(); err != nil {
		return err
	}
	// A crash between a topic's deletion and its tombstones leaves
	// offsets for a topic that is gone.
	var gone []string
	for _, m := range s.groups.m {
		for k := range m {
			if _, ok := s.topics[k.topic]; !ok && !slices.Contains(gone, k.topic) {
				gone = append(gone, k.topic)
			}
		}
	}
	for _, t := range gone {
		if err := s.forgetTopicLocked(t); err != nil {
			return err
		}
	}
	return nil
}

// offsetsTopicConfig is the internal topic's config from Kafka's
// defaults.
func offsetsTopicConfig() TopicConfig { return OffsetsTopicConfig(DefaultTopicConfig()) }

// OffsetsTopicConfig is the config __consumer_offsets is created with
// when base is the broker-level default other topics inherit (a server's
// --config): base, with the offsets topic's own keys over it, as Kafka
// creates it: compacted (the last commit of each group, topic and
// partition survives, and a deleted group's tombstones go after
// delete.retention.ms), never deleted by time, 100 MiB segments, and
// every commit durable before it is acknowledged. Everything else, such
// as min.insync.replicas or max.message.bytes, is base's, as a Kafka
// broker's defaults reach the offsets topic. Pass the result as
// Options.OffsetsConfig.
func OffsetsTopicConfig(base TopicConfig) TopicConfig {
	c := base
	c.CleanupPolicy = cleaner.Compact
	c.RetentionMs = -1
	c.SegmentBytes = 100 << 20 // offsets.topic.segment.bytes
	c.FlushMessages = 1        // a commit is acknowledged once durable
	for _, k := range []string{"cleanup.policy", "retention.ms", "segment.bytes", "flush.messages"} {
		c.set |= keyBit(k) // the topic's own, as Kafka creates it with them
	}
	return c
}

// renameForDelete renames partition directories to Kafka's
// topic-N.<uuid>-delete and removes them in the background.
func (s *Store) renameForDelete(t string, parts []int32) error {
	for _, p := range parts {
		var id [16]byte
		rand.Read(id[:])
		from := layout.PartitionDirName(t, p)
		to := from + "." + hex.EncodeToString(id[:]) + layout.DeleteDirSuffix
		if err := s.fs.Rename(filepath.Join(s.dir, from), filepath.Join(s.dir, to)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return err
		}
		s.removeInBackground(to)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return err
	}
	keep := make(map[int32]bool)
	for _, p := range parts {
		keep[p] = true
	}
	return s.ckpt.drop(func(k tp) bool { return k.topic != t || !keep[k.part] })
}

// finishDelete renames whatever directories a topic still has and removes
// its config file.
func (s *Store) finishDelete(t string, parts []int32) error {
	if err := s.renameForDelete(t, parts); err != nil {
		return err
	}
	if err := s.ckpt.drop(func(k tp) bool { return k.topic != t }); err != nil {
		return err
	}
	if err := s.fs.Remove(s.topicFile(t)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return s.fs.SyncDir(s.dir)
}

// removeInBackground queues a directory renamed for deletion for removal:
// its files, then itself, by one background goroutine however many
// directories wait. A failure is logged; the next Open tries again.
func (s *Store) removeInBackground(name string) {
	s.removeMu.Lock()
	defer s.removeMu.Unlock()
	s.removals = append(s.removals, name)
	if s.removing {
		return
	}
	s.removing = true
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		for {
			s.removeMu.Lock()
			if len(s.removals) == 0 {
				s.removing = false
				s.removeMu.Unlock()
				return
			}
			name := s.removals[0]
			s.removals = s.removals[1:]
			s.removeMu.Unlock()
			if err := removeDir(s.fs, filepath.Join(s.dir, name)); err != nil {
				s.logger.Warn("store: removing a deleted partition failed", "dir", name, "err", err)
			}
		}
	}()
}

func removeDir(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, n := range names {
		if err := fsys.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return fsys.Remove(dir)
}

// Start runs the store's cleaner in the background until ctx ends or Close:
// every Options.RetentionCheckInterval (default 5 minutes, Kafka's
// log.retention.check.interval.ms) a round over
// every partition, retention and, for a compacting topic, compaction, as Clean
// does once. A second Start returns cleaner.ErrRunning; a read-only store
// refuses it (ErrReadOnly).
func (s *Store) Start(ctx context.Context) error {
	if s.readOnly {
		return s.errReadOnly("start the cleaner")
	}
	if err := s.clean.Start(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	return nil
}

// CleanOnce runs one round of the store's cleaner now, over every
// partition of every topic: retention and, for a compacting topic,
// compaction, as each of Start's rounds does (rounds take turns). It was
// called RunRetention, a name that hid the compaction. A
// partition's failure does not fail it (Clean reports each partition's
// outcome); it returns ctx's error when ctx ends first, and ErrReadOnly on a
// read-only store.
func (s *Store) CleanOnce(ctx context.Context) error {
	if s.readOnly {
		return s.errReadOnly("clean")
	}
	return s.clean.RunOnce(ctx)
}

func (s *Store) closeLogs() error {
	var errs []error
	for _, t := range s.topics {
		errs = append(errs, s.shutPartitions(t.parts, ErrClosed))
	}
	return errors.Join(errs...)
}

// Close closes every partition (each records its recovery point and log
// start in the log.dir's checkpoints), writes the log.dir's clean-shutdown
// marker if all went well, waits for background deletions and releases
// the lock.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closed = true
	s.mu.Unlock()
	if s.readOnly {
		return s.closeLogs()
	}
	s.clean.Stop()
	s.recoverRest()
	err := s.closeLogs()
	if err == nil {
		err = s.ckpt.flush()
	}
	s.pool.Close()
	s.bg.Wait()
	switch {
	case err != nil:
	case s.ckpt.clean && !s.wroteSince():
		// No partition was opened writable: the marker the store opened
		// with still stands for every one of them, untouched.
	default:
		if n := s.unrecovered(); n > 0 {
			// The marker would make the next Open trust them.
			s.logger.Warn("store: partitions not recovered since a crash (never opened in this session); the next Open recovers them", "partitions", n)
		} else {
			err = vfs.WriteFileAtomic(s.fs, filepath.Join(s.dir, layout.CleanShutdownFile), []byte(`{"version":0,"brokerEpoch":-1}`))
		}
	}
	return errors.Join(err, s.lock.Close())
}

// recoverRest opens, so recovers, every partition a crash left that this
// session never used, so that the clean-shutdown marker can vouch for all
// of them (Kafka recovers every log at startup; the store does it lazily,
// and the rest at Close), Options.RecoveryWorkers at a time. Only after a
// crash, so a clean session's Close opens nothing. A partition that fails
// to open is logged and keeps the marker from being written; the others
// are recovered all the same.
func (s *Store) recoverRest() {
	if s.ckpt.clean {
		return
	}
	var rest []*partition
	for _, t := range s.topics {
		for _, p := range t.parts {
			if !p.recovered() {
				rest = append(rest, p)
			}
		}
	}
	for i, err := range s.openParallel(rest) {
		if err != nil {
			s.logger.Warn("store: recovering a partition at Close failed", "dir", rest[i].dir(), "err", err)
		}
	}
}

// openParallel opens each partition's Log (recovering it if the store
// opened after a crash), Options.RecoveryWorkers at a time, and leaves it
// open, idle, for the budget of open Logs to keep or close. errs[i] is
// parts[i]'s error (naming the partition); one partition's failure stops
// none of the others.
func (s *Store) openParallel(parts []*partition) (errs []error) {
	errs = make([]error, len(parts))
	s.parallel(len(parts), func(i int) {
		errs[i] = parts[i].with(func(*seglog.Log) error { return nil })
	})
	return errs
}

// unrecovered counts the partitions the clean-shutdown marker must not
// vouch for: opened lazily, a partition left by a crash is recovered only
// when first used, and one whose close failed is in doubt.
func (s *Store) unrecovered() int {
	n := 0
	for _, t := range s.topics {
		for _, p := range t.parts {
			if !p.recovered() {
				n++
			}
		}
	}
	return n
}
