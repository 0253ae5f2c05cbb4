package fsck

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strings"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// maxCheckpointFile bounds checkpoint reads; a log.dir checkpoint holds
// one short line per partition.
const maxCheckpointFile = 64 << 20

// topicPartition is Kafka's topic and partition of a partition directory
// "topic-N" (layout.KafkaPartition), "." naming the working directory;
// for another name, the name and partition 0, ok false.
func topicPartition(dir string) (string, int64, bool) {
	name := filepath.Base(filepath.Clean(dir))
	if name == "." || name == ".." || name == "/" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir, name = abs, filepath.Base(abs)
		}
	}
	if topic, part, ok := layout.KafkaPartition(dir); ok {
		return topic, int64(part), true
	}
	return name, 0, false
}

// logEnd is the offset after the last valid batch: the log end offset a
// Log would have, or the last segment's base offset if there is no batch.
func (c *checker) logEnd() int64 {
	if c.next >= 0 {
		return c.next
	}
	if len(c.logs) > 0 {
		return c.logs[len(c.logs)-1]
	}
	return 0
}

// checkFiles checks the checkpoint and metadata files of the directory and,
// for a Kafka partition directory, the log.dir checkpoints in its parent.
func (c *checker) checkFiles() {
	leo := c.logEnd()
	topic, part, tpOK := topicPartition(c.dir)
	for _, name := range []string{layout.RecoveryPointFile, layout.LogStartOffsetFile, layout.CleanerOffsetFile} {
		if c.present[name] {
			if name != layout.CleanerOffsetFile {
				c.r.Layout = "seglog"
			}
			c.checkOffsetCheckpoint(name, c.path(name), topic, part, true, leo)
		}
	}
	if tpOK {
		for _, name := range []string{layout.RecoveryPointFile, layout.LogStartOffsetFile, layout.CleanerOffsetFile, layout.ReplicationOffsetFile} {
			p := filepath.Join(c.dir, "..", name)
			if _, err := c.fs.Stat(p); err != nil {
				continue
			}
			if c.r.Layout == "" {
				c.r.Layout = "kafka"
			}
			c.checkOffsetCheckpoint("../"+name, p, topic, part, false, leo)
		}
	}
	if c.present[layout.LeaderEpochFile] {
		c.checkLeaderEpochs(leo)
	}
	if c.present[layout.PartitionMetadataFile] {
		c.checkPartitionMetadata()
	}
	for _, n := range c.names {
		if f, ok, _ := layout.ParseSegmentFile(n); ok && f.Kind == layout.SnapshotSuffix && f.Temp == "" {
			c.checkSnapshot(n)
		}
	}
}

// lineAt returns the 1-based number of the line holding byte pos of data.
func lineAt(data []byte, pos int64) int {
	pos = min(max(pos, 0), int64(len(data)))
	return 1 + bytes.Count(data[:pos], []byte{'\n'})
}

// unusable says what an unusable offset checkpoint (one that does not
// parse, or names a negative offset) stops, and how repair rewrites it; the
// severity and the fix go with it. A recovery point or log start that
// cannot be read makes the Log's Open (consume, produce, clean) refuse the
// log; the cleaner's checkpoint the Log replaces itself; Kafka's high
// watermarks seglog neither reads nor writes.
func unusable(base string) (Severity, fixAction, string) {
	switch base {
	case layout.RecoveryPointFile:
		return Error, fixAction{op: fixUnusable}, "consume, produce and clean refuse the log until it is rewritten; repair rewrites the entry as 0, so that the next open scans every segment, or keeps a line for the log that still parses (once no damage remains: until then every batch counts as synced, and nothing is cut)"
	case layout.LogStartOffsetFile:
		return Error, fixAction{op: fixUnusable}, "consume, produce and clean refuse the log until it is rewritten; repair rewrites the entry as the lowest offset present (the first segment's base offset, where the log starts when it has no checkpoint), or keeps a line for the log that still parses"
	case layout.CleanerOffsetFile:
		return Warning, fixAction{op: fixUnusable}, "the cleaner replaces it with the log start at its next round; repair does the same now (a lower cleaner offset only makes more of the log dirty), or keeps a line for the log that still parses"
	}
	return Error, fixAction{}, "Kafka's replica high watermarks, which seglog neither reads nor writes: repair leaves it"
}

