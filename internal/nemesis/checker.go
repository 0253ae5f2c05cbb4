package nemesis

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Rule names a property the checker verifies; a Violation says which one
// a history broke.
type Rule string

// The rules. Each is a sentence of issue 30's "no acknowledged record
// lost or duplicated" (and ../shared/reference/kafka-replication.md §6,
// Jepsen's Kafka lessons), made checkable on one history.
const (
	// RuleLost: an acknowledged record was not read back.
	RuleLost Rule = "acked record lost"
	// RuleMoved: an acknowledged record was read, but at another
	// partition or offset than the one its acknowledgment gave.
	RuleMoved Rule = "acked record at another offset"
	// RuleDuplicate: a value was read (or acknowledged) more than once.
	RuleDuplicate Rule = "duplicate value"
	// RuleOffsetReused: one offset of a partition was given to two
	// different values (by two acknowledgments, two reads, or an
	// acknowledgment and a read).
	RuleOffsetReused Rule = "offset given to two values"
	// RulePhantom: a value was read that no writer ever sent.
	RulePhantom Rule = "value never sent"
	// RuleVanished: a value a consumer saw during the run was gone from
	// the final read: a consumer saw a record that later disappeared.
	RuleVanished Rule = "read record vanished"
	// RuleReplicasDiffer: two replicas' partition directories hold
	// different batches below the offset they must agree up to.
	RuleReplicasDiffer Rule = "replicas differ"
	// RuleFsck: fsck found a problem in a directory after a clean stop.
	RuleFsck Rule = "fsck not clean"
)

// TP is a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

