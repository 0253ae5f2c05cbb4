package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/seglog/seglog/vfs"
)

// Checkpoint and marker file names, as Kafka names them. Kafka keeps the
// offset checkpoints once per log directory with one line per partition;
// a seglog Log owns exactly one partition directory, so it keeps them inside
// that directory with a single entry (docs/format.md).
const (
	RecoveryPointFile   = "recovery-point-offset-checkpoint"
	LogStartOffsetFile  = "log-start-offset-checkpoint"
	CleanShutdownFile   = ".kafka_cleanshutdown"
	LockFile            = ".lock"
	checkpointVersion   = 0
	checkpointTmpSuffix = ".tmp"
)

// CheckpointEntry is one line of an offset checkpoint file: a topic, a
// partition and an offset.
type CheckpointEntry struct {
	Topic     string
	Partition int32
	Offset    int64
}

// ErrBadCheckpoint reports a checkpoint file that does not parse.
var ErrBadCheckpoint = errors.New("seglog: malformed checkpoint file")

// maxCheckpointBytes bounds how much of a checkpoint file is read, so a
// damaged or hostile file cannot make us allocate by its size.
const maxCheckpointBytes = 1 << 20

// ReadCheckpoint parses an offset checkpoint file in Kafka's text format:
// a version line (0), a count line, then count lines "topic partition
// offset". An empty file has no entries. A missing file returns an error
// matching fs.ErrNotExist.
func ReadCheckpoint(fs vfs.FS, path string) ([]CheckpointEntry, error) {
	buf, err := vfs.ReadFileLimit(fs, path, maxCheckpointBytes)
	if errors.Is(err, vfs.ErrFileTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrBadCheckpoint, err)
	}
	if err != nil {
		return nil, err
	}
	return ParseCheckpoint(path, buf)
}

// ParseCheckpoint parses the contents of an offset checkpoint file; path is
// used only in errors, which carry the byte position of the bad line.
func ParseCheckpoint(path string, data []byte) ([]CheckpointEntry, error) {
	if len(data) == 0 {
		return nil, nil
	}
	bad := func(pos int, format string, args ...any) error {
		return fmt.Errorf("%w: %s at byte %d: %s", ErrBadCheckpoint, path, pos, fmt.Sprintf(format, args...))
	}
	pos := 0
	next := func() (string, int, bool) {
		if pos >= len(data) {
			return "", pos, false
		}
		start := pos
		i := bytes.IndexByte(data[pos:], '\n')
		if i < 0 {
			pos = len(data)
			return string(data[start:]), start, true
		}
		pos += i + 1
		return string(data[start : start+i]), start, true
	}
	line, at, ok := next()
	if !ok {
		return nil, bad(0, "missing version line")
	}
	if v, err := strconv.Atoi(strings.TrimSpace(line)); err != nil || v != checkpointVersion {
		return nil, bad(at, "version %q, want %d", line, checkpointVersion)
	}
	line, at, ok = next()
	if !ok {
		return nil, bad(pos, "missing entry count line")
	}
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || n < 0 {
		return nil, bad(at, "entry count %q", line)
	}
	// Every entry takes at least 6 bytes ("t 0 0\n"), so a count the data
	// cannot hold is refused before anything is allocated for it.
	if n > (len(data)-pos)/6+1 {
		return nil, bad(at, "entry count %d does not fit in the file", n)
	}
	entries := make([]CheckpointEntry, 0, n)
	for i := 0; i < n; i++ {
		line, at, ok = next()
		if !ok {
			return nil, bad(pos, "%d entries declared, %d present", n, i)
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, bad(at, "entry %q: want \"topic partition offset\"", line)
		}
		part, err1 := strconv.ParseInt(fields[1], 10, 32)
		off, err2 := strconv.ParseInt(fields[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, bad(at, "entry %q: partition or offset is not a number", line)
		}
		entries = append(entries, CheckpointEntry{Topic: fields[0], Partition: int32(part), Offset: off})
	}
	for pos < len(data) {
		line, at, _ = next()
		if strings.TrimSpace(line) != "" {
			return nil, bad(at, "%d entries declared, more present", n)
		}
	}
	return entries, nil
}

// FormatCheckpoint renders entries in Kafka's checkpoint text format.
func FormatCheckpoint(entries []CheckpointEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %d %d\n", e.Topic, e.Partition, e.Offset)
	}
	return b.Bytes()
}

// WriteCheckpoint replaces path atomically and durably: the new contents go
// to path.tmp, which is fsynced, renamed over path, and the directory is
// fsynced, so a crash leaves either the old file or the new one.
func WriteCheckpoint(fs vfs.FS, path string, entries []CheckpointEntry) error {
	return vfs.WriteFileAtomic(fs, path, FormatCheckpoint(entries))
}

