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
	if len(name) <= offsetDigits {
		return 0, "", false
	}
	digits, rest := name[:offsetDigits], name[offsetDigits:]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, "", false
		}
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil { // beyond MaxInt64
		return 0, "", false
	}
	kind := rest
	for _, tmp := range []string{DeletedSuffix, CleanedSuffix, SwapSuffix} {
		if strings.HasSuffix(rest, tmp) {
			kind = strings.TrimSuffix(rest, tmp)
			break
		}
	}
	switch kind {
	case LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix, SnapshotSuffix:
		return base, rest, true
	}
	return 0, "", false
}
