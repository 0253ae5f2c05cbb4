package seglog_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/crashtest"
	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// campaignValue is the value written at offset off under key: any record
// read back can be checked against it without a model, and a torn or
// misplaced record cannot pass.
func campaignValue(off int64, key string) []byte {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", off, key)
	r := rand.New(rand.NewPCG(h.Sum64(), uint64(off)))
	v := make([]byte, 8+int(off*31%90))
	for i := range v {
		v[i] = byte('a' + r.IntN(26))
	}
	return v
}

// crec is one record of a log's state.
type crec struct {
	off int64
	key string
}

// cstate is what a log serves: start, end, its records in order (with
// holes once compaction ran) and its cleaner checkpoint.
type cstate struct {
	start, end int64
	recs       []crec
	ckpt       int64 // -1: none
}

func (s cstate) String() string {
	return fmt.Sprintf("[%d,%d) %d records ckpt %d", s.start, s.end, len(s.recs), s.ckpt)
}

func (s cstate) same(o cstate) bool {
	return s.start == o.start && s.end == o.end && slices.Equal(s.recs, o.recs) && s.ckpt == o.ckpt
}

// readState reads l whole, checking every value against campaignValue.
func readState(l *seglog.Log) (cstate, error) {
	st := cstate{start: l.StartOffset(), end: l.EndOffset(), ckpt: -1}
	last := st.start - 1
	for r, err := range l.Records(st.start) {
		if err != nil {
			return st, fmt.Errorf("reading after %d: %w", last, err)
		}
		if r.Offset <= last || r.Offset >= st.end {
			return st, fmt.Errorf("offset %d after %d (log [%d,%d))", r.Offset, last, st.start, st.end)
		}
		if want := campaignValue(r.Offset, string(r.Key)); string(r.Value) != string(want) {
			return st, fmt.Errorf("offset %d key %q holds a value never written there (partial or misplaced)", r.Offset, r.Key)
		}
		st.recs = append(st.recs, crec{r.Offset, string(r.Key)})
		last = r.Offset
	}
	off, ok, err := l.CleanerCheckpoint()
	if err != nil {
		return st, fmt.Errorf("cleaner checkpoint: %w", err)
	}
	if ok {
		st.ckpt = off
	}
	return st, nil
}

// cop is one operation of a campaign scenario.
type cop struct {
	kind string // append, roll, truncate, delete, retain, compact, ckpt
	arg  int64
}

func (o cop) String() string { return fmt.Sprintf("%s(%d)", o.kind, o.arg) }

// subseq reports whether a's records appear in b in order.
func subseq(a, b []crec) bool {
	j := 0
	for _, r := range a {
		for j < len(b) && b[j] != r {
			j++
		}
		if j == len(b) {
			return false
		}
		j++
	}
	return true
}

// from returns the records at or after off.
func from(recs []crec, off int64) []crec {
	i, _ := slices.BinarySearchFunc(recs, off, func(r crec, o int64) int { return int(r.off - o) })
	return recs[i:]
}

// acceptableAfterCrash reports whether got is a state a power loss during
// op (taking the log from before to after) may leave. Every op may leave
// either whole state; a truncation may also have cut only part of the
// suffix, a retention pass or DeleteBefore moved the start part of the
// way, and a compaction swapped some of its segments: got lies between
// before and after (what it serves came from before, what after serves is
// still there). The cleaner checkpoint is before's or after's.
func acceptableAfterCrash(got, before, after cstate, op cop) bool {
	if got.same(before) || got.same(after) {
		return true
	}
	// A truncation lowers the cleaner checkpoint to its offset before it
	// cuts anything, then to the end the cut reached: a crash in between
	// leaves one between the two, never above the one before.
	lowered := op.kind == "truncate" && got.ckpt >= after.ckpt && got.ckpt <= before.ckpt
	// The first swap of a log records the log start as its checkpoint
	// before anything cleaned can be seen (so its gaps are not missing
	// data); the cleaner's own checkpoint comes after the swap.
	marked := op.kind == "compact" && before.ckpt == -1 && got.ckpt == before.start
	if got.ckpt != before.ckpt && got.ckpt != after.ckpt && !lowered && !marked {
		return false
	}
	switch op.kind {
	case "truncate":
		floor := max(after.end, before.start)
		return got.start == before.start && got.end >= floor && got.end <= before.end &&
			slices.Equal(got.recs, before.recs[:len(got.recs)]) && slices.Equal(from(before.recs, got.end), before.recs[len(got.recs):])
	case "delete", "retain":
		return got.end == before.end && got.start >= before.start && got.start <= after.start &&
			slices.Equal(got.recs, from(before.recs, got.start))
	case "compact":
		return got.start == before.start && got.end == before.end && subseq(got.recs, before.recs) && subseq(after.recs, got.recs)
	case "ckpt", "roll":
		return got.start == before.start && got.end == before.end && slices.Equal(got.recs, before.recs)
	}
	return false
}