// topicPartition derives the checkpoint's topic and partition from a
// partition directory name: Kafka's "topic-N" when it has that shape,
// otherwise the whole name as the topic and partition 0.
func topicPartition(dir string) (string, int32) {
	name := filepath.Base(filepath.Clean(dir))
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		if p, err := strconv.ParseInt(name[i+1:], 10, 32); err == nil && p >= 0 {
			return name[:i], int32(p)
		}
	}
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return "log", 0
	}
	return name, 0
}

// readOffsetCheckpoint returns the offset recorded for this log's partition
// in a checkpoint file, or ok=false when the file is missing or has no entry
// for it.
func readOffsetCheckpoint(fs vfs.FS, dir, name string) (off int64, ok bool, err error) {
	entries, err := ReadCheckpoint(fs, filepath.Join(dir, name))
	if err != nil {
		if isNotExist(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	topic, part := topicPartition(dir)
	for _, e := range entries {
		if e.Topic == topic && e.Partition == part {
			return e.Offset, true, nil
		}
	}
	if len(entries) == 1 {
		// A directory that was renamed keeps its single entry meaningful.
		return entries[0].Offset, true, nil
	}
	return 0, false, nil
}

func writeOffsetCheckpoint(fs vfs.FS, dir, name string, off int64) error {
	topic, part := topicPartition(dir)
	return WriteCheckpoint(fs, filepath.Join(dir, name), []CheckpointEntry{{Topic: topic, Partition: part, Offset: off}})
}

// dirState is what a directory's checkpoints and marker say about the last
// shutdown.
type dirState struct {
	clean        bool
	ownMarker    bool // clean because of this directory's own marker
	rp           int64
	logStart     int64
	haveLogStart bool
	// fromParent: the directory has no recovery-point checkpoint of its
	// own and is a Kafka partition directory whose log.dir has a line for
	// it; the recovery point, the log start and the clean marker are the
	// log.dir's.
	fromParent bool
}

// readDirState reads the recovery point, the log start offset and the
// clean-shutdown marker. A Kafka partition directory ("topic-N") keeps them
// in its parent log.dir, one line per partition: when the directory has no
// recovery-point checkpoint of its own and the parent's has a line for this
// partition, the parent's line, its log-start line and its marker count
// (a broker's data opened in place keeps the broker's recovery point, so
// damage in what the broker synced is reported, not cut). names is the
// directory's listing.
func readDirState(fs vfs.FS, dir string, names []string) (dirState, error) {
	var st dirState
	st.ownMarker = slices.Contains(names, CleanShutdownFile)
	st.clean = st.ownMarker
	rp, haveRP, err := readOffsetCheckpoint(fs, dir, RecoveryPointFile)
	if err != nil {
		return st, err
	}
	if st.logStart, st.haveLogStart, err = readOffsetCheckpoint(fs, dir, LogStartOffsetFile); err != nil {
		return st, err
	}
	if haveRP {
		st.rp = rp
		return st, nil
	}
	topic, part, ok := kafkaPartition(dir)
	if !ok {
		return st, nil
	}
	parent := filepath.Dir(filepath.Clean(dir))
	prp, ok, err := readPartitionLine(fs, filepath.Join(parent, RecoveryPointFile), topic, part)
	if err != nil || !ok {
		return st, err
	}
	st.rp, st.fromParent = prp, true
	if _, err := fs.Stat(filepath.Join(parent, CleanShutdownFile)); err == nil {
		st.clean = true
	} else if !isNotExist(err) {
		return st, err
	}
	if !st.haveLogStart {
		if st.logStart, st.haveLogStart, err = readPartitionLine(fs, filepath.Join(parent, LogStartOffsetFile), topic, part); err != nil {
			return st, err
		}
	}
	return st, nil
}

// kafkaPartition parses a Kafka partition directory name, "topic-N".
func kafkaPartition(dir string) (string, int32, bool) {
	name := filepath.Base(filepath.Clean(dir))
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, false
	}
	return name[:i], int32(p), true
}

// readPartitionLine returns the offset of the line for topic and partition
// in a multi-partition checkpoint file (a Kafka log.dir's), ok=false when
// the file is missing or has no such line.
func readPartitionLine(fs vfs.FS, path, topic string, part int32) (int64, bool, error) {
	entries, err := ReadCheckpoint(fs, path)
	if err != nil {
		if isNotExist(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	for _, e := range entries {
		if e.Topic == topic && e.Partition == part {
			return e.Offset, true, nil
		}
	}
	return 0, false, nil
}
