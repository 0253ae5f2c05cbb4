package layout

import (
	"bytes"
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seglog/seglog/vfs"
)

// Checkpoint and marker file names, as Kafka names them. Kafka keeps the
// offset checkpoints once per log directory with one line per partition;
// a seglog Log keeps them inside its partition directory with a single
// entry, and reads a Kafka log.dir's lines for its own partition.
const (
	RecoveryPointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetFile = "log-start-offset-checkpoint"
	CleanShutdownFile  = ".kafka_cleanshutdown"
	LockFile           = ".lock"
	// CheckpointTmpSuffix marks a checkpoint being replaced
	// (WriteCheckpoint writes name+".tmp", then renames it).
	CheckpointTmpSuffix = ".tmp"
	checkpointVersion   = 0
)

// CheckpointEntry is one line of an offset checkpoint file: a topic, a
// partition and an offset.
type CheckpointEntry struct {
	Topic     string
	Partition int32
	Offset    int64
}

// ErrBadCheckpoint reports a checkpoint file that does not parse.
var ErrBadCheckpoint = errors.New("layout: malformed checkpoint file")

// CheckpointError is a checkpoint file that does not parse (it matches
// ErrBadCheckpoint): where, and why. Its message names the file and line
// and says how to rewrite it, since every command that opens the log
// refuses it until then: fsck --repair rewrites an unusable checkpoint in
// the way that keeps every record (docs/fsck.md).
type CheckpointError struct {
	Path string
	// Line is the 1-based line at fault, 0 for the file as a whole (too
	// large to be a checkpoint); Pos the byte position where it starts.
	Line, Pos int
	Reason    string
	// Err is the underlying error, if any (vfs.ErrFileTooLarge).
	Err error
}

// Error names the file, the line and the way out.
func (e *CheckpointError) Error() string {
	where := e.Path
	if e.Line > 0 {
		where = fmt.Sprintf("%s line %d, at byte %d", e.Path, e.Line, e.Pos)
	}
	return fmt.Sprintf("%v: %s: %s; run \"seglog fsck --repair %s\" to rewrite it, keeping every record",
		ErrBadCheckpoint, where, e.Reason, filepath.Dir(e.Path))
}

// Unwrap makes the error match ErrBadCheckpoint, and Err.
func (e *CheckpointError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrBadCheckpoint, e.Err}
	}
	return []error{ErrBadCheckpoint}
}

// MaxCheckpointBytes bounds how much of a checkpoint file is read, so a
// damaged or hostile file cannot make us allocate by its size.
const MaxCheckpointBytes = 1 << 20

// ReadCheckpoint parses an offset checkpoint file in Kafka's text format:
// a version line (0), a count line, then count lines "topic partition
// offset". An empty file has no entries. A missing file returns an error
// matching fs.ErrNotExist.
func ReadCheckpoint(fs vfs.FS, path string) ([]CheckpointEntry, error) {
	buf, err := vfs.ReadFileLimit(fs, path, MaxCheckpointBytes)
	if errors.Is(err, vfs.ErrFileTooLarge) {
		return nil, &CheckpointError{Path: path, Reason: err.Error(), Err: err}
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
		pos = min(pos, len(data))
		return &CheckpointError{Path: path, Line: 1 + bytes.Count(data[:pos], []byte{'\n'}), Pos: pos, Reason: fmt.Sprintf(format, args...)}
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

// PartitionOffset returns the offset on the line for topic and partition
// of a multi-partition checkpoint file (a Kafka log.dir's), ok=false when
// the file is missing or has no such line.
func PartitionOffset(fs vfs.FS, path, topic string, partition int32) (int64, bool, error) {
	entries, err := ReadCheckpoint(fs, path)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return 0, false, nil
		}
		return 0, false, err
	}
	for _, e := range entries {
		if e.Topic == topic && e.Partition == partition {
			return e.Offset, true, nil
		}
	}
	return 0, false, nil
}

// CleanerOffsetFile is Kafka's cleaner-offset-checkpoint, where compaction
// stopped; a seglog Log keeps it in its directory with a single entry.
const CleanerOffsetFile = "cleaner-offset-checkpoint"
