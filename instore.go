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
