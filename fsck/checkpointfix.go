package fsck

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// fixCheckpointFile carries out the checkpoint fixes a check calls for,
// each in the way that keeps every record, and records what it wrote:
//
//   - a file that does not parse keeps the log's own line where that line
//     still parses (the damage is elsewhere: another partition's line, the
//     count); otherwise
//   - an unusable recovery point (no line, or negative) is rewritten as 0,
//     so the next open scans every segment; not while damage remains,
//     because until then it counts as "everything synced", which is what
//     keeps damage from being cut;
//   - an unusable log start is rewritten as the lowest offset present (the
//     first segment's base offset: where Open starts a log that has no
//     checkpoint);
//   - an unusable cleaner offset is rewritten as the log start, as the
//     cleaner itself replaces it;
//   - a log start beyond the end of the log is set to the end: every record
//     present lies below it and stays deleted, and no segment is deleted.
//
// A log.dir's file (one line per partition) keeps every other line that
// parses; the lines that do not parse are dropped (the partitions they
// belonged to then read as having no checkpoint: a full scan, a start at
// their first segment), and the report says which.
func (r *repairer) fixCheckpointFile(c *checker, p Problem) (bool, error) {
	if p.fix.op != fixUnusable && p.fix.op != fixLogStart {
		return false, nil
	}
	base := filepath.Base(p.File)
	if p.fix.op == fixUnusable && base == layout.RecoveryPointFile && len(c.damages) > 0 {
		return false, nil
	}
	path := filepath.Join(r.dir, p.File)
	data, err := vfs.ReadFileLimit(r.fs, path, maxCheckpointFile)
	if err != nil {
		return false, err
	}
	entries, dropped := salvageCheckpoint(data)
	inDir := !strings.HasPrefix(p.File, "../")
	topic, part := entryName(r.dir)
	mine := layout.Lookup(entries, topic, part, inDir)
	firstBase := int64(0)
	if len(c.logs) > 0 {
		firstBase = c.logs[0]
	}
	var value int64
	var why string
	switch {
	case p.fix.op == fixLogStart:
		value, why = c.logEnd(), "the end of the log: every record present lay below the old log start and stays deleted; no segment was deleted"
	case mine >= 0 && entries[mine].Offset >= 0:
		// The file is damaged elsewhere (another partition's line, the
		// count): this log's line still says what it said.
		value, why = entries[mine].Offset, "the log's own line, which still parses"
	case base == layout.RecoveryPointFile:
		value, why = 0, "nothing is known to be synced: the next open scans every segment"
	case base == layout.LogStartOffsetFile:
		value, why = firstBase, "the lowest offset present, the first segment's base offset; records a DeleteRecords had deleted, if the file was the only record of it, are readable again"
	default: // cleaner-offset-checkpoint
		value, why = max(c.logStart, firstBase), "the log start: a lower cleaner offset only makes more of the log dirty"
	}
	if mine >= 0 {
		entries[mine].Offset = value
		topic, part = entries[mine].Topic, entries[mine].Partition
	} else {
		entries = append(entries, layout.CheckpointEntry{Topic: topic, Partition: part, Offset: value})
	}
	if err := layout.WriteCheckpoint(r.fs, path, entries); err != nil {
		return false, err
	}
	desc := fmt.Sprintf("wrote %s with the line %q: %s", p.File, fmt.Sprintf("%s %d %d", topic, part, value), why)
	if len(entries) > 1 {
		desc += fmt.Sprintf("; kept the %d other partitions' lines", len(entries)-1)
	}
	if len(dropped) > 0 {
		desc += fmt.Sprintf("; dropped %d lines that do not parse (%s)", len(dropped), strings.Join(dropped, ", "))
	}
	r.wrote[problemKey(p)] = desc
	return true, nil
}

// entryName is the topic and partition a log's checkpoint entry names,
// as the Log names it (layout.CheckpointName), "." naming the working
// directory.
func entryName(dir string) (string, int32) {
	if b := filepath.Base(filepath.Clean(dir)); b == "." || b == ".." || b == "/" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	return layout.CheckpointName(dir)
}

// salvageCheckpoint reads what it can of a damaged offset checkpoint: every
// "topic partition offset" line after the version and count lines, with
// the lines that are neither, quoted and numbered, in dropped.
func salvageCheckpoint(data []byte) (entries []layout.CheckpointEntry, dropped []string) {
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		text := strings.TrimSpace(string(line))
		if text == "" {
			continue
		}
		if i < 2 {
			if _, err := strconv.Atoi(text); err == nil {
				continue // the version and the count
			}
		}
		if e, ok := layout.ParseCheckpointEntry(text); ok && e.Partition >= 0 {
			entries = append(entries, e)
			continue
		}
		if len(text) > 40 {
			text = text[:40] + "..."
		}
		dropped = append(dropped, fmt.Sprintf("line %d %q", i+1, text))
	}
	return entries, dropped
}