// checkOffsetCheckpoint checks the entry for this partition in an offset
// checkpoint file. In the partition directory (seglog) a single entry is
// this log's whatever its name; in a log.dir the line must name the topic
// and partition. A cleaner offset beyond the end of the log is no problem:
// the cleaner writes it whatever the recovery point, so a crash that loses
// unsynced batches can leave it there, and the cleaner resets it.
func (c *checker) checkOffsetCheckpoint(file, path, topic string, part int64, inDir bool, leo int64) {
	base := filepath.Base(file)
	data, err := vfs.ReadFileLimit(c.fs, path, maxCheckpointFile)
	if err != nil {
		c.addf(file, 0, KindCheckpoint, Error, fixAction{}, "cannot read: %v", err)
		return
	}
	lines, err := layout.ParseCheckpointLines(path, data)
	if ce := (*layout.CheckpointError)(nil); errors.As(err, &ce) {
		sev, fix, what := unusable(base)
		c.addf(file, int64(ce.Pos), KindCheckpoint, sev, fix, "unusable: line %d (byte %d): %s; %s", ce.Line, ce.Pos, ce.Reason, what)
		return
	}
	i := layout.Lookup(entries(lines), topic, int32(part), inDir)
	if i < 0 {
		return
	}
	line := &lines[i]
	off := line.Offset
	switch {
	case off < 0:
		sev, fix, what := unusable(base)
		c.addf(file, int64(line.Pos), KindCheckpoint, sev, fix, "unusable: line %d (byte %d): negative offset %d; %s", lineAt(data, int64(line.Pos)), line.Pos, off, what)
	case base == layout.RecoveryPointFile && off > leo && c.damageSince:
		// Damage after the last valid batch: the recovery point is the
		// evidence that it was synced (see classifyDamage).
		c.addf(file, int64(line.Pos), KindCheckpoint, Error, fixAction{op: fixCheckpoint},
			"recovery point %d is beyond the end of the log %d: data below the recovery point had been flushed and is damaged or missing", off, leo)
	case base == layout.RecoveryPointFile && off > leo:
		c.addf(file, int64(line.Pos), KindMissingData, Error, fixAction{op: fixCheckpoint},
			"data missing: offsets %d–%d: the recovery point %d on line %d says the log had synced them, but the log ends at offset %d; repair cannot bring them back and leaves this evidence as it is",
			leo, off-1, off, lineAt(data, int64(line.Pos)), leo)
	case base == layout.LogStartOffsetFile && off > leo:
		c.addf(file, int64(line.Pos), KindCheckpoint, Error, fixAction{op: fixLogStart},
			"log start offset %d (line %d) is beyond the end of the log %d: every record present lies below it, so a DeleteRecords or retention deleted them all, or the checkpoint is wrong; seglog refuses to open the log and Kafka's loader deletes every segment; repair sets the log start to the end of the log, %d, deleting no segment and bringing back no deleted record",
			off, lineAt(data, int64(line.Pos)), leo, leo)
	case base == layout.ReplicationOffsetFile && off > leo:
		c.addf(file, int64(line.Pos), KindCheckpoint, Warning, fixAction{},
			"high watermark %d is beyond the end of the log %d", off, leo)
	}
}

// checkLeaderEpochs checks leader-epoch-checkpoint ("epoch startOffset"
// lines) for order and against the epochs stamped in the batches.
func (c *checker) checkLeaderEpochs(leo int64) {
	data, err := vfs.ReadFileLimit(c.fs, c.path(layout.LeaderEpochFile), maxCheckpointFile)
	if err != nil {
		c.addf(layout.LeaderEpochFile, 0, KindLeaderEpoch, Error, fixAction{}, "cannot read: %v", err)
		return
	}
	lines, err := layout.ParseLeaderEpochs(c.path(layout.LeaderEpochFile), data)
	if ce := (*layout.CheckpointError)(nil); errors.As(err, &ce) {
		c.addf(layout.LeaderEpochFile, int64(ce.Pos), KindLeaderEpoch, Error, fixAction{}, "malformed checkpoint: %s", ce.Reason)
		return
	}
	prevEpoch, prevStart := int64(-1), int64(-1)
	for _, l := range lines {
		ep, start, at := int64(l.Epoch), l.StartOffset, int64(l.Pos)
		switch {
		case ep <= prevEpoch:
			c.addf(layout.LeaderEpochFile, at, KindLeaderEpoch, Error, fixAction{}, "epoch %d does not follow epoch %d", ep, prevEpoch)
		case start < prevStart:
			c.addf(layout.LeaderEpochFile, at, KindLeaderEpoch, Error, fixAction{}, "epoch %d starts at offset %d, before epoch %d's start %d", ep, start, prevEpoch, prevStart)
		case start > leo:
			c.addf(layout.LeaderEpochFile, at, KindLeaderEpoch, Warning, fixAction{}, "epoch %d starts at offset %d, beyond the end of the log %d", ep, start, leo)
		}
		prevEpoch, prevStart = max(prevEpoch, ep), max(prevStart, start)
	}
	start := c.dirLogStart()
	for ep, first := range c.epochs {
		// An epoch whose batches all lie below the log start is no
		// reader's business: Kafka's cache drops it, and so does a
		// raft store whose prefix delete could not remove the files.
		if int64(ep) > prevEpoch && c.epochEnd[ep] >= start {
			c.addf(layout.LeaderEpochFile, int64(len(data)), KindLeaderEpoch, Warning, fixAction{},
				"batches from offset %d carry leader epoch %d, which the checkpoint does not list", first, ep)
		}
	}
}

