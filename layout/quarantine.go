package layout

import (
	"strconv"
	"strings"
)

// QuarantineSuffix ends the name of a quarantine file: bytes of a segment's
// .log that recovery set aside instead of deleting them (damage followed by
// valid batches, or a whole later segment that Kafka's rule would delete).
//
// The name is "<base>-<pos>.quarantine", base and pos in 20 digits each:
// the segment's base offset and the byte of its .log where the set-aside
// bytes began (where the damage began; 0 for a whole segment). A second
// quarantine of the same segment and byte gets "<base>-<pos>-<n>.quarantine"
// (n = 1, 2, ...): an existing quarantine file is never overwritten.
//
// Kafka's LogLoader must leave it alone, and so must seglog's loader:
//   - it does not end in .log, .index, .timeindex, .txnindex, .snapshot,
//     .deleted, .cleaned or .swap, the suffixes Kafka's loader acts on;
//   - its name up to the first dot is not a number: Kafka's loader, while
//     completing an interrupted swap, deletes every file (other than a
//     .swap) whose name up to the first dot parses as an offset in the
//     swapped range, so "<base>.log.<pos>.quarantine" could be deleted by
//     it, while "<base>-<pos>" fails to parse and the file is skipped.
//
// ParseFileName does not accept it, so SegmentFiles, Orphans and the swap
// protocol never take it for a segment file.
const QuarantineSuffix = ".quarantine"

// QuarantineName returns the name of the quarantine file for the bytes of
// the segment at base from byte pos on; n > 0 gives the n-th alternative,
// for when the name is taken.
func QuarantineName(base, pos int64, n int) string {
	name := FileName(base, "") + "-" + FileName(pos, "")
	if n > 0 {
		name += "-" + strconv.Itoa(n)
	}
	return name + QuarantineSuffix
}

// ParseQuarantineName parses a name made by QuarantineName: the segment's
// base offset and the byte position in its .log. ok is false for any other
// name.
func ParseQuarantineName(name string) (base, pos int64, ok bool) {
	rest, found := strings.CutSuffix(name, QuarantineSuffix)
	if !found {
		return 0, 0, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 2 && len(parts) != 3 {
		return 0, 0, false
	}
	base, ok1 := parseDigits(parts[0])
	pos, ok2 := parseDigits(parts[1])
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	if len(parts) == 3 {
		n, err := strconv.Atoi(parts[2])
		if err != nil || n <= 0 || strconv.Itoa(n) != parts[2] {
			return 0, 0, false
		}
	}
	return base, pos, true
}

// IsQuarantine reports whether name is a quarantine file's.
func IsQuarantine(name string) bool {
	_, _, ok := ParseQuarantineName(name)
	return ok
}

// parseDigits parses exactly offsetDigits decimal digits.
func parseDigits(s string) (int64, bool) {
	if len(s) != offsetDigits || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}
