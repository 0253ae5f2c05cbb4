package layout

import (
	"strings"
	"testing"
)

func TestQuarantineNames(t *testing.T) {
	name := QuarantineName(42, 1234, 0)
	if want := "00000000000000000042-00000000000000001234.quarantine"; name != want {
		t.Fatalf("QuarantineName = %q, want %q", name, want)
	}
	for n, want := range map[int]string{0: name, 3: "00000000000000000042-00000000000000001234-3.quarantine"} {
		got := QuarantineName(42, 1234, n)
		if got != want {
			t.Fatalf("QuarantineName(n=%d) = %q, want %q", n, got, want)
		}
		base, pos, ok := ParseQuarantineName(got)
		if !ok || base != 42 || pos != 1234 {
			t.Fatalf("ParseQuarantineName(%q) = %d, %d, %v", got, base, pos, ok)
		}
		if !IsLogFile(got) || !IsQuarantine(got) {
			t.Fatalf("%q is not a log directory's file", got)
		}
		if _, _, ok := ParseFileName(got); ok {
			t.Fatalf("ParseFileName takes quarantine %q for a segment file", got)
		}
		// Kafka's loader acts on these suffixes, and reads the name up to
		// the first dot as an offset when it completes a swap.
		for _, s := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix, TxnIndexSuffix, SnapshotSuffix, DeletedSuffix, CleanedSuffix, SwapSuffix} {
			if strings.HasSuffix(got, s) {
				t.Fatalf("%q ends in %s", got, s)
			}
		}
		if head, _, _ := strings.Cut(got, "."); strings.Trim(head, "0123456789") == "" {
			t.Fatalf("%q: %q before the first dot parses as an offset", got, head)
		}
	}
	for _, bad := range []string{
		"00000000000000000042.log", "42-1234.quarantine", "00000000000000000042-00000000000000001234.quarantine.tmp",
		"00000000000000000042-00000000000000001234-0.quarantine", "00000000000000000042-00000000000000001234-01.quarantine",
		"00000000000000000042-00000000000000001234-x.quarantine", "00000000000000000042.log.00000000000000001234.quarantine",
		"99999999999999999999-00000000000000001234.quarantine",
	} {
		if _, _, ok := ParseQuarantineName(bad); ok {
			t.Errorf("ParseQuarantineName(%q) accepted", bad)
		}
	}
	names := []string{FileName(0, LogSuffix), QuarantineName(0, 100, 0), QuarantineName(0, 100, 1)}
	if _, bases := SegmentFiles(names); len(bases) != 1 {
		t.Fatalf("SegmentFiles counts quarantine files as segments: %v", bases)
	}
	if p := PlanLeftovers(names); !p.Empty() {
		t.Fatalf("PlanLeftovers acts on quarantine files: %+v", p)
	}
}
