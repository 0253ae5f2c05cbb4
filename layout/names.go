package layout

import (
	"fmt"
	"strconv"
	"strings"
)

// File-name suffixes of a segment's files (Kafka's LogFileUtils). The
// temporary suffixes DeletedSuffix, CleanedSuffix and SwapSuffix are appended
// to a complete file name, as in "00000000000000000042.log.deleted".
const (
	// LogSuffix names the file holding the batches.
	LogSuffix = ".log"
	// IndexSuffix names the sparse offset index.
	IndexSuffix = ".index"
	// TimeIndexSuffix names the sparse time index.
	TimeIndexSuffix = ".timeindex"
	// TxnIndexSuffix names the aborted-transaction index.
	TxnIndexSuffix = ".txnindex"
	// SnapshotSuffix names a producer-state snapshot; its number is the
	// exclusive end offset it covers, not a segment base offset.
	SnapshotSuffix = ".snapshot"
	// DeletedSuffix marks a file scheduled for deletion.
	DeletedSuffix = ".deleted"
	// CleanedSuffix marks the output of compaction not yet swapped in.
	CleanedSuffix = ".cleaned"
	// SwapSuffix marks a compacted file being swapped in.
	SwapSuffix = ".swap"
)

// offsetDigits is the width of the zero-padded base offset in file names,
// so that lexicographic order is numeric order.
const offsetDigits = 20

// FileName returns the name of the file with the given base offset and
// suffix, e.g. FileName(42, LogSuffix) = "00000000000000000042.log".
func FileName(base int64, suffix string) string {
	if base < 0 {
		return fmt.Sprintf("%0*d%s", offsetDigits, base, suffix)
	}
	var buf [offsetDigits + 24]byte
	digits := strconv.AppendInt(buf[:0], base, 10)
	n := len(digits)
	out := make([]byte, 0, offsetDigits+len(suffix))
	for i := n; i < offsetDigits; i++ {
		out = append(out, '0')
	}
	out = append(out, digits...)
	return string(append(out, suffix...))
}

// ParseFileName splits a Kafka segment-directory file name into its base
// offset and suffix. The suffix is everything after the digits, so
// "00000000000000000042.log.deleted" yields (42, ".log.deleted", true).
//
// It accepts exactly 20 decimal digits followed by one of LogSuffix,
// IndexSuffix, TimeIndexSuffix, TxnIndexSuffix or SnapshotSuffix, optionally
// followed by one of DeletedSuffix, CleanedSuffix or SwapSuffix. Anything
// else (checkpoint files, partition.metadata, stray names) yields ok =
// false, so a directory listing can be filtered with it.
func ParseFileName(name string) (base int64, suffix string, ok bool) {
	f, ok, _ := ParseSegmentFile(name)
	if !ok {
		return 0, "", false
	}
	return f.Base, f.Kind + f.Temp, true
}

// SegmentFile is a segment-directory file name split into its parts
// (ParseSegmentFile).
type SegmentFile struct {
	// Base is the number in the name: the segment's base offset (for a
	// snapshot, the end offset it covers).
	Base int64
	// Kind is LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix or
	// SnapshotSuffix.
	Kind string
	// Temp is "", DeletedSuffix, CleanedSuffix or SwapSuffix.
	Temp string
}

// ParseSegmentFile is ParseFileName with the suffix split into its kind
// and its temporary suffix. badDigits reports a name ParseFileName refuses
// only for its number: a segment file's suffixes after a number that is
// not 20 digits, or beyond MaxInt64 ("42.log", "000…0042.index.swap"), which
// Kafka's loader would misread, so that fsck can name it.
func ParseSegmentFile(name string) (f SegmentFile, ok, badDigits bool) {
	rest := name
	for _, t := range []string{DeletedSuffix, CleanedSuffix, SwapSuffix} {
		if strings.HasSuffix(rest, t) {
			f.Temp = t
			rest = strings.TrimSuffix(rest, t)
			break
		}
	}
	dot := strings.IndexByte(rest, '.')
	if dot < 0 {
		return SegmentFile{}, false, false
	}
	num, kind := rest[:dot], rest[dot:]
	switch kind {
	case LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix, SnapshotSuffix:
	default:
		return SegmentFile{}, false, false
	}
	digits := num != "" && strings.Trim(num, "0123456789") == ""
	if len(num) != offsetDigits || !digits {
		return SegmentFile{}, false, digits
	}
	base, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return SegmentFile{}, false, true
	}
	f.Base, f.Kind = base, kind
	return f, true, false
}
