package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/seglog/seglog"
)

// LookupConfig is the lookup workload: a log of LogBytes is written
// (untimed), then each round looks up Lookups random offsets with
// Log.Read(offset, 1): the offset index, the segment scan to the batch
// holding the offset, and a Slice made and closed.
type LookupConfig struct {
	// Options configures the Log.
	Options seglog.Options
	// RecordSize and Batch shape the batches written. Defaults 1024, 10.
	RecordSize, Batch int
	// LogBytes is the size of the log. Default 128 MiB.
	LogBytes int64
	// Lookups is the number of lookups per round. Default 20,000.
	Lookups int
	// Rounds is the number of timed rounds of each side. Default 5.
	Rounds int
}

func (c *LookupConfig) setDefaults() error {
	if c.RecordSize == 0 {
		c.RecordSize = 1024
	}
	if c.Batch == 0 {
		c.Batch = 10
	}
	if c.LogBytes == 0 {
		c.LogBytes = 128 << 20
	}
	if c.Lookups == 0 {
		c.Lookups = 20_000
	}
	if c.Rounds == 0 {
		c.Rounds = 5
	}
	if c.RecordSize < 0 || c.Batch < 0 || c.LogBytes < 0 || c.Lookups < 0 || c.Rounds < 0 {
		return invalid("negative size, batch, log bytes, lookups or rounds")
	}
	return setLogger(&c.Options)
}

// latencyEvery is how often a lookup is timed on its own: timing every
// call would cost about as much as the baseline's whole search.
const latencyEvery = 16

// RunLookup runs the lookup workload against a binary search over an
// in-memory array of the same batches' offsets.
func RunLookup(ctx context.Context, env Env, cfg LookupConfig) (*Result, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	w, err := openFilled(ctx, env, "lookup", cfg.Options, cfg.RecordSize, cfg.Batch, cfg.LogBytes)
	if err != nil {
		return nil, err
	}
	defer w.close()
	l, r, spans := w.l, w.r, w.spans
	// Both sides look up the same random offsets.
	rng := rand.New(rand.NewPCG(3, 4))
	start, end := l.StartOffset(), l.EndOffset()
	offsets := make([]int64, cfg.Lookups)
	for i := range offsets {
		offsets[i] = start + rng.Int64N(end-start)
	}
	lasts := make([]int64, len(spans))
	for i, s := range spans {
		lasts[i] = s.last
	}
	search := func(off int64) int64 {
		i := sort.Search(len(lasts), func(i int) bool { return lasts[i] >= off })
		return spans[i].first
	}

	res := &Result{
		Workload: "lookup", RecordBytes: cfg.RecordSize, Batch: cfg.Batch, Writers: 1,
		Sync: cfg.Options.Sync.String(), Compression: cfg.Options.Compression.String(),
		Baseline: fmt.Sprintf("binary search over an in-memory array of the same %d batches", len(spans)),
	}
	r.begin(fmt.Sprintf("lookup %d offsets in %d batches", cfg.Lookups, len(spans)), 2*int64(cfg.Rounds+1)*int64(cfg.Lookups), false)
	defer r.end()
	engLat, baseLat := newRecorder(), newRecorder()
	var sink int64
	side := func(baseline bool, round int) (roundStat, error) {
		verify := round < 0
		lat := newRecorder()
		var st roundStat
		var err error
		st.wall, st.cpu, err = timed(func() error {
			var t time.Time
			for i, off := range offsets {
				if i%latencyEvery == 0 {
					t = time.Now()
				}
				var first int64
				if baseline {
					first = search(off)
				} else {
					sl, err := l.Read(off, 1, seglog.ReadOptions{})
					if err != nil {
						return err
					}
					first = sl.FirstOffset()
					if verify {
						if want := search(off); first != want || sl.LastOffset() < off {
							sl.Close()
							return verifyErr("Read(%d) gave batch [%d, %d], want the one at %d", off, first, sl.LastOffset(), want)
						}
						res.Verified++
					}
					sl.Close()
				}
				sink += first
				if i%latencyEvery == 0 {
					lat.record(time.Since(t))
				}
				if i%256 == 255 {
					r.add(256, 256*int64(cfg.RecordSize))
				}
			}
			return nil
		})
		st.records = int64(len(offsets))
		st.bytes = st.records * int64(cfg.RecordSize)
		st.stored = st.bytes
		if !verify {
			if baseline {
				baseLat.merge(lat)
			} else {
				engLat.merge(lat)
			}
		}
		return st, err
	}
	a, b, err := r.interleave(ctx, cfg.Rounds,
		func(round int) (roundStat, error) { return side(false, round) },
		func(round int) (roundStat, error) { return side(true, round) })
	if err != nil {
		return nil, err
	}
	_ = sink
	summarize(res, a, b)
	res.Latency, res.BaselineLatency = engLat.summary(), baseLat.summary()
	res.Samples = r.takeSamples()
	return res, nil
}