// dirLogStart is the log start offset of the directory's own
// log-start-offset-checkpoint (a single entry), or 0.
func (c *checker) dirLogStart() int64 {
	if !c.present[layout.LogStartOffsetFile] {
		return 0
	}
	data, err := vfs.ReadFileLimit(c.fs, c.path(layout.LogStartOffsetFile), maxCheckpointFile)
	if err != nil {
		return 0
	}
	entries, err := layout.ParseCheckpoint(c.path(layout.LogStartOffsetFile), data)
	if err != nil || len(entries) != 1 {
		return 0
	}
	return entries[0].Offset
}

// entries are the checkpoint entries of lines.
func entries(lines []layout.CheckpointLine) []layout.CheckpointEntry {
	es := make([]layout.CheckpointEntry, len(lines))
	for i, l := range lines {
		es[i] = l.CheckpointEntry
	}
	return es
}

// checkPartitionMetadata parses partition.metadata: "version: 0" and
// "topic_id: <base64 Kafka Uuid>".
func (c *checker) checkPartitionMetadata() {
	data, err := vfs.ReadFileLimit(c.fs, c.path(layout.PartitionMetadataFile), 1<<16)
	if err != nil {
		c.addf(layout.PartitionMetadataFile, 0, KindMetadata, Error, fixAction{}, "cannot read: %v", err)
		return
	}
	fields := map[string]string{}
	at := int64(0)
	for _, line := range strings.SplitAfter(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if strings.TrimSpace(line) != "" && !ok {
			c.addf(layout.PartitionMetadataFile, at, KindMetadata, Error, fixAction{}, "line %q is not \"key: value\"", strings.TrimSpace(line))
			return
		}
		fields[strings.TrimSpace(k)] = strings.TrimSpace(v)
		at += int64(len(line))
	}
	if fields["version"] != "0" {
		c.addf(layout.PartitionMetadataFile, 0, KindMetadata, Error, fixAction{}, "version %q, want 0", fields["version"])
	}
	id, err := base64.RawURLEncoding.DecodeString(fields["topic_id"])
	if err != nil || len(id) != 16 {
		c.addf(layout.PartitionMetadataFile, 0, KindMetadata, Error, fixAction{}, "topic_id %q is not a base64 16-byte Kafka Uuid", fields["topic_id"])
	}
}

// snapshotEntrySize is the size of one producer entry in a v1 snapshot.
const snapshotEntrySize = 46

// checkSnapshot verifies a producer-state snapshot: version 1, CRC-32C over
// everything after the CRC, and a size matching the entry count.
func (c *checker) checkSnapshot(name string) {
	bad := func(pos int64, format string, args ...any) {
		c.addf(name, pos, KindSnapshot, Warning, fixAction{op: fixRemove},
			"%s; Kafka deletes a corrupt snapshot and rebuilds producer state from an older one and the log", fmt.Sprintf(format, args...))
	}
	data, err := vfs.ReadFileLimit(c.fs, c.path(name), 1<<30)
	if err != nil {
		bad(0, "cannot read: %v", err)
		return
	}
	if len(data) < 10 {
		bad(0, "%d bytes, shorter than the 10-byte header", len(data))
		return
	}
	if v := int16(binary.BigEndian.Uint16(data)); v != 1 {
		bad(0, "version %d, want 1", v)
		return
	}
	if got, want := crc32.Checksum(data[6:], crc32.MakeTable(crc32.Castagnoli)), binary.BigEndian.Uint32(data[2:]); got != want {
		bad(2, "stored CRC-32C 0x%08x, computed 0x%08x", want, got)
		return
	}
	if n := int64(int32(binary.BigEndian.Uint32(data[6:]))); n < 0 || 10+n*snapshotEntrySize != int64(len(data)) {
		bad(6, "entry count %d does not match the file size %d", n, len(data))
	}
}