// campaignOptions are small segments and indexes, so every scenario rolls,
// fills indexes and spans many segments.
func campaignOptions(fs vfs.FS) seglog.Options {
	return seglog.Options{
		FS: fs,
		LogConfig: seglog.LogConfig{
			SegmentBytes:       1024,
			IndexIntervalBytes: 128,
			MaxIndexBytes:      240,
			Sync:               seglog.SyncAlways,
		},
		Logger: discard(),
		Clock:  testutil.NowFunc(func() time.Time { return time.UnixMilli(1_700_000_000_000) }),
	}
}

// logRunner applies campaign ops to one open log.
type logRunner struct {
	l     *seglog.Log
	c     *cleaner.Cleaner
	epoch int
	rng   *rand.Rand
}

func newLogRunner(l *seglog.Log, seed uint64) (*logRunner, error) {
	c := cleaner.New(cleaner.Options{Logger: discard()})
	c.SetCompaction(cleaner.CompactionOptions{DedupeBufferBytes: 1 << 16, SegmentBytes: 1024})
	p := cleaner.DefaultPolicy()
	p.FileDeleteDelay = 0
	if err := c.Add(cleaner.Wrap(l), p); err != nil {
		return nil, err
	}
	return &logRunner{l: l, c: c, rng: rand.New(rand.NewPCG(seed, 99))}, nil
}

// apply runs op, whose argument it may choose from the log's state, and
// returns the op as run.
func (r *logRunner) apply(kind string) (cop, error) {
	l := r.l
	start, end := l.StartOffset(), l.EndOffset()
	span := func() int64 {
		if end <= start {
			return start
		}
		return start + r.rng.Int64N(end-start+1)
	}
	switch kind {
	case "append":
		n := 1 + r.rng.IntN(5)
		recs := make([]record.Record, n)
		for j := range recs {
			key := fmt.Sprintf("k%d.%d", r.rng.IntN(6), r.epoch)
			recs[j] = record.Record{Key: []byte(key), Value: campaignValue(end+int64(j), key), Timestamp: 1_700_000_000_000 + end + int64(j)}
		}
		_, err := l.Append(recs...)
		return cop{kind, int64(n)}, err
	case "roll":
		return cop{kind, 0}, l.Roll()
	case "truncate":
		r.epoch++
		at := span()
		if r.rng.IntN(5) == 0 {
			at = max(0, start-r.rng.Int64N(5)) // below the start: the log restarts there
		}
		return cop{kind, at}, l.TruncateTo(at)
	case "delete":
		at := span()
		_, err := l.DeleteBefore(at)
		return cop{kind, at}, err
	case "retain":
		p := cleaner.DefaultPolicy()
		p.FileDeleteDelay = 0
		p.RetentionBytes = int64(1024 + r.rng.IntN(3000))
		if err := r.c.SetPolicy(cleaner.Wrap(l), p); err != nil {
			return cop{kind, p.RetentionBytes}, err
		}
		return cop{kind, p.RetentionBytes}, r.c.RunOnce(context.Background())
	case "compact":
		p := cleaner.DefaultPolicy()
		p.CleanupPolicy = cleaner.Compact
		p.FileDeleteDelay = 0
		_, err := r.c.Compact(context.Background(), cleaner.Wrap(l), p)
		return cop{kind, 0}, err
	case "ckpt":
		at := span()
		return cop{kind, at}, l.SetCleanerCheckpoint(at)
	}
	panic("unknown op " + kind)
}

// campaignMix is the weight of each kind in generated scenarios.
var campaignMix = []struct {
	kind string
	w    int
}{{"append", 10}, {"roll", 2}, {"truncate", 2}, {"delete", 2}, {"retain", 2}, {"compact", 3}, {"ckpt", 2}}

