package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// StoreConfig is the store workload (package store, docs/store.md), the
// code behind "seglog bench store": produce by key over a topic against the
// same batches appended to plain Logs, open a store of many partitions, and
// commit for many groups against synced appends. Every field must be set
// (the CLI's flags give the defaults).
type StoreConfig struct {
	Records    int // keyed records per produce round
	ValueBytes int
	Batch      int // records per Produce call
	Partitions int
	Rounds     int
	OpenParts  int    // partitions of the open workload
	FillEvery  int    // every FillEvery-th of them gets records
	Groups     int    // groups of the commit workload
	Dir        string // the run's temporary directory is made below it ("": the system's)
}

// StoreResult is a store run's figures; durations in seconds.
type StoreResult struct {
	Workload string `json:"workload"`

	Records        int     `json:"records_per_round"`
	ValueBytes     int     `json:"value_bytes"`
	Partitions     int     `json:"partitions"`
	Batch          int     `json:"records_per_call"`
	StoreMBps      float64 `json:"store_mb_per_s"`
	LogsMBps       float64 `json:"logs_mb_per_s"`
	ProduceRatio   float64 `json:"produce_ratio"`
	OpenPartitions int     `json:"open_partitions"`
	FilledParts    int     `json:"filled_partitions"`
	BuildSeconds   float64 `json:"build_seconds"`
	OpenSeconds    float64 `json:"open_seconds"`
	DescribeSecs   float64 `json:"describe_seconds"`
	Groups         int     `json:"groups"`
	CommitSeconds  float64 `json:"commit_seconds"`
	CommitsPerSec  float64 `json:"commits_per_s"`
	SyncAppendsPS  float64 `json:"sync_appends_per_s"`
	CommitRatio    float64 `json:"commit_ratio"`
}

// RunStore runs the store workload in a temporary directory below cfg.Dir,
// removed at the end.
func RunStore(ctx context.Context, cfg StoreConfig) (res StoreResult, err error) {
	dir, err := MakeRunDir(cfg.Dir, "store")
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, vfs.RemoveAll(fs, dir)) }()
	res = StoreResult{Workload: "store", Records: cfg.Records, ValueBytes: cfg.ValueBytes, Partitions: cfg.Partitions,
		Batch: cfg.Batch, OpenPartitions: cfg.OpenParts, Groups: cfg.Groups}
	if err := storeProduce(ctx, cfg, filepath.Join(dir, "produce"), &res); err != nil {
		return res, fmt.Errorf("produce: %w", err)
	}
	if err := storeOpen(ctx, cfg, filepath.Join(dir, "open"), &res); err != nil {
		return res, fmt.Errorf("open: %w", err)
	}
	return res, nil
}

