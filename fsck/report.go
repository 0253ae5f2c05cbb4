package fsck

import (
	"errors"
	"fmt"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Severity says how bad a problem is.
type Severity int8

const (
	// Error is damage or an inconsistency a reader or the log's recovery
	// would trip over.
	Error Severity = iota
	// Warning is a state that loses no data and that Kafka tolerates, but
	// that a cleanly shut down log does not have (a torn tail, a leftover
	// file, an index written by an older Kafka).
	Warning
)

// String returns "error" or "warning".
func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// MarshalText renders the severity as its name, for JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Kind names a class of problem. docs/fsck.md describes each. It is
// segment.Kind, whose Scanner reports the damage kinds of a .log.
type Kind = segment.Kind

// Problem kinds.
const (
	KindTornTail           = segment.KindTornTail  // partial entry at the end of the last segment
	KindBadLength          = segment.KindBadLength // length field too small, too large, or past the end of the file
	KindBadMagic           = segment.KindBadMagic  // magic byte other than 0, 1 or 2
	KindCRC                = segment.KindCRC       // checksum mismatch
	KindBadHeader          = segment.KindBadHeader // other header damage: unknown codec, negative count
	KindBadRecords    Kind = "bad-records"         // (deep) decompression or record framing failed
	KindOffsetOrder   Kind = "offset-order"        // offsets not increasing, or below the file's base offset
	KindOffsetRange   Kind = "offset-range"        // offsets reach the next file's base offset or overflow 32 bits
	KindSegmentName   Kind = "segment-name"        // a segment-like file whose name is not 20 digits
	KindOrphanIndex   Kind = "orphan-index"        // index file without its .log
	KindLeftover      Kind = "leftover"            // .deleted, .cleaned, .swap or .tmp file
	KindIndexMissing  Kind = "index-missing"       // .index or .timeindex file absent
	KindIndexSize     Kind = "index-size"          // size not a multiple of the entry size, or absurd
	KindIndexOrder    Kind = "index-order"         // entries not increasing
	KindIndexEntry    Kind = "index-entry"         // entry not matching the batch it points at
	KindIndexContains Kind = "index-contains"      // entry names an offset inside its batch (older Kafka rule)
	KindIndexTrim     Kind = "index-untrimmed"     // sealed segment's index still preallocated
	KindIndexLast     Kind = "index-last"          // last time-index entry is not the segment's max timestamp
	KindCheckpoint    Kind = "checkpoint"          // offset checkpoint malformed or inconsistent with the segments
	KindLeaderEpoch   Kind = "leader-epoch"        // leader-epoch-checkpoint malformed or inconsistent
	KindTxnIndex      Kind = "txnindex"            // .txnindex malformed or not matching the ABORT markers
	KindSnapshot      Kind = "snapshot"            // producer snapshot malformed
	KindMetadata      Kind = "partition-metadata"  // partition.metadata malformed
	KindIO            Kind = "io"                  // a file could not be read
	KindEmptyCodec    Kind = "empty-batch-codec"   // a batch of no records naming a codec, which clients cannot read past
	// KindReadLimit is an entry the file holds whole but that is larger
	// than the read limit (Options.MaxEntryBytes), so it was not verified.
	// It is not damage: repair never cuts there.
	KindReadLimit = segment.KindReadLimit
	// KindMissingData is data the log had that is gone: an offset gap in a
	// log that was never compacted, index entries pointing past the end
	// of their .log, a recovery point beyond the end of the log. The
	// detail begins "data missing: offsets X–Y". Repair cannot bring the
	// data back and never hides the evidence.
	KindMissingData Kind = "missing-data"
	// KindDirectory is a directory inside a log's directory, which Open
	// refuses (Kafka ignores it).
	KindDirectory Kind = "directory"
)

// Problem is one finding of a check.
type Problem struct {
	// File is the file's name relative to the checked directory
	// ("00000000000000000000.log", or "../recovery-point-offset-checkpoint"
	// for a Kafka log.dir checkpoint in the parent directory).
	File string `json:"file"`
	// Position is the byte position in File the problem is about: the start
	// of the damaged batch or index entry, 0 for a problem with the whole
	// file.
	Position int64    `json:"position"`
	Kind     Kind     `json:"kind"`
	Severity Severity `json:"severity"`
	// Detail is one sentence saying what is wrong.
	Detail string `json:"detail"`
	// Repaired is set by Repair when the problem was fixed.
	Repaired bool `json:"repaired"`
	// Repair says what Repair wrote for a problem whose fix is a choice
	// (an unusable checkpoint rewritten, a log start set): the file and
	// its new contents, and why they keep every record.
	Repair string `json:"repair,omitempty"`

	fix fixAction // what Repair would do; zero = nothing
}

// String renders the problem on one line.
func (p Problem) String() string {
	s := fmt.Sprintf("%s: byte %d: %s %s: %s", p.File, p.Position, p.Severity, p.Kind, p.Detail)
	if p.Repaired {
		s += " [repaired]"
	}
	if p.Repair != "" {
		s += " (" + p.Repair + ")"
	}
	return s
}

// Stats describes what a check read.
type Stats struct {
	Segments int   `json:"segments"`
	Batches  int64 `json:"batches"`
	// Records counts the records the batch headers declare (decoded ones
	// with Options.Deep).
	Records        int64            `json:"records"`
	ControlBatches int64            `json:"control_batches"`
	LegacyEntries  int64            `json:"legacy_entries"`
	LogBytes       int64            `json:"log_bytes"`
	IndexBytes     int64            `json:"index_bytes"`
	Codecs         map[string]int64 `json:"codecs"` // batches per codec name
	// FirstOffset and LastOffset bound the offsets of the valid batches;
	// both are -1 when there are none.
	FirstOffset int64 `json:"first_offset"`
	LastOffset  int64 `json:"last_offset"`
	// MinTimestamp and MaxTimestamp bound the batches' max timestamps
	// (milliseconds); -1 when no batch has one.
	MinTimestamp int64 `json:"min_timestamp"`
	MaxTimestamp int64 `json:"max_timestamp"`
	// OtherFiles lists files fsck recognized but does not check, and files it
	// does not know.
	OtherFiles []string `json:"other_files,omitempty"`
	// Strays are the files among OtherFiles that are not a log's
	// (notes.txt): every seglog command and Kafka ignore them
	// (layout.DirLog), so they are not problems.
	Strays []string `json:"stray_files,omitempty"`
}

func newStats() Stats {
	return Stats{Codecs: map[string]int64{}, FirstOffset: -1, LastOffset: -1, MinTimestamp: -1, MaxTimestamp: -1}
}

// Add merges o into s (for totals over several directories).
func (s *Stats) Add(o Stats) {
	s.Segments += o.Segments
	s.Batches += o.Batches
	s.Records += o.Records
	s.ControlBatches += o.ControlBatches
	s.LegacyEntries += o.LegacyEntries
	s.LogBytes += o.LogBytes
	s.IndexBytes += o.IndexBytes
	if s.Codecs == nil {
		s.Codecs = map[string]int64{}
	}
	for k, v := range o.Codecs {
		s.Codecs[k] += v
	}
	s.FirstOffset = minKnown(s.FirstOffset, o.FirstOffset)
	s.LastOffset = max(s.LastOffset, o.LastOffset)
	s.MinTimestamp = minKnown(s.MinTimestamp, o.MinTimestamp)
	s.MaxTimestamp = max(s.MaxTimestamp, o.MaxTimestamp)
}

// minKnown is min where -1 means unknown.
func minKnown(a, b int64) int64 {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

// Report is the result of checking (or repairing) one partition directory.
type Report struct {
	// Dir is the directory as given to Check.
	Dir string `json:"dir"`
	// Layout is "seglog" when the offset checkpoints live in the directory,
	// "kafka" when they live in the parent (a broker's log.dir), "" when
	// neither has any.
	Layout   string    `json:"layout"`
	Problems []Problem `json:"problems"`
	Stats    Stats     `json:"stats"`
}

// Clean reports whether the check found no problem at all.
func (r *Report) Clean() bool { return len(r.Problems) == 0 }

// Unrepaired counts the problems that are still there.
func (r *Report) Unrepaired() int {
	n := 0
	for _, p := range r.Problems {
		if !p.Repaired {
			n++
		}
	}
	return n
}

// Exit codes, as fsck(8) defines them; a run over several directories ORs
// them together.
const (
	ExitClean       = 0
	ExitRepaired    = 1
	ExitUncorrected = 4
	ExitOperational = 8
)

// ExitCode returns the fsck(8) status for the report: 0 with no problems,
// 1 when every problem was repaired, 4 when some remain (warnings count:
// a torn tail left as it is is 4).
func (r *Report) ExitCode() int {
	switch {
	case len(r.Problems) == 0:
		return ExitClean
	case r.Unrepaired() == 0:
		return ExitRepaired
	}
	return ExitUncorrected
}

// ErrLocked is matched by Repair's error when a live Log, store (or Kafka
// broker) holds the directory's lock; the error names the holder its lock
// file records. It is vfs.ErrLocked, the one value for a held lock
// (seglog.ErrLocked and store.ErrLocked are it too).
var ErrLocked = vfs.ErrLocked

// ErrNotDir is returned when the path to check is not a directory.
var ErrNotDir = errors.New("fsck: not a directory")