// String is Kafka's name for the partition, topic-N.
func (tp TP) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Record is a record at a place: what an acknowledgment said (the
// partition and offset the broker answered for the value) or what a
// consumer read.
type Record struct {
	TP
	Offset int64
	Value  string
}

// String says the value and where it is.
func (r Record) String() string { return fmt.Sprintf("%q at %s offset %d", r.Value, r.TP, r.Offset) }

// History is everything a nemesis run observed, the checker's input.
type History struct {
	// Acked are the acknowledged records, in no particular order.
	Acked []Record
	// Failed are the values whose produce failed: the broker may hold
	// them (the acknowledgment was lost) or not, so they may be read at
	// most once, or not at all.
	Failed []string
	// Read is the final read of everything, after the nemesis: every
	// acknowledged record must be in it, exactly once.
	Read []Record
	// LiveReads are what consumers saw while the nemesis ran. Each must
	// still be in Read at the same place: no record a consumer saw may
	// disappear. A live consumer may read a record twice (after its broker
	// restarts), so duplicates among them are not a violation.
	LiveReads []Record
}

// Violation is one broken rule, naming the record and offset that broke
// it.
type Violation struct {
	Rule   Rule
	Record Record // the record concerned (its place may be the zero TP when the rule is about a value alone)
	Detail string // what was expected instead, and where
}

// String is the rule, the record and the detail, on one line.
func (v Violation) String() string {
	if v.Detail == "" {
		return fmt.Sprintf("%s: %v", v.Rule, v.Record)
	}
	return fmt.Sprintf("%s: %v: %s", v.Rule, v.Record, v.Detail)
}

// Report is the checker's answer: the violations found (none means the
// history passed) and counts that say what was checked.
type Report struct {
	Violations []Violation
	Acked      int // acknowledged records
	Failed     int // failed produces
	Read       int // records in the final read
	Live       int // records read during the run
	Uncertain  int // failed produces found in the final read (stored without an acknowledgment)
}

// OK reports whether no rule was broken.
func (r *Report) OK() bool { return len(r.Violations) == 0 }

// String lists the counts and every violation, one a line.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d acked, %d failed (%d of them stored), %d read at the end, %d read live: ",
		r.Acked, r.Failed, r.Uncertain, r.Read, r.Live)
	if r.OK() {
		b.WriteString("ok")
		return b.String()
	}
	fmt.Fprintf(&b, "%d violations (", len(r.Violations))
	byRule := map[Rule]int{}
	var rules []Rule
	for _, v := range r.Violations {
		if byRule[v.Rule] == 0 {
			rules = append(rules, v.Rule)
		}
		byRule[v.Rule]++
	}
	slices.Sort(rules)
	for i, rule := range rules {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", byRule[rule], rule)
	}
	b.WriteString(")")
	for i, v := range r.Violations {
		if i == maxListed {
			fmt.Fprintf(&b, "\n  … and %d more", len(r.Violations)-maxListed)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return b.String()
}

// maxListed bounds the violations String lists: a broken run can break a
// rule for every record after the fault, and the first ones say where it
// started. Violations holds them all.
const maxListed = 200

// placeKey is a partition and offset.
type placeKey struct {
	TP
	Offset int64
}

// Check checks a history against every rule and reports each violation
// with the record and offset concerned, in a deterministic order.
func Check(h History) *Report {
	r := &Report{Acked: len(h.Acked), Failed: len(h.Failed), Read: len(h.Read), Live: len(h.LiveReads)}
	add := func(rule Rule, rec Record, format string, args ...any) {
		r.Violations = append(r.Violations, Violation{Rule: rule, Record: rec, Detail: fmt.Sprintf(format, args...)})
	}

	// Offsets: one value per place, whoever said it.
	at := map[placeKey]Record{}
	claim := func(rec Record, who string) {
		k := placeKey{rec.TP, rec.Offset}
		if prev, ok := at[k]; ok && prev.Value != rec.Value {
			add(RuleOffsetReused, rec, "%s, but %q holds that offset too", who, prev.Value)
			return
		}
		at[k] = rec
	}

	// What was acknowledged where; a value acknowledged twice is a
	// duplicate (an idempotent producer's retry must get the first
	// offset, not a second one).
	acked := map[string]Record{}
	for _, a := range h.Acked {
		if prev, ok := acked[a.Value]; ok {
			if prev != a {
				add(RuleDuplicate, a, "acknowledged twice: also at %s offset %d", prev.TP, prev.Offset)
			}
			continue
		}
		acked[a.Value] = a
		claim(a, "acknowledged")
	}
	failed := map[string]bool{}
	for _, v := range h.Failed {
		failed[v] = true
	}

	// The final read: each value once, at its acknowledged place.
	read := map[string]Record{}
	for _, rec := range h.Read {
		if prev, ok := read[rec.Value]; ok {
			add(RuleDuplicate, rec, "read twice: also at %s offset %d", prev.TP, prev.Offset)
			continue
		}
		read[rec.Value] = rec
		claim(rec, "read")
		a, isAcked := acked[rec.Value]
		switch {
		case isAcked && (a.TP != rec.TP || a.Offset != rec.Offset):
			add(RuleMoved, rec, "acknowledged at %s offset %d", a.TP, a.Offset)
		case !isAcked && failed[rec.Value]:
			r.Uncertain++
		case !isAcked:
			add(RulePhantom, rec, "neither acknowledged nor failed")
		}
	}
	for _, a := range h.Acked {
		if _, ok := read[a.Value]; !ok && acked[a.Value] == a {
			add(RuleLost, a, "acknowledged, not in the final read")
			delete(acked, a.Value) // reported once
		}
	}

	// Live reads: still there at the end, at the same place.
	seen := map[Record]bool{}
	for _, rec := range h.LiveReads {
		if seen[rec] {
			continue // read twice live: said once
		}
		seen[rec] = true
		claim(rec, "read during the run")
		fin, ok := read[rec.Value]
		switch {
		case !ok:
			add(RuleVanished, rec, "read during the run, not in the final read")
		case fin.TP != rec.TP || fin.Offset != rec.Offset:
			add(RuleMoved, rec, "read during the run here, at %s offset %d at the end", fin.TP, fin.Offset)
		}
	}

	slices.SortStableFunc(r.Violations, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Record.Topic, b.Record.Topic), cmp.Compare(a.Record.Partition, b.Record.Partition),
			cmp.Compare(a.Record.Offset, b.Record.Offset), cmp.Compare(a.Rule, b.Rule))
	})
	return r
}
