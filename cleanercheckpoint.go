package seglog

import "github.com/seglog/seglog/layout"

// CleanerOffsetFile is Kafka's cleaner-offset-checkpoint: where the last
// compaction round stopped. Like the other checkpoints, a Log keeps it in
// its own directory with a single entry.
const CleanerOffsetFile = layout.CleanerOffsetFile

// CleanerCheckpoint returns the cleaner-offset checkpoint: the offset up
// to which the log has been compacted. ok is false when there is none.
func (l *Log) CleanerCheckpoint() (offset int64, ok bool, err error) {
	return readOffsetCheckpoint(l.fs, l.dir, CleanerOffsetFile)
}

// SetCleanerCheckpoint writes the cleaner-offset checkpoint atomically and
// durably.
func (l *Log) SetCleanerCheckpoint(offset int64) error {
	if l.ro != nil {
		return ErrReadOnly
	}
	return writeOffsetCheckpoint(l.fs, l.dir, CleanerOffsetFile, offset)
}
