package seglog

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// ErrInLogDir is matched by the error of a writable Open given a
// partition directory of a log.dir (a seglog store or a Kafka broker's
// data directory) by any caller but package store: see InLogDirError.
var ErrInLogDir = errors.New("seglog: a partition of a store is written only through the store")

// InLogDirError is a writable Open's refusal, before anything is changed,
// of a partition directory whose parent is a log.dir
// (layout.PartitionLogDir) when the caller is not the log.dir's holder
// (package store, which opens its partitions with the log.dir's
// checkpoints). Such a partition's recovery point, log start and
// clean-shutdown marker are the log.dir's lines and marker, and only the
// holder of the log.dir's lock writes it: a Log of its own would write checkpoints, a marker and a
// lock into the partition directory that the store and a broker never
// read, and could append or delete under a running server. Open the
// store instead (package store), or read the partition with
// Options.ReadOnly.
type InLogDirError struct {
	// Dir is the partition directory, LogDir the log.dir around it.
	Dir, LogDir string
	// Topic and Partition are the partition Dir holds.
	Topic     string
	Partition int32
	// Holder is who the log.dir's lock file names as its holder, and
	// HolderKnown whether it names one: its holder writes it there and
	// empties it when it lets go, so a name is a process that holds the
	// store (or one that died holding it).
	Holder      layout.Holder
	HolderKnown bool
}

// Error names the partition, its log.dir, what to do instead, and the
// holder when the lock file names one.
func (e *InLogDirError) Error() string {
	msg := fmt.Sprintf("seglog: %s is partition %s-%d of the store (Kafka log.dir) %s: only the store writes its partitions, with the log.dir's lock and checkpoints; open %s as a store, or this partition read-only",
		e.Dir, e.Topic, e.Partition, e.LogDir, e.LogDir)
	if e.HolderKnown {
		msg += fmt.Sprintf(" (%s is held by %s)", e.LogDir, e.Holder)
	}
	return msg
}

// Unwrap returns ErrInLogDir.
func (e *InLogDirError) Unwrap() error { return ErrInLogDir }

// refuseInLogDir refuses a writable Open of a partition directory of a
// log.dir unless the caller holds the log.dir (the store's checkpoints). It
// only looks: the log.dir's lock file is read, never taken.
func refuseInLogDir(fs vfs.FS, dir string, opts Options) error {
	if opts.checkpoints != nil {
		return nil
	}
	logDir, topic, part, ok, err := layout.PartitionLogDir(fs, dir)
	if err != nil || !ok {
		return err
	}
	e := &InLogDirError{Dir: dir, LogDir: logDir, Topic: topic, Partition: part}
	if data, err := vfs.ReadFileLimit(fs, filepath.Join(logDir, LockFile), 4096); err == nil {
		e.Holder, e.HolderKnown = layout.ParseHolder(data)
	}
	return e
}

// ErrInRaftLog is matched by the error of a writable Open given the
// partition of a raft log store (package raftlog: a cluster node's
// metadata log in DIR/.cluster_metadata among them) by any caller but
// raftlog. Its batches are raft entries, whose terms and indexes raft
// checks when it opens the store: a record appended or deleted beside
// raftlog leaves a log raft refuses, and with it the node (a walk's
// seglog produce into a stopped node's metadata log did). Read it with
// Options.ReadOnly.
var ErrInRaftLog = errors.New("seglog: a raft log's partition is written only by its raft log store")

// refuseInRaftLog refuses a writable Open of dir when it is a raft log
// store's partition (named layout.RaftLogPartition, beside the store's
// layout.RaftStableFile, or inside layout.ClusterMetadataDir) unless the
// caller is package raftlog. It only looks.
func refuseInRaftLog(fs vfs.FS, dir string, opts Options) error {
	if opts.raftLog || filepath.Base(filepath.Clean(dir)) != layout.RaftLogPartition {
		return nil
	}
	parent := filepath.Dir(filepath.Clean(dir))
	inMeta := filepath.Base(parent) == layout.ClusterMetadataDir
	if !inMeta {
		if _, err := fs.Stat(filepath.Join(parent, layout.RaftStableFile)); err != nil {
			return nil // no raft state beside it: an ordinary topic "raft"
		}
	}
	return fmt.Errorf("%w: %s is the partition of the raft log store %s: raft writes it, and a record written or deleted here would stop the store, and the node keeping it, from opening; read it with a read-only command (seglog consume, dump, fsck)",
		ErrInRaftLog, dir, parent)
}
