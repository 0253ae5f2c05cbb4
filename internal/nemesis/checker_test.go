package nemesis

import (
	"fmt"
	"strings"
	"testing"
)

var (
	p0 = TP{"t", 0}
	p1 = TP{"t", 1}
)

func rec(tp TP, off int64, v string) Record { return Record{TP: tp, Offset: off, Value: v} }

// TestCheckHistories runs the checker on hand-made histories, each built
// to pass or to break exactly one rule, and checks that the report names
// the rule, the record and the offset.
func TestCheckHistories(t *testing.T) {
	good := History{
		Acked:  []Record{rec(p0, 0, "a"), rec(p0, 1, "b"), rec(p1, 0, "c")},
		Failed: []string{"x", "y"},
		// x failed but was stored (its acknowledgment was lost): fine.
		Read:      []Record{rec(p0, 0, "a"), rec(p0, 1, "b"), rec(p0, 2, "x"), rec(p1, 0, "c")},
		LiveReads: []Record{rec(p0, 0, "a"), rec(p0, 0, "a"), rec(p1, 0, "c")},
	}
	// edit returns a copy of good changed by f.
	edit := func(f func(h *History)) History {
		h := History{
			Acked:     append([]Record(nil), good.Acked...),
			Failed:    append([]string(nil), good.Failed...),
			Read:      append([]Record(nil), good.Read...),
			LiveReads: append([]Record(nil), good.LiveReads...),
		}
		f(&h)
		return h
	}
	for _, c := range []struct {
		name string
		h    History
		want []string // each violation's String, in order; none for a passing history
	}{
		{"good", good, nil},
		{"empty", History{}, nil},
		{"lost acked record", edit(func(h *History) { h.Read = h.Read[1:] }),
			[]string{
				`acked record lost: "a" at t-0 offset 0: acknowledged, not in the final read`,
				`read record vanished: "a" at t-0 offset 0: read during the run, not in the final read`,
			}},
		{"acked record at another offset", edit(func(h *History) { h.Read[1] = rec(p0, 3, "b") }),
			[]string{`acked record at another offset: "b" at t-0 offset 3: acknowledged at t-0 offset 1`}},
		{"acked record in another partition", edit(func(h *History) { h.Read[3] = rec(p0, 3, "c") }),
			[]string{
				`acked record at another offset: "c" at t-0 offset 3: acknowledged at t-1 offset 0`,
				`acked record at another offset: "c" at t-1 offset 0: read during the run here, at t-0 offset 3 at the end`,
			}},
		{"duplicate value read", edit(func(h *History) { h.Read = append(h.Read, rec(p0, 3, "b")) }),
			[]string{`duplicate value: "b" at t-0 offset 3: read twice: also at t-0 offset 1`}},
		{"uncertain value read twice", edit(func(h *History) { h.Read = append(h.Read, rec(p1, 1, "x")) }),
			[]string{`duplicate value: "x" at t-1 offset 1: read twice: also at t-0 offset 2`}},
		{"value acknowledged twice", edit(func(h *History) { h.Acked = append(h.Acked, rec(p0, 4, "a")) }),
			[]string{`duplicate value: "a" at t-0 offset 4: acknowledged twice: also at t-0 offset 0`}},
		{"offset acknowledged for two values", edit(func(h *History) { h.Acked[1] = rec(p0, 0, "b") }),
			[]string{
				`offset given to two values: "b" at t-0 offset 0: acknowledged, but "a" holds that offset too`,
				`acked record at another offset: "b" at t-0 offset 1: acknowledged at t-0 offset 0`,
			}},
		{"offset read with another value than acknowledged", edit(func(h *History) {
			h.Read[0] = rec(p0, 0, "y") // a's place taken by y, a gone
		}), []string{
			`acked record lost: "a" at t-0 offset 0: acknowledged, not in the final read`,
			`offset given to two values: "y" at t-0 offset 0: read, but "a" holds that offset too`,
			`read record vanished: "a" at t-0 offset 0: read during the run, not in the final read`,
		}},
		{"value never sent", edit(func(h *History) { h.Read = append(h.Read, rec(p1, 1, "z")) }),
			[]string{`value never sent: "z" at t-1 offset 1: neither acknowledged nor failed`}},
		{"live read vanished", edit(func(h *History) { h.LiveReads = append(h.LiveReads, rec(p1, 1, "y")) }),
			[]string{`read record vanished: "y" at t-1 offset 1: read during the run, not in the final read`}},
		{"live read moved", edit(func(h *History) { h.LiveReads = append(h.LiveReads, rec(p0, 5, "x")) }),
			[]string{`acked record at another offset: "x" at t-0 offset 5: read during the run here, at t-0 offset 2 at the end`}},
		{"live read of an offset later holding another value", edit(func(h *History) {
			h.LiveReads = append(h.LiveReads, rec(p0, 1, "y"))
		}), []string{
			`offset given to two values: "y" at t-0 offset 1: read during the run, but "b" holds that offset too`,
			`read record vanished: "y" at t-0 offset 1: read during the run, not in the final read`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Check(c.h)
			var got []string
			for _, v := range r.Violations {
				got = append(got, v.String())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
			if r.OK() != (len(c.want) == 0) {
				t.Fatalf("OK() = %v with %d violations", r.OK(), len(r.Violations))
			}
			if !strings.Contains(r.String(), fmt.Sprintf("%d acked", len(c.h.Acked))) {
				t.Fatalf("report %q does not count the acknowledged records", r.String())
			}
		})
	}
}

// TestCheckCountsUncertain: a failed produce found stored is counted, so
// a run's report says how many acknowledgments were lost to the nemesis.
func TestCheckCountsUncertain(t *testing.T) {
	r := Check(History{Failed: []string{"x", "y"}, Read: []Record{rec(p0, 0, "x")}})
	if !r.OK() || r.Uncertain != 1 {
		t.Fatalf("report %v: want ok with 1 uncertain", r)
	}
}

// TestReportListsFirstViolations: a run that breaks a rule for thousands
// of records reports the counts per rule and lists the first ones, not
// all of them.
func TestReportListsFirstViolations(t *testing.T) {
	var h History
	for i := range 1000 {
		h.Acked = append(h.Acked, rec(p0, int64(i), fmt.Sprint(i)))
	}
	h.Read = []Record{rec(p0, 0, "0"), rec(p0, 1, "x")}
	r := Check(h)
	s := r.String()
	for _, want := range []string{
		"1001 violations (999 acked record lost, 1 offset given to two values, 1 value never sent)",
		`acked record lost: "1" at t-0 offset 1`,
		"… and 801 more",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report does not say %q:\n%.500s", want, s)
		}
	}
	if len(r.Violations) != 1001 {
		t.Errorf("%d violations kept, want 1001", len(r.Violations))
	}
}
