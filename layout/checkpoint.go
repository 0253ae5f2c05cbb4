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
	lines, err := ParseCheckpointLines(path, data)
	if err != nil || lines == nil {
		return nil, err
	}
	entries := make([]CheckpointEntry, len(lines))
	for i, l := range lines {
		entries[i] = l.CheckpointEntry
	}
	return entries, nil
}

// CheckpointLine is an entry of an offset checkpoint file and the byte
// position of its line, for a report on it.
type CheckpointLine struct {
	CheckpointEntry
	Pos int
}

// ParseCheckpointLines is ParseCheckpoint with each entry's position: the
// lines "topic partition offset", the partition a 32-bit number and the
// offset a 64-bit one, as Kafka's OffsetCheckpointFile reads them.
func ParseCheckpointLines(path string, data []byte) ([]CheckpointLine, error) {
	var out []CheckpointLine
	err := parseCheckpointText(path, data, 3, func(n int) { out = make([]CheckpointLine, 0, n) }, func(line string, f []string, pos int) string {
		e, why := parseEntry(line, f)
		if why == "" {
			out = append(out, CheckpointLine{e, pos})
		}
		return why
	})
	return out, err
}

// ParseCheckpointEntry parses one entry line of an offset checkpoint,
// "topic partition offset", as ParseCheckpoint does; ok is false when it is
// not one. Repair uses it to salvage the lines of a damaged file.
func ParseCheckpointEntry(line string) (e CheckpointEntry, ok bool) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return CheckpointEntry{}, false
	}
	e, why := parseEntry(line, f)
	return e, why == ""
}

// parseEntry parses the three fields f of line: the partition a 32-bit
// number, the offset a 64-bit one, as Kafka's OffsetCheckpointFile reads
// them. It returns why they are not an entry, "" when they are.
func parseEntry(line string, f []string) (CheckpointEntry, string) {
	part, err := strconv.ParseInt(f[1], 10, 32)
	if err != nil {
		return CheckpointEntry{}, fmt.Sprintf("entry %q: %q is not a 32-bit number", line, f[1])
	}
	off, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return CheckpointEntry{}, fmt.Sprintf("entry %q: %q is not a number", line, f[2])
	}
	return CheckpointEntry{Topic: f[0], Partition: int32(part), Offset: off}, ""
}

// EpochLine is an entry of a leader-epoch-checkpoint (LeaderEpochFile):
// the first offset written in a leader epoch (a raft term), and the byte
// position of its line.
type EpochLine struct {
	Epoch       int32
	StartOffset int64
	Pos         int
}

// ParseLeaderEpochs parses the contents of a leader-epoch-checkpoint:
// Kafka's checkpoint text with lines "epoch startOffset", a 32-bit and a
// 64-bit number (LeaderEpochCheckpointFile). It checks the text only: the
// order of the epochs is the caller's to judge. Errors are
// *CheckpointError; path is used only in them.
func ParseLeaderEpochs(path string, data []byte) ([]EpochLine, error) {
	var out []EpochLine
	err := parseCheckpointText(path, data, 2, func(n int) { out = make([]EpochLine, 0, n) }, func(line string, f []string, pos int) string {
		ep, err := strconv.ParseInt(f[0], 10, 32)
		if err != nil {
			return fmt.Sprintf("entry %q: %q is not a 32-bit number", line, f[0])
		}
		start, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return fmt.Sprintf("entry %q: %q is not a number", line, f[1])
		}
		out = append(out, EpochLine{Epoch: int32(ep), StartOffset: start, Pos: pos})
		return ""
	})
	return out, err
}

// FormatLeaderEpochs renders a leader-epoch-checkpoint's lines.
func FormatLeaderEpochs(entries []EpochLine) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

// parseCheckpointText parses Kafka's checkpoint text format (CheckpointFile):
// a version line (0), a count line, then count entry lines of nfields
// fields separated by white space, each passed to entry, which returns why
// it is wrong ("" when it is not), and nothing but blank lines after them.
// start is called with the number of entries the data can hold, at most
// the count. An empty file
// has no entries. Errors are *CheckpointError naming the line at fault.
func parseCheckpointText(path string, data []byte, nfields int, start func(n int), entry func(line string, fields []string, pos int) string) error {
	if len(data) == 0 {
		return nil // Kafka reads an empty file as no entries
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
	line, at, _ := next()
	if v, err := strconv.Atoi(strings.TrimSpace(line)); err != nil || v != checkpointVersion {
		return bad(at, "version line %q, want %d", line, checkpointVersion)
	}
	line, at, ok := next()
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if !ok || err != nil || n < 0 {
		return bad(at, "entry count line %q is not a count", line)
	}
	// A count of more entries than bytes left is refused at once. Below
	// that, the entries present are read and a shortfall is reported where
	// the data ends; every entry takes at least two bytes a field ("t 0
	// 0\n"), so room is made for no more than the data can hold, whatever
	// the count says.
	if n > len(data)-pos {
		return bad(at, "entry count %d does not fit in the file", n)
	}
	start(min(n, (len(data)-pos)/(2*nfields)+1))
	for i := 0; i < n; i++ {
		line, at, ok = next()
		if !ok {
			return bad(at, "%d entries declared, %d present", n, i)
		}
		f := strings.Fields(line)
		if len(f) != nfields {
			return bad(at, "entry %q has %d fields, want %d", line, len(f), nfields)
		}
		if why := entry(line, f, at); why != "" {
			return bad(at, "%s", why)
		}
	}
	for pos < len(data) {
		line, at, _ = next()
		if strings.TrimSpace(line) != "" {
			return bad(at, "%d entries declared, more present", n)
		}
	}
	return nil
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
	if i := Lookup(entries, topic, partition, false); i >= 0 {
		return entries[i].Offset, true, nil
	}
	return 0, false, nil
}

// Lookup returns the index in entries of the line for topic and
// partition, -1 if there is none. Of several, it is the last, as Kafka
// reads a checkpoint into a map. In a log's own directory (own), a file of
// a single entry is the log's whatever it names: a directory that was
// renamed keeps it meaningful.
func Lookup(entries []CheckpointEntry, topic string, partition int32, own bool) int {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Topic == topic && entries[i].Partition == partition {
			return i
		}
	}
	if own && len(entries) == 1 {
		return 0
	}
	return -1
}

// CleanerOffsetFile is Kafka's cleaner-offset-checkpoint, where compaction
// stopped; a seglog Log keeps it in its directory with a single entry.
const CleanerOffsetFile = "cleaner-offset-checkpoint"