func pickKind(rng *rand.Rand) string {
	total := 0
	for _, m := range campaignMix {
		total += m.w
	}
	n := rng.IntN(total)
	for _, m := range campaignMix {
		if n < m.w {
			return m.kind
		}
		n -= m.w
	}
	return "append"
}

// TestLogCrashCampaign simulates a power loss at every filesystem
// operation of random scenarios mixing appends, rolls, truncations,
// DeleteBefore, retention passes, compaction swaps and cleaner-checkpoint
// writes on a log with tiny segments and indexes (SyncAlways, so every
// returned op is acknowledged). Each crashed image must reopen to the
// state before the op in flight, the state after it, or for the ops that
// work in steps a state between the two (acceptableAfterCrash); every
// record read must hold its own value (nothing partial), the reopened log
// must take an append, and fsck must find the closed directory clean.
func TestLogCrashCampaign(t *testing.T) {
	scenarios := soak.Reduce(14*soak.Scale(), 7)
	points := 0
	for s := 0; s < scenarios; s++ {
		seed := soak.Seed()<<32 | uint64(s)
		points += runLogScenario(t, seed, 28)
		if t.Failed() {
			t.Fatalf("scenario seed %d failed (replay: go test -run TestLogCrashCampaign -soak.seed=%d, scenario %d)", seed, soak.Seed(), s)
		}
	}
	t.Logf("%d crash points over %d scenarios", points, scenarios)
	soak.Count(t, "crash_points", points)
	if points < 200*scenarios {
		t.Errorf("only %d crash points: the scenarios stopped doing I/O", points)
	}
}

// runLogScenario builds a log, then runs nops random ops on it with a
// clone at every filesystem operation, and checks every clone.
func runLogScenario(t *testing.T, seed uint64, nops int) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	mem := vfs.NewMem()
	// The recorder's state is the number of the scenario op in flight
	// (0: Open).
	rec := crashtest.New(mem, 0, nil, crashtest.Options{Rand: rand.New(rand.NewPCG(seed, 5)), TornStream: 1, KeepUnsynced: 0.7})
	fs := vfs.Inject(mem, rec)
	l, err := seglog.Open("/c", campaignOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	run, err := newLogRunner(l, seed)
	if err != nil {
		t.Fatal(err)
	}
	for l.EndOffset() < 60 {
		if _, err := run.apply("append"); err != nil {
			t.Fatal(err)
		}
	}
	st, err := readState(l)
	if err != nil {
		t.Fatal(err)
	}
	states := []cstate{st}
	var ops []cop
	rec.Arm(true)
	for i := 1; i <= nops; i++ {
		rec.Set(i)
		op, err := run.apply(pickKind(rng))
		if err != nil {
			t.Fatalf("seed %d op %d %v: %v", seed, i, op, err)
		}
		ops = append(ops, op)
		st, err := readState(l)
		if err != nil {
			t.Fatalf("seed %d after op %d %v: %v", seed, i, op, err)
		}
		states = append(states, st)
	}
	rec.Set(nops + 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rec.Arm(false)
	ops = append(ops, cop{"close", 0})
	states = append(states, states[len(states)-1])

	points := rec.Take()
	for _, p := range points {
		inflight := p.State
		before, after, op := states[0], states[0], cop{"open", 0}
		if inflight > 0 {
			before, after, op = states[inflight-1], states[inflight], ops[inflight-1]
		}
		label := fmt.Sprintf("seed %d: crash at fs op %d (%v %s, torn %v) during op %d %v", seed, p.N, p.Op.Kind, p.Op.Path, p.Torn, inflight, op)
		r, err := seglog.Open("/c", campaignOptions(p.FS))
		if err != nil {
			t.Fatalf("%s: reopen: %v", label, err)
		}
		got, err := readState(r)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if !acceptableAfterCrash(got, before, after, op) {
			t.Fatalf("%s: reopened %v %v\nbefore %v %v\nafter  %v %v", label, got, got.recs, before, before.recs, after, after.recs)
		}
		if _, err := r.Append(record.Record{Key: []byte("z"), Value: campaignValue(r.EndOffset(), "z")}); err != nil {
			t.Fatalf("%s: append after reopening: %v", label, err)
		}
		if err := r.Close(); err != nil {
			t.Fatalf("%s: close: %v", label, err)
		}
		fscktest.CheckCleanButQuarantines(t, p.FS, "/c") // a later segment behind a torn one is set aside
		if t.Failed() {
			t.Fatalf("%s: fsck", label)
		}
	}
	return len(points)
}
