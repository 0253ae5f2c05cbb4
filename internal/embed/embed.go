// Package embed carries what package store, which keeps many logs in one
// Kafka log.dir, gives each seglog.Log it opens, without any of it being
// part of seglog's exported API: the log.dir's checkpoints and
// clean-shutdown marker (Checkpointer), a flush pool shared by its logs,
// and the log.dir lock it holds.
//
// The hooks live on an unexported field of seglog.Options, set with
// WithHooks; seglog sets WithHooks and NewFlushPool when it is
// initialized. They are typed any where they name seglog's types, because
// seglog imports this package and so cannot be imported by it (grpc-go
// hands its internals across packages the same way).
package embed

import "time"

// Checkpointer keeps a Log's offset checkpoints for an embedder that holds
// many logs in one Kafka log.dir (package store). Kafka keeps the
// recovery-point and log-start checkpoints once per log.dir, one line per
// partition, and one clean-shutdown marker for the whole directory; a Log
// given a Checkpointer writes none of these files itself and asks the
// Checkpointer instead, so the embedder can write the log.dir's files the
// way a broker does.
//
// The Log calls it while holding its own locks: implementations must not
// call back into the Log.
type Checkpointer interface {
	// Checkpoint returns the offset recorded under name
	// (seglog.RecoveryPointFile, LogStartOffsetFile or CleanerOffsetFile)
	// for this log, ok=false when there is none.
	Checkpoint(name string) (off int64, ok bool, err error)
	// SetCheckpoint records off under name. It must be durable when it
	// returns: the Log deletes segments and acknowledges syncs after it.
	SetCheckpoint(name string, off int64) error
	// CleanShutdown reports whether the log was closed cleanly last time
	// (the log.dir's marker existed when the embedder opened it). The
	// embedder removes that marker, durably, before anything is appended,
	// and writes it again only after every Log has been closed.
	CleanShutdown() bool
}

// FlushPool runs the background flushes of many Logs on a fixed number of
// goroutines, instead of one flusher goroutine per Log. It must outlive
// the Logs that use it.
type FlushPool interface {
	// Close stops the pool's goroutines. Logs still using it flush only
	// on Sync, a roll's synchronous paths and Close afterwards.
	Close()
}

// Hooks are what the embedder gives a Log.
type Hooks struct {
	// Checkpoints, when set, keeps the recovery point, the log start and
	// cleaner offsets and the clean-shutdown state instead of files in
	// the log's directory. A read-only open ignores it. A writable Open
	// of a partition of a log.dir is refused without it
	// (seglog.InLogDirError).
	Checkpoints Checkpointer
	// FlushPool, when set (from NewFlushPool), runs the log's background
	// flushes on a pool shared with other logs.
	FlushPool FlushPool
	// LockHeld says the embedder holds a lock covering the directory:
	// Open takes no lock of its own, so the directory has no .lock file
	// and costs no descriptor.
	LockHeld bool
	// RaftLog says the caller is package raftlog, the one writer of a
	// raft log store's partition: a writable Open of such a partition is
	// refused without it (seglog.ErrInRaftLog).
	RaftLog bool
}

var (
	// WithHooks returns opts, a seglog.Options, with h set.
	WithHooks func(opts any, h Hooks) any
	// NewFlushPool starts a pool of workers goroutines (at least 1) and
	// one for SyncPeriodic's intervals, which checks every tick (100 ms
	// when tick <= 0).
	NewFlushPool func(workers int, tick time.Duration) FlushPool
)
