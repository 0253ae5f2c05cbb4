package segment

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// env is a filesystem and a directory to put a segment in.
type env struct {
	name string
	fs   vfs.FS
	dir  string
}

// envs runs f on the real filesystem and on the in-memory one.
func envs(t *testing.T, f func(t *testing.T, e env)) {
	t.Helper()
	t.Run("os", func(t *testing.T) { f(t, env{"os", vfs.OS(), t.TempDir()}) })
	t.Run("mem", func(t *testing.T) {
		m := vfs.NewMem()
		if err := m.MkdirAll("/seg"); err != nil {
			t.Fatal(err)
		}
		f(t, env{"mem", m, "/seg"})
	})
}

func (e env) path(base int64, suffix string) string {
	return filepath.Join(e.dir, FileName(base, suffix))
}

// rec is one record of the model.
type rec struct {
	off, ts int64
}

// mbatch is the model of one appended batch.
type mbatch struct {
	pos, size  int64
	base, last int64
	maxTS      int64
	recs       []rec
	bytes      []byte
}

// model is what a segment should hold, built independently of the segment.
type model struct {
	base    int64
	batches []mbatch
}

func (m *model) size() int64 {
	if len(m.batches) == 0 {
		return 0
	}
	b := m.batches[len(m.batches)-1]
	return b.pos + b.size
}

func (m *model) next() int64 {
	if len(m.batches) == 0 {
		return m.base
	}
	return m.batches[len(m.batches)-1].last + 1
}

// findPosition is FindPosition by brute force: the first batch whose last
// offset is >= offset.
func (m *model) findPosition(offset int64) (mbatch, bool) {
	for _, b := range m.batches {
		if b.last >= offset {
			return b, true
		}
	}
	return mbatch{}, false
}

// offsetForTime is the first record in offset order with ts >= target and
// offset >= from.
func (m *model) offsetForTime(target, from int64) (int64, bool) {
	for _, b := range m.batches {
		for _, r := range b.recs {
			if r.ts >= target && r.off >= from {
				return r.off, true
			}
		}
	}
	return 0, false
}

func (m *model) maxTS() int64 {
	mx := int64(-1)
	for _, b := range m.batches {
		mx = max(mx, b.maxTS)
	}
	return mx
}

// gen makes batches with random record counts, value sizes, offset gaps and
// (non-monotonic) timestamps.
type gen struct {
	r        *rand.Rand
	b        *record.Builder
	next     int64
	ts       int64
	maxValue int
}

func newGen(seed uint64, base int64, maxValue int) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), b: record.NewBuilder(record.None),
		next: base, ts: 1_000_000, maxValue: maxValue}
}

// batch builds the next batch: n records with offsets from g.next (with an
// occasional gap inside, as compaction leaves) and timestamps that wander up
// and down.
func (g *gen) batch(t testing.TB) mbatch {
	t.Helper()
	n := 1 + g.r.IntN(5)
	g.b.Reset()
	g.b.SetBaseOffset(g.next)
	mb := mbatch{base: g.next, maxTS: -1}
	off := g.next
	for i := 0; i < n; i++ {
		g.ts += int64(g.r.IntN(200)) - 80
		v := make([]byte, g.r.IntN(g.maxValue+1))
		for j := range v {
			v[j] = byte(g.r.Uint32())
		}
		if err := g.b.Add(record.Record{Offset: off, Timestamp: g.ts, Key: []byte(fmt.Sprint(off)), Value: v}); err != nil {
			t.Fatal(err)
		}
		mb.recs = append(mb.recs, rec{off, g.ts})
		mb.maxTS = max(mb.maxTS, g.ts)
		mb.last = off
		off += 1 + int64(g.r.IntN(3)/2) // sometimes skip an offset
	}
	b, err := g.b.Build()
	if err != nil {
		t.Fatal(err)
	}
	mb.bytes = append([]byte(nil), b...)
	mb.size = int64(len(b))
	g.next = off + int64(g.r.IntN(2))
	return mb
}

// appendN appends n generated batches to s and the model.
func appendN(t testing.TB, s *Segment, m *model, g *gen, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		mb := g.batch(t)
		mb.pos = m.size()
		if err := s.Append(record.Batch(mb.bytes)); err != nil {
			t.Fatalf("append batch %d: %v", i, err)
		}
		m.batches = append(m.batches, mb)
	}
}

// readFile returns the whole content of a file through the vfs.
func readFile(t testing.TB, fsys vfs.FS, path string) []byte {
	t.Helper()
	return vfstest.ReadFile(t, fsys, path)
}

// writeFile replaces a file's content through the vfs.
func writeFile(t testing.TB, fsys vfs.FS, path string, data []byte) {
	t.Helper()
	vfstest.WriteFile(t, fsys, path, data)
}

// offEntry and timeEntry are decoded index entries (absolute offsets).
type offEntry struct{ off, pos int64 }
type timeEntry struct{ ts, off int64 }

// decodeOffsetIndex decodes .index bytes: int32 relative offset, int32
// position, big-endian.
func decodeOffsetIndex(t testing.TB, b []byte, base int64) []offEntry {
	t.Helper()
	if len(b)%8 != 0 {
		t.Fatalf(".index of %d bytes is not a whole number of entries", len(b))
	}
	var es []offEntry
	for i := 0; i < len(b); i += 8 {
		es = append(es, offEntry{base + int64(int32(binary.BigEndian.Uint32(b[i:]))), int64(binary.BigEndian.Uint32(b[i+4:]))})
	}
	return es
}

// decodeTimeIndex decodes .timeindex bytes: int64 timestamp, int32 relative
// offset, big-endian.
func decodeTimeIndex(t testing.TB, b []byte, base int64) []timeEntry {
	t.Helper()
	if len(b)%12 != 0 {
		t.Fatalf(".timeindex of %d bytes is not a whole number of entries", len(b))
	}
	var es []timeEntry
	for i := 0; i < len(b); i += 12 {
		es = append(es, timeEntry{int64(binary.BigEndian.Uint64(b[i:])), base + int64(int32(binary.BigEndian.Uint32(b[i+8:])))})
	}
	return es
}

// kafkaIndexes computes the index entries Kafka 4.x writes for the model's
// batches (LogSegment.append / recover), including the final time entry of
// onBecomeInactiveSegment.
func kafkaIndexes(m *model, interval int64) ([]offEntry, []timeEntry) {
	var offs []offEntry
	var times []timeEntry
	var since int64
	maxTS, maxOff := int64(-1), m.base
	lastTS := int64(-1)
	offer := func() {
		if maxTS > lastTS {
			times = append(times, timeEntry{maxTS, maxOff})
			lastTS = maxTS
		}
	}
	for _, b := range m.batches {
		if b.maxTS > maxTS {
			maxTS, maxOff = b.maxTS, b.last
		}
		if since > interval {
			offs = append(offs, offEntry{b.last, b.pos})
			offer()
			since = 0
		}
		since += b.size
	}
	offer()
	return offs, times
}

func mustCreate(t testing.TB, e env, base int64, opts Options) *Segment {
	t.Helper()
	s, err := Create(e.fs, e.dir, base, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
