package store_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/crashtest"
	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

const campaignDir = "/data"

// campaignValueFor is the value every produced record carries for its key,
// so any record read back can be checked alone.
func campaignValueFor(key string) []byte {
	h := fnv.New64a()
	h.Write([]byte(key))
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	v := make([]byte, 10+r.IntN(60))
	for i := range v {
		v[i] = byte('a' + r.IntN(26))
	}
	return v
}

func campaignStoreOptions(fs vfs.FS) store.Options {
	now := func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
	oc := store.DefaultTopicConfig()
	oc.RetentionMs = -1
	oc.FlushMessages = 1
	oc.SegmentIndexBytes = 4096
	oc.SegmentBytes = 4096
	oc.MaxMessageBytes = 1024
	return store.Options{FS: fs, OffsetsPartitions: 3, Clock: testutil.NowFunc(now), Logger: slog.New(slog.DiscardHandler), OffsetsConfig: &oc}
}

func campaignTopicConfig(synced bool) store.TopicConfig {
	c := store.DefaultTopicConfig()
	c.SegmentBytes = 1024
	c.MaxMessageBytes = 512
	c.SegmentIndexBytes = 4096
	if synced {
		c.FlushMessages = 1
	}
	return c
}

// storeHistory is what the workload had acknowledged when a crash clone
// was taken: it is copied under the same lock as the clone.
type storeHistory struct {
	topics  map[string]int     // acknowledged topics and their partition counts
	pending map[string]int     // a create (count) or delete (-1) in flight
	commits map[string][]int64 // "group topic p" → offsets attempted, in order
	acked   map[string]int     // "group topic p" → index of the last acknowledged commit
	synced  map[string]int64   // "topic p" → end acknowledged durable (FlushMessages=1 topics)
}

func (h storeHistory) copy() storeHistory {
	c := storeHistory{topics: maps.Clone(h.topics), pending: maps.Clone(h.pending), commits: map[string][]int64{},
		acked: maps.Clone(h.acked), synced: maps.Clone(h.synced)}
	for k, v := range h.commits {
		c.commits[k] = slices.Clone(v)
	}
	return c
}

// storePoint is a crash image with the history acknowledged when it was
// taken.
type storePoint = crashtest.Point[storeHistory]

// storeRecorder clones the FS at every filesystem operation with the
// history acknowledged so far.
type storeRecorder struct {
	*crashtest.Recorder[storeHistory]
	// label, when set, is told what the workload does next (the fault
	// matrix's faults.At.SetCurrent).
	label func(string)
}

func newStoreRecorder(mem *vfs.MemFS, seed uint64, label func(string)) *storeRecorder {
	return &storeRecorder{
		Recorder: crashtest.New(mem, newStoreHistory(), storeHistory.copy,
			crashtest.Options{Rand: rand.New(rand.NewPCG(seed, 9)), TornStream: 2, KeepUnsynced: 0.6}),
		label: label,
	}
}

// doing tells rec's label, if any, what the workload does next.
func (c *storeRecorder) doing(what string) {
	if c.label != nil {
		c.label(what)
	}
}

// TestStoreCrashCampaign takes a power loss at every filesystem operation
// of random runs of topic creates and deletes, partition additions,
// produces (to a FlushMessages=1 topic, so they are acknowledged durable,
// and to an unsynced one), group commits and group deletes. Each image
// must reopen; a topic exists whole (all its partitions) or not at all;
// acknowledged creates and deletes stick; acknowledged records survive;
// every record read is one that was produced, whole; a group's committed
// offset is its last acknowledged commit or a later attempt, never past
// its partition's end, and never lost once acknowledged; every partition
// directory is fsck-clean after the store closes.
func TestStoreCrashCampaign(t *testing.T) {
	runs := soak.Reduce(6*soak.Scale(), 6)
	points := 0
	for r := 0; r < runs; r++ {
		seed := soak.Seed()<<32 | uint64(r)
		points += runStoreCampaign(t, seed, 45)
		if t.Failed() {
			t.Fatalf("run seed %d failed (replay: go test ./store -run TestStoreCrashCampaign -soak.seed=%d -soak.scale=%d)", seed, soak.Seed(), soak.Scale())
		}
	}
	t.Logf("%d crash points over %d runs", points, runs)
	soak.Count(t, "crash_points", points)
	if points < 400*runs {
		t.Errorf("only %d crash points", points)
	}
}

