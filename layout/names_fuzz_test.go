package layout

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseSegmentFile checks ParseFileName and ParseSegmentFile against
// a second reading of the rule (the digits first, then the suffix, where
// ParseSegmentFile strips the temporary suffix first): both accept the
// same names with the same base and suffix, and a name called badDigits
// is Misnamed.
func FuzzParseSegmentFile(f *testing.F) {
	for _, s := range []string{"00000000000000000042.log", "00000000000000000042.log.deleted", "42.log", "00000000000000000042.index.swap.swap",
		"99999999999999999999.log", "00000000000000000000.snapshot", "x.log", "00000000000000000001.log.x", "00000000000000000001.cleaned"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		base, suffix, ok := digitsFirst(name)
		if b, s, o := ParseFileName(name); b != base || s != suffix || o != ok {
			t.Fatalf("%q: ParseFileName %d %q %v, want %d %q %v", name, b, s, o, base, suffix, ok)
		}
		sf, ok2, bad := ParseSegmentFile(name)
		if ok != ok2 || ok && (sf.Base != base || sf.Kind+sf.Temp != suffix) {
			t.Fatalf("%q: ParseFileName %d %q %v, ParseSegmentFile %+v %v", name, base, suffix, ok, sf, ok2)
		}
		if bad && (ok || !Misnamed(name)) {
			t.Fatalf("%q: badDigits, but ok %v, Misnamed %v", name, ok, Misnamed(name))
		}
	})
}

// digitsFirst reads a name as 20 digits followed by a suffix.
func digitsFirst(name string) (base int64, suffix string, ok bool) {
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
