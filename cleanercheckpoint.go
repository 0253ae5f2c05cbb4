package seglog

import (
	"errors"
	"fmt"

	"github.com/seglog/seglog/internal/sealed"
	"github.com/seglog/seglog/layout"
)

// CleanerOffsetFile is Kafka's cleaner-offset-checkpoint: where the last
// compaction round stopped. Like the other checkpoints, a Log keeps it in
// its own directory with a single entry.
const CleanerOffsetFile = layout.CleanerOffsetFile

// CleanerCheckpoint returns the cleaner-offset checkpoint: the offset up
// to which the log has been compacted. ok is false when there is none.
// A Log that package store opened keeps it in the store's one
// log.dir-level file, like its other checkpoints.
func (l *Log) CleanerCheckpoint() (offset int64, ok bool, err error) {
	if c := l.opts.checkpoints; c != nil && l.ro == nil {
		return c.Checkpoint(CleanerOffsetFile)
	}
	return readOffsetCheckpoint(l.fs, l.dir, CleanerOffsetFile)
}

// SetCleanerCheckpoint writes the cleaner-offset checkpoint atomically and
// durably. An offset past the log's end is recorded as the end: a
// truncation that ran while the round that computed it was under way
// removed what lay beyond (TruncateTo lowers the checkpoint itself, and
// this keeps a late round from raising it again).
func (l *Log) SetCleanerCheckpoint(offset int64) error {
	if l.ro != nil {
		return ErrReadOnly
	}
	l.swapMu.Lock() // serialized with TruncateTo
	defer l.swapMu.Unlock()
	// Through the store's checkpoints when set (one log.dir file).
	return l.writeOffsetCheckpoint(CleanerOffsetFile, min(offset, l.end.Load()))
}

// truncatedBelow reports whether a truncation done since run was acquired
// removed any offset below upTo (or may have: the history of truncations
// is bounded). A compaction round asks it with the end of what it mapped:
// its offset map may name, as a key's latest, a record that truncation
// removed, and rewriting older segments with that map would drop the
// record that is now the key's latest.
func (l *Log) truncatedBelow(run *sealed.Run, upTo int64) bool {
	return l.truncations.affects(run.Gen, upTo-1)
}

// lowerCleanerCheckpoint makes the cleaner-offset checkpoint at most
// offset, durably (Kafka's maybeTruncateCheckpoint): the records from
// there on are being truncated, and whatever is appended in their place
// has not been compacted. A checkpoint that does not parse is replaced by
// the log start: any value at most the lost one is safe (it only makes
// more of the log dirty), and offset might be above it. An I/O error
// reading it is returned: the caller cuts nothing. Called by TruncateTo
// with swapMu.
func (l *Log) lowerCleanerCheckpoint(offset int64) error {
	cp, ok, err := l.CleanerCheckpoint()
	switch {
	case err != nil && errors.Is(err, layout.ErrBadCheckpoint):
		offset = min(offset, l.start.Load())
	case err != nil:
		return fmt.Errorf("reading the cleaner checkpoint: %w", err)
	case !ok || cp <= offset:
		return nil
	}
	if err := l.writeOffsetCheckpoint(CleanerOffsetFile, offset); err != nil {
		return fmt.Errorf("lowering the cleaner checkpoint to %d: %w", offset, err)
	}
	return nil
}
