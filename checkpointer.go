package seglog

import (
	"time"

	"github.com/seglog/seglog/internal/embed"
)

// The store's hooks (internal/embed) reach the unexported fields of
// Options and the unexported flush pool through these.
func init() {
	embed.WithHooks = func(o any, h embed.Hooks) any {
		opts := o.(Options)
		opts.checkpoints = h.Checkpoints
		opts.flushPool, _ = h.FlushPool.(*flushPool)
		opts.lockHeld = h.LockHeld
		opts.raftLog = h.RaftLog
		return opts
	}
	embed.NewFlushPool = func(workers int, tick time.Duration) embed.FlushPool {
		return newFlushPool(workers, tick)
	}
}

// dirState reads the last shutdown's state from the embedder's
// Checkpointer (embed.Hooks) when there is one, else from the directory's
// files (readDirState).
func (l *Log) dirState(names []string) (dirState, error) {
	c := l.opts.checkpoints
	if c == nil {
		return readDirState(l.fs, l.dir, names)
	}
	var st dirState
	st.Clean = c.CleanShutdown()
	rp, _, err := c.Checkpoint(RecoveryPointFile)
	if err != nil {
		return st, err
	}
	st.RecoveryPoint = rp
	if st.LogStart, st.HaveLogStart, err = c.Checkpoint(LogStartOffsetFile); err != nil {
		return st, err
	}
	return st, nil
}

// writeOffsetCheckpoint records one of the log's checkpoints, through the
// Checkpointer when there is one.
func (l *Log) writeOffsetCheckpoint(name string, off int64) error {
	if c := l.opts.checkpoints; c != nil {
		return c.SetCheckpoint(name, off)
	}
	return writeOffsetCheckpoint(l.fs, l.dir, name, off)
}
