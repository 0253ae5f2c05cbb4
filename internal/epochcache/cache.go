// Package epochcache is Kafka's leader-epoch cache (LeaderEpochFileCache)
// over a partition's leader-epoch-checkpoint: the first offset of each
// epoch (a raft term), in increasing order, so that the epoch at an offset
// is a binary search and no batch is read, and OffsetForLeaderEpoch can be
// answered from it (KIP-320).
//
// It is the one copy of the cache's rules, for raftlog's Store (the
// metadata log) and the replica store (a partition's raft log): an epoch
// is assigned, and saved, before the first batch of it is written, so a
// crash leaves at most an entry at the log end, which the owner drops on
// open (TruncateFromEnd); a truncation drops the epochs that start at or
// past the new end; a log start moving up drops the epochs wholly below
// it. The checkpoint is derived data: one that cannot be read is rebuilt by
// its owner from the batches' headers (Replace). The text format is
// layout's (ParseLeaderEpochs, FormatLeaderEpochs).
package epochcache

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// maxFile bounds how much of a damaged checkpoint is read.
const maxFile = 1 << 20

// Cache is one partition's leader-epoch cache. It is not safe for
// concurrent use: its owner serializes calls (under the lock that orders
// its writes).
type Cache struct {
	fs      vfs.FS
	path    string
	entries []layout.EpochLine
}

// New returns an empty cache kept in dir's leader-epoch-checkpoint; Load
// reads the file.
func New(fsys vfs.FS, dir string) *Cache {
	return &Cache{fs: fsys, path: filepath.Join(dir, layout.LeaderEpochFile)}
}

// Path is the checkpoint's path.
func (c *Cache) Path() string { return c.path }

// Load reads the checkpoint; a missing one is empty. One that is too large
// or malformed (Parse) is reported as not loaded (ok false) and the cache
// is left empty: the owner rebuilds it from the batches.
func (c *Cache) Load() (ok bool, err error) {
	c.entries = nil
	data, err := vfs.ReadFileLimit(c.fs, c.path, maxFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case errors.Is(err, vfs.ErrFileTooLarge):
		return false, nil
	case err != nil:
		return false, err
	}
	entries, err := Parse(data)
	if err != nil {
		return false, nil
	}
	c.entries = entries
	return true, nil
}

// FileError is a malformed leader-epoch-checkpoint: the byte position of
// the offending line and what is wrong with it. It matches
// layout.ErrBadCheckpoint.
type FileError struct {
	// At is the byte position of the offending line.
	At int
	// Reason says what is wrong there.
	Reason string
}

// Error names the file, the byte and the reason.
func (e *FileError) Error() string {
	return fmt.Sprintf("%s at byte %d: %s", layout.LeaderEpochFile, e.At, e.Reason)
}

// Unwrap makes it match layout.ErrBadCheckpoint.
func (e *FileError) Unwrap() error { return layout.ErrBadCheckpoint }

// Parse parses Kafka's leader-epoch-checkpoint (the text is
// layout.ParseLeaderEpochs') and accepts only what the cache may hold:
// epochs increasing and offsets never decreasing, both non-negative. An
// empty file, which Kafka reads as no epochs, is refused too: the cache
// always writes its version and count, so an empty one is rebuilt from
// the batches. Errors are *FileError.
func Parse(data []byte) ([]layout.EpochLine, error) {
	if len(data) == 0 {
		return nil, &FileError{At: 0, Reason: `version line "", want 0`}
	}
	lines, err := layout.ParseLeaderEpochs(layout.LeaderEpochFile, data)
	if ce := (*layout.CheckpointError)(nil); errors.As(err, &ce) {
		return nil, &FileError{At: ce.Pos, Reason: ce.Reason}
	}
	if err != nil {
		return nil, &FileError{At: 0, Reason: err.Error()}
	}
	out := make([]layout.EpochLine, 0, len(lines))
	for _, l := range lines {
		if l.Epoch < 0 || l.StartOffset < 0 {
			return nil, &FileError{At: l.Pos, Reason: fmt.Sprintf("epoch %d at offset %d: epoch or offset is negative", l.Epoch, l.StartOffset)}
		}
		if k := len(out); k > 0 && (l.Epoch <= out[k-1].Epoch || l.StartOffset < out[k-1].StartOffset) {
			return nil, &FileError{At: l.Pos, Reason: fmt.Sprintf("epoch %d at offset %d does not follow epoch %d at offset %d", l.Epoch, l.StartOffset, out[k-1].Epoch, out[k-1].StartOffset)}
		}
		out = append(out, layout.EpochLine{Epoch: l.Epoch, StartOffset: l.StartOffset})
	}
	return out, nil
}

