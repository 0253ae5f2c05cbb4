package seglog

import "github.com/seglog/seglog/layout"

// CleanerOffsetFile is Kafka's cleaner-offset-checkpoint: where the last
// compaction round stopped. Like the other checkpoints, a Log keeps it in
// its own directory with a single entry.
const CleanerOffsetFile = layout.CleanerOffsetFile

// CleanerCheckpoint returns the cleaner-offset checkpoint: the offset up
// to which the log has been compacted. ok is false when there is none.
// A Log opened with Options.Checkpoints keeps it there (a store's one
// log.dir-level file), like its other checkpoints.
func (l *Log) CleanerCheckpoint() (offset int64, ok bool, err error) {
	if c := l.opts.Checkpoints; c != nil && l.ro == nil {
		return c.Checkpoint(CleanerOffsetFile)
	}
	return readOffsetCheckpoint(l.fs, l.dir, CleanerOffsetFile)
}

// SetCleanerCheckpoint writes the cleaner-offset checkpoint atomically and
// durably.
func (l *Log) SetCleanerCheckpoint(offset int64) error {
	if l.ro != nil {
		return ErrReadOnly
	}
	return l.writeOffsetCheckpoint(CleanerOffsetFile, offset) // through Options.Checkpoints when set
}