// storeProduce runs the produce workload, then the commit workload on
// the same store.
func storeProduce(ctx context.Context, cfg StoreConfig, dir string, res *StoreResult) error {
	rng := rand.New(rand.NewPCG(1, 2))
	value := make([]byte, cfg.ValueBytes)
	for i := range value {
		value[i] = byte('a' + rng.IntN(26))
	}
	recs := make([]record.Record, cfg.Records)
	for i := range recs {
		recs[i] = record.Record{Key: []byte("booking-" + strconv.Itoa(rng.IntN(1_000_000))), Value: value, Timestamp: 1}
	}
	// The direct side's batches: each call's records grouped by the
	// partition the store would pick, in the order the store appends them.
	type call struct{ parts [][]record.Record }
	calls := make([]call, 0, len(recs)/cfg.Batch+1)
	for from := 0; from < len(recs); from += cfg.Batch {
		c := call{parts: make([][]record.Record, cfg.Partitions)}
		for _, r := range recs[from:min(from+cfg.Batch, len(recs))] {
			p := store.PartitionForKey(r.Key, cfg.Partitions)
			c.parts[p] = append(c.parts[p], r)
		}
		calls = append(calls, c)
	}

	s, err := store.Open(filepath.Join(dir, "store"), store.Options{Logger: discardLogger})
	if err != nil {
		return err
	}
	defer func() {
		if s != nil {
			s.Close()
		}
	}()
	if err := s.CreateTopic("bookings", cfg.Partitions, store.DefaultTopicConfig()); err != nil {
		return err
	}
	logs := make([]*seglog.Log, cfg.Partitions)
	for p := range logs {
		l, err := seglog.Open(filepath.Join(dir, "logs", strconv.Itoa(p)), seglog.Options{Logger: discardLogger})
		if err != nil {
			return err
		}
		defer l.Close()
		logs[p] = l
	}
	// The two sides take turns call by call, the first turn alternating,
	// so that both see the same machine: on a shared machine the load and
	// the page cache's writeback change from one second to the next.
	storeCall := func(c int) (time.Duration, error) {
		from := c * cfg.Batch
		start := time.Now()
		_, err := s.Produce("bookings", recs[from:min(from+cfg.Batch, len(recs))]...)
		return time.Since(start), err
	}
	logsCall := func(c int) (time.Duration, error) {
		start := time.Now()
		for p, batch := range calls[c].parts {
			if len(batch) == 0 {
				continue
			}
			if _, err := logs[p].Append(batch...); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	var storeTimes, logTimes []time.Duration
	for round := range cfg.Rounds + 1 {
		if err := ctx.Err(); err != nil {
			return err
		}
		var ts, tl time.Duration
		for c := range calls {
			var a, b time.Duration
			var err error
			if (c+round)%2 == 0 {
				if a, err = storeCall(c); err == nil {
					b, err = logsCall(c)
				}
			} else {
				if b, err = logsCall(c); err == nil {
					a, err = storeCall(c)
				}
			}
			if err != nil {
				return err
			}
			ts, tl = ts+a, tl+b
		}
		if round > 0 { // the first is the warm-up
			storeTimes, logTimes = append(storeTimes, ts), append(logTimes, tl)
		}
	}
	mb := float64(cfg.Records) * float64(cfg.ValueBytes+len("booking-000000")) / 1e6
	res.StoreMBps = mb / upperMedian(storeTimes).Seconds()
	res.LogsMBps = mb / upperMedian(logTimes).Seconds()
	// The ratio is the median of the rounds' ratios: a round's two sides
	// ran interleaved, under the same conditions.
	ratios := make([]float64, len(storeTimes))
	for i := range ratios {
		ratios[i] = logTimes[i].Seconds() / storeTimes[i].Seconds()
	}
	slices.Sort(ratios)
	res.ProduceRatio = ratios[len(ratios)/2]
	// Every record arrived where its key says, on both sides.
	for p := range cfg.Partitions {
		l, release, err := s.AcquireLog("bookings", int32(p))
		if err != nil {
			return err
		}
		end := l.EndOffset()
		release()
		if end != logs[p].EndOffset() {
			return fmt.Errorf("partition %d: the store holds %d records, the Log %d", p, end, logs[p].EndOffset())
		}
	}

	// Commit: every partition of the topic, for each group.
	offsets := make(map[int32]int64, cfg.Partitions)
	for p := range cfg.Partitions {
		offsets[int32(p)] = int64(cfg.Records / cfg.Partitions)
	}
	commitBatch := make([]record.Record, cfg.Partitions)
	for i := range commitBatch {
		commitBatch[i] = record.Record{Key: []byte(fmt.Sprintf("group-0000bookings%04d", i)), Value: make([]byte, 26)}
	}
	// The direct side appends each group's batch to the Log its offsets
	// partition would be, so both fsync the same files in the same order.
	syncLogs := make([]*seglog.Log, store.DefaultOffsetsPartitions)
	for i := range syncLogs {
		l, err := seglog.Open(filepath.Join(dir, "synced", strconv.Itoa(i)), seglog.Options{Logger: discardLogger, LogConfig: seglog.LogConfig{Sync: seglog.SyncAlways}})
		if err != nil {
			return err
		}
		defer l.Close()
		syncLogs[i] = l
	}
	// Untimed: the first commit syncs the produced data (a commit never
	// points past what is durable), and each Log's first append reserves
	// its file.
	if err := s.Commit("warm-up", "bookings", offsets); err != nil {
		return err
	}
	for _, l := range syncLogs {
		if _, err := l.Append(commitBatch...); err != nil {
			return err
		}
	}
	var commits, appends time.Duration
	for g := range cfg.Groups {
		group := fmt.Sprintf("group-%04d", g)
		l := syncLogs[store.OffsetsPartitionFor(group, len(syncLogs))]
		commit := func() error {
			start := time.Now()
			err := s.Commit(group, "bookings", offsets)
			commits += time.Since(start)
			return err
		}
		appendSynced := func() error {
			start := time.Now()
			_, err := l.Append(commitBatch...)
			appends += time.Since(start)
			return err
		}
		var err error
		if g%2 == 0 {
			if err = commit(); err == nil {
				err = appendSynced()
			}
		} else {
			if err = appendSynced(); err == nil {
				err = commit()
			}
		}
		if err != nil {
			return err
		}
	}
	res.CommitSeconds = commits.Seconds()
	res.CommitsPerSec = float64(cfg.Groups) / commits.Seconds()
	res.SyncAppendsPS = float64(cfg.Groups) / appends.Seconds()
	res.CommitRatio = res.CommitsPerSec / res.SyncAppendsPS
	err = s.Close()
	s = nil
	if err != nil {
		return err
	}
	// Reopened, the offsets are rebuilt from __consumer_offsets.
	s2, err := store.Open(filepath.Join(dir, "store"), store.Options{Logger: discardLogger, ReadOnly: true})
	if err != nil {
		return err
	}
	defer s2.Close()
	if n := len(s2.Groups()); n != cfg.Groups+1 {
		return fmt.Errorf("reopened, the store has %d groups, want %d", n, cfg.Groups)
	}
	return nil
}

// storeOpen builds a store of many partitions and times its opens.
func storeOpen(ctx context.Context, cfg StoreConfig, dir string, res *StoreResult) error {
	tc := store.DefaultTopicConfig()
	tc.SegmentIndexBytes = 4096
	start := time.Now()
	s, err := store.Open(dir, store.Options{Logger: discardLogger})
	if err != nil {
		return err
	}
	err = s.CreateTopic("many", cfg.OpenParts, tc)
	filled := 0
	for p := 0; err == nil && p < cfg.OpenParts; p += cfg.FillEvery {
		_, err = s.ProduceTo("many", int32(p), record.Record{Key: []byte("k"), Value: []byte("v")})
		filled++
	}
	if err := errors.Join(err, s.Close()); err != nil {
		return err
	}
	res.BuildSeconds = time.Since(start).Seconds()
	res.FilledParts = filled
	var opens []time.Duration
	for round := range cfg.Rounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		s, err := store.Open(dir, store.Options{Logger: discardLogger})
		if err != nil {
			return err
		}
		opens = append(opens, time.Since(start))
		if round == 0 {
			start = time.Now()
			info, err := s.DescribeTopic("many")
			if err != nil {
				s.Close()
				return err
			}
			res.DescribeSecs = time.Since(start).Seconds()
			var total int64
			for _, p := range info.Partitions {
				total += p.EndOffset
			}
			if total != int64(filled) {
				s.Close()
				return fmt.Errorf("the store holds %d records, want %d", total, filled)
			}
		}
		if err := s.Close(); err != nil {
			return err
		}
	}
	res.OpenSeconds = upperMedian(opens).Seconds()
	return nil
}

// upperMedian is the middle duration, the upper one of an even count
// (medianDuration averages the two): the rule the store figures were
// published with.
func upperMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// WriteStore prints a store run as "seglog bench store" does.
func WriteStore(w io.Writer, r StoreResult) error {
	_, err := fmt.Fprintf(w, `produce  %d keyed records of %d B over %d partitions, %d per call
         store.Produce  %8.1f MB/s
         %-2d Logs        %8.1f MB/s   (same batches appended directly)
         ratio          %8.2f×
open     %d partitions (%d holding records), built in %.1f s
         Open           %8.3f s      (median of clean-shutdown opens)
         describe all   %8.3f s
commit   %d groups × %d partitions, each commit fsynced
         store.Commit   %8.0f /s     (%.2f s in all)
         synced Append  %8.0f /s     (a batch of as many records, 50 Logs)
         ratio          %8.2f×
`, r.Records, r.ValueBytes, r.Partitions, r.Batch, r.StoreMBps, r.Partitions, r.LogsMBps, r.ProduceRatio,
		r.OpenPartitions, r.FilledParts, r.BuildSeconds, r.OpenSeconds, r.DescribeSecs,
		r.Groups, r.Partitions, r.CommitsPerSec, r.CommitSeconds, r.SyncAppendsPS, r.CommitRatio)
	return err
}