func runStoreCampaign(t *testing.T, seed uint64, nops int) int {
	t.Helper()
	mem := vfs.NewMem()
	rec := newStoreRecorder(mem, seed, nil)
	fs := vfs.Inject(mem, rec)
	s, err := store.Open(campaignDir, campaignStoreOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	rec.Arm(true)
	if err := storeWorkload(s, rec, seed, nops); err != nil {
		t.Fatal(err)
	}
	names := campaignTopics
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rec.Arm(false)
	points := rec.Take()
	for _, p := range points {
		checkStorePoint(t, p, names, fmt.Sprintf("seed %d: crash at fs op %d (%v %s, torn %v)", seed, p.N, p.Op.Kind, p.Op.Path, p.Torn))
		if t.Failed() {
			break
		}
	}
	return len(points)
}

var campaignTopics = []string{"a", "b", "c"}

// storeWorkload runs nops random store operations, recording in rec's
// history what is in flight and what was acknowledged; it stops at the
// first error.
func storeWorkload(s *store.Store, rec *storeRecorder, seed uint64, nops int) error {
	rng := rand.New(rand.NewPCG(seed, 4))
	names := campaignTopics
	seq := 0
	for i := 0; i < nops; i++ {
		name := names[rng.IntN(len(names))]
		var n int
		var exists bool
		rec.With(func(h *storeHistory) { n, exists = h.topics[name] })
		switch op := rng.IntN(12); {
		case !exists && op < 4:
			n := 1 + rng.IntN(3)
			rec.With(func(h *storeHistory) { h.pending[name] = n })
			if err := s.CreateTopic(name, n, campaignTopicConfig(name == "a")); err != nil {
				return fmt.Errorf("create %s: %w", name, err)
			}
			rec.With(func(h *storeHistory) { delete(h.pending, name); h.topics[name] = n })
		case !exists:
			continue
		case op == 0:
			rec.With(func(h *storeHistory) {
				h.pending[name] = -1
				delete(h.topics, name)
				for _, m := range []map[string]int64{h.synced} {
					for k := range m {
						if topicOf(k, 0) == name {
							delete(m, k)
						}
					}
				}
				for k := range h.commits {
					if topicOf(k, 1) == name {
						delete(h.commits, k)
						delete(h.acked, k)
					}
				}
			})
			rec.doing("delete " + name)
			err := s.DeleteTopic(name)
			rec.doing("")
			if err != nil {
				return fmt.Errorf("delete %s: %w", name, err)
			}
			rec.With(func(h *storeHistory) { delete(h.pending, name) })
		case op == 1 && n < 4:
			rec.With(func(h *storeHistory) { h.pending[name] = n + 1 })
			if err := s.AddPartitions(name, n+1); err != nil {
				return fmt.Errorf("add partitions %s: %w", name, err)
			}
			rec.With(func(h *storeHistory) { delete(h.pending, name); h.topics[name] = n + 1 })
		case op < 7:
			recs := make([]record.Record, 1+rng.IntN(3))
			for j := range recs {
				seq++
				k := fmt.Sprint(seq)
				recs[j] = record.Record{Key: []byte(k), Value: campaignValueFor(k)}
			}
			res, err := s.Produce(name, recs...)
			if err != nil {
				return fmt.Errorf("produce %s: %w", name, err)
			}
			if name == "a" {
				rec.With(func(h *storeHistory) {
					for _, r := range res {
						k := fmt.Sprintf("%s %d", name, r.Partition)
						h.synced[k] = max(h.synced[k], r.Offset+1)
					}
				})
			}
		case op == 7:
			// -1 in a key's attempts is a group delete: once acknowledged,
			// the offset must stay gone until a later commit.
			g := fmt.Sprintf("g%d", rng.IntN(3))
			var keys []string
			rec.With(func(h *storeHistory) {
				for k := range h.commits {
					if groupOf(k) == g {
						h.commits[k] = append(h.commits[k], -1)
						keys = append(keys, k)
					}
				}
			})
			if err := s.DeleteGroup(g); err != nil && !errors.Is(err, store.ErrUnknownGroup) {
				return fmt.Errorf("delete group %s: %w", g, err)
			}
			rec.With(func(h *storeHistory) {
				for _, k := range keys {
					h.acked[k] = len(h.commits[k]) - 1
				}
			})
		default:
			g := fmt.Sprintf("g%d", rng.IntN(3))
			p := int32(rng.IntN(n))
			l, err := s.Log(name, p)
			if err != nil {
				return fmt.Errorf("log %s %d: %w", name, p, err)
			}
			off := l.StartOffset() + rng.Int64N(l.EndOffset()-l.StartOffset()+1)
			k := fmt.Sprintf("%s %s %d", g, name, p)
			rec.With(func(h *storeHistory) { h.commits[k] = append(h.commits[k], off) })
			if err := s.Commit(g, name, map[int32]int64{p: off}); err != nil {
				return fmt.Errorf("commit %s: %w", k, err)
			}
			rec.With(func(h *storeHistory) { h.acked[k] = len(h.commits[k]) - 1 })
		}
	}
	return nil
}

// topicOf returns the field'th space-separated word of a history key.
func topicOf(k string, field int) string {
	var w [3]string
	fmt.Sscan(k, &w[0], &w[1], &w[2])
	return w[field]
}

func groupOf(k string) string { return topicOf(k, 0) }

func checkStorePoint(t *testing.T, p storePoint, names []string, label string) {
	t.Helper()
	s, err := store.Open(campaignDir, campaignStoreOptions(p.FS))
	if err != nil {
		t.Fatalf("%s: reopen: %v", label, err)
	}
	got := map[string]int{}
	for _, name := range s.Topics() {
		got[name], _ = s.Partitions(name)
	}
	h := p.State
	for _, name := range names {
		want, acked := h.topics[name]
		pend, inFlight := h.pending[name]
		n, exists := got[name]
		switch {
		case inFlight && pend > 0 && acked: // partitions being added
			if n != want && n != pend {
				t.Errorf("%s: topic %s has %d partitions, want %d or %d", label, name, n, want, pend)
			}
		case inFlight && pend > 0: // a create in flight: whole or absent
			if exists && n != pend {
				t.Errorf("%s: topic %s half created: %d of %d partitions", label, name, n, pend)
			}
		case inFlight: // a delete in flight: absent, or whole as it was
		case acked && n != want:
			t.Errorf("%s: acknowledged topic %s has %d partitions, want %d", label, name, n, want)
		case !acked && exists:
			t.Errorf("%s: topic %s exists, never acknowledged", label, name)
		}
	}
	ends := map[string]int64{}
	for name, n := range got {
		for part := int32(0); part < int32(n); part++ {
			l, err := s.Log(name, part)
			if err != nil {
				t.Fatalf("%s: log %s-%d: %v", label, name, part, err)
			}
			next := l.StartOffset()
			for r, err := range l.Records(next) {
				if err != nil {
					t.Fatalf("%s: %s-%d read at %d: %v", label, name, part, next, err)
				}
				if r.Offset != next || string(r.Value) != string(campaignValueFor(string(r.Key))) {
					t.Fatalf("%s: %s-%d offset %d (want %d) holds a record never produced whole", label, name, part, r.Offset, next)
				}
				next++
			}
			if next != l.EndOffset() {
				t.Fatalf("%s: %s-%d read to %d, end %d", label, name, part, next, l.EndOffset())
			}
			ends[fmt.Sprintf("%s %d", name, part)] = next
		}
	}
	for k, end := range h.synced {
		if _, ok := got[topicOf(k, 0)]; !ok {
			continue
		}
		if ends[k] < end {
			t.Errorf("%s: %s lost acknowledged records: end %d < %d", label, k, ends[k], end)
		}
	}
	for k, hist := range h.commits {
		g, name := groupOf(k), topicOf(k, 1)
		var part int32
		if _, err := fmt.Sscanf(topicOf(k, 2), "%d", &part); err != nil {
			t.Fatal(err)
		}
		if _, ok := got[name]; !ok {
			continue
		}
		c, ok := s.CommittedOffset(g, name, part)
		ai, wasAcked := h.acked[k]
		from := 0
		if wasAcked {
			from = ai
		}
		if !ok {
			if wasAcked && !slices.Contains(hist[from:], -1) {
				t.Errorf("%s: acknowledged commit %s lost", label, k)
			}
			continue
		}
		if !slices.Contains(hist[from:], c.Offset) {
			t.Errorf("%s: %s committed %d, not the acknowledged %v or a later attempt", label, k, c.Offset, hist[from:])
		}
		if end := ends[fmt.Sprintf("%s %d", name, part)]; c.Offset > end {
			t.Errorf("%s: %s committed %d past the partition's end %d", label, k, c.Offset, end)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("%s: close: %v", label, err)
	}
	for name, n := range got {
		for part := 0; part < n; part++ {
			// A later segment behind a torn one is set aside, not deleted.
			fscktest.CheckCleanButQuarantines(t, p.FS, path.Join(campaignDir, fmt.Sprintf("%s-%d", name, part)))
		}
	}
	if t.Failed() {
		t.Fatalf("%s: fsck", label)
	}
}