// Save writes the cache with the same atomic replace as every checkpoint.
func (c *Cache) Save() error {
	return vfs.WriteFileAtomic(c.fs, c.path, layout.FormatLeaderEpochs(c.entries))
}

// Entries returns a copy of the cache's entries, oldest first.
func (c *Cache) Entries() []layout.EpochLine { return slices.Clone(c.entries) }

// Len is the number of epochs held.
func (c *Cache) Len() int { return len(c.entries) }

// Last returns the newest epoch, -1 when there is none.
func (c *Cache) Last() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// Assign records that epoch starts at offset, saved before the batch is
// written (a crash between the two leaves an entry at the log end, which
// the owner's open drops). An epoch not above Last changes nothing and
// reports false: the owner decides whether a lower one is an error. A
// failed save leaves the cache as it was.
func (c *Cache) Assign(epoch int32, offset int64) (bool, error) {
	if epoch <= c.Last() {
		return false, nil
	}
	c.entries = append(c.entries, layout.EpochLine{Epoch: epoch, StartOffset: offset})
	if err := c.Save(); err != nil {
		c.entries = c.entries[:len(c.entries)-1]
		return false, err
	}
	return true, nil
}

// EpochAt returns the epoch holding offset, -1 if none does.
func (c *Cache) EpochAt(offset int64) int32 {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > offset })
	if i == 0 {
		return -1
	}
	return c.entries[i-1].Epoch
}

// TruncateFromEnd drops the epochs that start at or after end, as Kafka
// does when a replica truncates; it saves only if something was dropped.
func (c *Cache) TruncateFromEnd(end int64) error {
	k := len(c.entries)
	for k > 0 && c.entries[k-1].StartOffset >= end {
		k--
	}
	if k == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:k]
	return c.Save()
}

// TruncateFromStart drops epochs wholly below start and moves the first
// kept one's start up to it, as Kafka does when the log start advances;
// it saves only if that changed something.
func (c *Cache) TruncateFromStart(start int64) error {
	kept, changed := fromStart(c.entries, start)
	if !changed {
		return nil
	}
	c.entries = kept
	return c.Save()
}

// EntriesFrom returns a copy of the entries as TruncateFromStart(start)
// would leave them, saving nothing: what a reader answers from once the
// log start moved, before the owner's next write trims the file.
func (c *Cache) EntriesFrom(start int64) []layout.EpochLine {
	if kept, changed := fromStart(c.entries, start); changed {
		return kept
	}
	return slices.Clone(c.entries)
}

// fromStart is Kafka's truncation from the start over entries: a new
// slice without the epochs wholly below start, the first kept one moved
// up to start, and true; or entries and false when that changes nothing.
func fromStart(entries []layout.EpochLine, start int64) ([]layout.EpochLine, bool) {
	i := sort.Search(len(entries), func(i int) bool { return entries[i].StartOffset > start })
	// entries[i-1] holds start; those before it end below start.
	if i == 0 || (i == 1 && entries[0].StartOffset == start) {
		return entries, false
	}
	kept := slices.Clone(entries[i-1:])
	kept[0].StartOffset = start
	return kept, true
}

// Clear empties the cache (the log was emptied); it saves only if it held
// something.
func (c *Cache) Clear() error {
	if len(c.entries) == 0 {
		return nil
	}
	c.entries = nil
	return c.Save()
}

// Replace sets the cache to entries (rebuilt from the batches by the
// owner) and saves it.
func (c *Cache) Replace(entries []layout.EpochLine) error {
	c.entries = slices.Clone(entries)
	return c.Save()
}
