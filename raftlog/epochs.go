package raftlog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// epochEntry is one line of Kafka's leader-epoch-checkpoint: the first
// offset written in an epoch (here, a raft term).
type epochEntry struct {
	epoch int32
	start int64
}

// epochCache is the leader-epoch cache: terms in increasing order with
// their first offsets, so the term at an offset is a binary search and no
// batch is read. It is persisted, in Kafka's format, whenever it changes.
type epochCache struct {
	fs      vfs.FS
	path    string
	entries []epochEntry
}

// maxEpochFile bounds how much of a damaged checkpoint is read.
const maxEpochFile = 1 << 20

// load reads the checkpoint; a missing one is empty. A malformed one is
// reported as not loaded (ok false), and the caller rebuilds it from the
// batches: the checkpoint is derived data, never the only copy.
func (c *epochCache) load() (ok bool, err error) {
	data, err := vfs.ReadFileLimit(c.fs, c.path, maxEpochFile)
	if errors.Is(err, fs.ErrNotExist) {
		c.entries = nil
		return true, nil
	}
	if errors.Is(err, vfs.ErrFileTooLarge) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	entries, perr := parseEpochs(data)
	if perr != nil {
		return false, nil
	}
	c.entries = entries
	return true, nil
}

// epochFileError is a malformed leader-epoch-checkpoint: the byte
// position of the offending line and what is wrong with it. It matches
// layout.ErrBadCheckpoint.
type epochFileError struct {
	at     int
	reason string
}

func (e *epochFileError) Error() string {
	return fmt.Sprintf("raftlog: %s at byte %d: %s", layout.LeaderEpochFile, e.at, e.reason)
}

func (e *epochFileError) Unwrap() error { return layout.ErrBadCheckpoint }

// parseEpochs parses Kafka's leader-epoch-checkpoint (the text is
// layout.ParseLeaderEpochs') and accepts what the cache may hold: epochs
// increasing and offsets never decreasing, both non-negative. An empty
// file, which Kafka reads as no epochs, is refused too: the cache always
// writes its version and count, so an empty one is rebuilt from the
// batches. Errors are *epochFileError.
func parseEpochs(data []byte) ([]epochEntry, error) {
	if len(data) == 0 {
		return nil, &epochFileError{at: 0, reason: `version line "", want 0`}
	}
	lines, err := layout.ParseLeaderEpochs(layout.LeaderEpochFile, data)
	if ce := (*layout.CheckpointError)(nil); errors.As(err, &ce) {
		return nil, &epochFileError{at: ce.Pos, reason: ce.Reason}
	}
	out := make([]epochEntry, 0, len(lines))
	for _, l := range lines {
		if l.Epoch < 0 || l.StartOffset < 0 {
			return nil, &epochFileError{at: l.Pos, reason: fmt.Sprintf("epoch %d at offset %d: epoch or offset is negative", l.Epoch, l.StartOffset)}
		}
		if k := len(out); k > 0 && (l.Epoch <= out[k-1].epoch || l.StartOffset < out[k-1].start) {
			return nil, &epochFileError{at: l.Pos, reason: fmt.Sprintf("epoch %d at offset %d does not follow epoch %d at offset %d", l.Epoch, l.StartOffset, out[k-1].epoch, out[k-1].start)}
		}
		out = append(out, epochEntry{l.Epoch, l.StartOffset})
	}
	return out, nil
}

// formatEpochs renders entries in Kafka's leader-epoch-checkpoint format.
func formatEpochs(entries []epochEntry) []byte {
	lines := make([]layout.EpochLine, len(entries))
	for i, e := range entries {
		lines[i] = layout.EpochLine{Epoch: e.epoch, StartOffset: e.start}
	}
	return layout.FormatLeaderEpochs(lines)
}

// save writes the cache with the same atomic replace as every checkpoint.
func (c *epochCache) save() error {
	return vfs.WriteFileAtomic(c.fs, c.path, formatEpochs(c.entries))
}

// last returns the newest epoch, -1 when there is none.
func (c *epochCache) last() int32 {
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].epoch
}

// assign records that epoch starts at offset, before the batch is written:
// a crash between the two leaves an entry at the log end, which open
// drops.
func (c *epochCache) assign(epoch int32, offset int64) error {
	if epoch == c.last() {
		return nil
	}
	if epoch < c.last() {
		return fmt.Errorf("%w: term %d after term %d (terms never decrease along a raft log)", ErrBadEntry, epoch, c.last())
	}
	c.entries = append(c.entries, epochEntry{epoch, offset})
	return c.save()
}

// termAt returns the epoch holding offset, -1 if none does.
func (c *epochCache) termAt(offset int64) int32 {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].start > offset })
	if i == 0 {
		return -1
	}
	return c.entries[i-1].epoch
}

// truncateFromEnd drops epochs that start at or after end, as Kafka does
// when a replica truncates.
func (c *epochCache) truncateFromEnd(end int64) error {
	k := len(c.entries)
	for k > 0 && c.entries[k-1].start >= end {
		k--
	}
	if k == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:k]
	return c.save()
}

// truncateFromStart drops epochs wholly below start and moves the first
// kept one's start up to it, as Kafka does when the log start advances.
func (c *epochCache) truncateFromStart(start int64) error {
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].start > start })
	// entries[i-1] holds start; those before it end below start.
	if i == 0 || (i == 1 && c.entries[0].start == start) {
		return nil
	}
	kept := append([]epochEntry(nil), c.entries[i-1:]...)
	kept[0].start = start
	c.entries = kept
	return c.save()
}

// clear empties the cache (the log was emptied).
func (c *epochCache) clear() error {
	if len(c.entries) == 0 {
		return nil
	}
	c.entries = nil
	return c.save()
}

func epochPath(part string) string { return filepath.Join(part, layout.LeaderEpochFile) }
