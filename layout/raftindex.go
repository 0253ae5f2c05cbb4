package layout

import (
	"bytes"
	"fmt"
	"strconv"
)

// RaftIndexFile is the raft-index checkpoint a replicated partition keeps
// beside its segments (package internal/cluster/replica): the raft index
// of chosen batches. Kafka's loader, like layout's classification, takes
// it for a stray file and ignores it.
const RaftIndexFile = "raft-index-checkpoint"

// RaftStateFile is the raft state a replicated partition keeps beside its
// segments (package internal/cluster/replica): raft's HardState and
// ConfState, checksummed. Like RaftIndexFile it is a stray file to Kafka
// and to layout's classification.
const RaftStateFile = "raft-state"

// IndexLine is an entry of a raft-index checkpoint: the raft index of the
// batch at Offset, the term of the entry before it (Index-1), which raft
// asks for once the entries below Index are gone, and the byte position of
// its line.
type IndexLine struct {
	Index  uint64
	Offset int64
	Term   uint64
	Pos    int
}

// ParseRaftIndex parses the contents of a raft-index checkpoint: Kafka's
// checkpoint text (a version line, a count line) with lines "index offset
// term", three 64-bit numbers, the index and term unsigned. It checks the text only: the
// order of the lines is the caller's to judge. Errors are
// *CheckpointError; path is used only in them.
func ParseRaftIndex(path string, data []byte) ([]IndexLine, error) {
	var out []IndexLine
	err := parseCheckpointText(path, data, 3, func(n int) { out = make([]IndexLine, 0, n) }, func(line string, f []string, pos int) string {
		idx, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return fmt.Sprintf("entry %q: %q is not an unsigned number", line, f[0])
		}
		off, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return fmt.Sprintf("entry %q: %q is not a number", line, f[1])
		}
		term, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return fmt.Sprintf("entry %q: %q is not an unsigned number", line, f[2])
		}
		out = append(out, IndexLine{Index: idx, Offset: off, Term: term, Pos: pos})
		return ""
	})
	return out, err
}

// FormatRaftIndex renders a raft-index checkpoint's lines.
func FormatRaftIndex(entries []IndexLine) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(entries))
	for _, e := range entries {
		fmt.Fprintf(&b, "%d %d %d\n", e.Index, e.Offset, e.Term)
	}
	return b.Bytes()
}
