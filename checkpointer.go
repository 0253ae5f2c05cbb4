package seglog

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
	// (RecoveryPointFile or LogStartOffsetFile) for this log, ok=false
	// when there is none.
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

// dirState reads the last shutdown's state from the Checkpointer when
// there is one, else from the directory's files (readDirState).
func (l *Log) dirState(names []string) (dirState, error) {
	c := l.opts.Checkpoints
	if c == nil {
		return readDirState(l.fs, l.dir, names)
	}
	var st dirState
	st.clean = c.CleanShutdown()
	rp, _, err := c.Checkpoint(RecoveryPointFile)
	if err != nil {
		return st, err
	}
	st.rp = rp
	if st.logStart, st.haveLogStart, err = c.Checkpoint(LogStartOffsetFile); err != nil {
		return st, err
	}
	return st, nil
}

// writeOffsetCheckpoint records one of the log's checkpoints, through the
// Checkpointer when there is one.
func (l *Log) writeOffsetCheckpoint(name string, off int64) error {
	if c := l.opts.Checkpoints; c != nil {
		return c.SetCheckpoint(name, off)
	}
	return writeOffsetCheckpoint(l.fs, l.dir, name, off)
}
