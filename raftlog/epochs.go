package raftlog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

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

// parseEpochs parses Kafka's leader-epoch-checkpoint: a version line (0),
// a count line, then count lines "epoch startOffset" with epochs
// increasing and offsets never decreasing, both non-negative. A trailing
// newline is optional; nothing but blank lines may follow the entries.
// Errors are *epochFileError.
func parseEpochs(data []byte) ([]epochEntry, error) {
	pos := 0
	next := func() (line string, at int, ok bool) {
		if pos >= len(data) {
			return "", pos, false
		}
		at = pos
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			pos += i + 1
			return string(data[at : at+i]), at, true
		}
		pos = len(data)
		return string(data[at:]), at, true
	}
	bad := func(at int, format string, args ...any) error {
		return &epochFileError{at: at, reason: fmt.Sprintf(format, args...)}
	}
	line, at, ok := next()
	if !ok || strings.TrimSpace(line) != "0" {
		return nil, bad(at, "version line %q, want 0", line)
	}
	line, at, ok = next()
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if !ok || err != nil || n < 0 {
		return nil, bad(at, "entry count line %q is not a count", line)
	}
	// Every entry takes at least 4 bytes ("0 0\n"): a count the rest of
	// the file cannot hold is refused before anything is allocated.
	if n > (len(data)-pos)/4+1 {
		return nil, bad(at, "entry count %d does not fit in the file", n)
	}
	out := make([]epochEntry, 0, n)
	for i := 0; i < n; i++ {
		line, at, ok = next()
		if !ok {
			return nil, bad(at, "%d entries declared, %d present", n, i)
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, bad(at, "entry %q: want \"epoch startOffset\"", line)
		}
		ep, err1 := strconv.ParseInt(f[0], 10, 32)
		st, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || ep < 0 || st < 0 {
			return nil, bad(at, "entry %q: epoch or offset is not a non-negative number", line)
		}
		if k := len(out); k > 0 && (int32(ep) <= out[k-1].epoch || st < out[k-1].start) {
			return nil, bad(at, "entry %q does not follow epoch %d at offset %d", line, out[k-1].epoch, out[k-1].start)
		}
		out = append(out, epochEntry{int32(ep), st})
	}
	for pos < len(data) {
		if line, at, _ = next(); strings.TrimSpace(line) != "" {
			return nil, bad(at, "%d entries declared, more present", n)
		}
	}
	return out, nil
}

// formatEpochs renders entries in Kafka's leader-epoch-checkpoint format.
func formatEpochs(entries []epochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.epoch, e.start)
	}
	return b.Bytes()
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
