package bench

import (
	"slices"
	"time"
)

// Result is one workload's outcome, engine and baseline side by side. Its
// JSON form is what "seglog bench --json" prints, one object per workload.
type Result struct {
	// Workload is "write", "read", "lookup" or "durable".
	Workload string `json:"workload"`
	// Mode is "append" (Log.Append of records) or "batch" (Log.AppendBatch
	// of pre-built producer batches) for writes; empty otherwise.
	Mode string `json:"mode,omitempty"`
	// Records is how many records the engine wrote, sent or looked up in
	// the timed rounds, summed over them (a lookup counts as one record).
	Records int64 `json:"records"`
	// RecordBytes is each record's value size; records have no key.
	RecordBytes int `json:"record_bytes"`
	// Batch is records per append call (per producer batch).
	Batch int `json:"batch"`
	// Writers is the number of concurrent appenders.
	Writers int `json:"writers"`
	// Sync is the Log's durability mode ("none", "always", "periodic"),
	// which the write baseline mirrors.
	Sync string `json:"sync"`
	// Compression is the codec of the batches written.
	Compression string `json:"compression"`
	// Rounds is the number of timed rounds of each side.
	Rounds int `json:"rounds"`

	// RecordsPerSec and BytesPerSec are the median over rounds of the
	// engine's rates. Bytes are record values (RecordBytes per record) for
	// writes and lookups, and bytes put on the socket for reads.
	RecordsPerSec float64 `json:"records_per_sec"`
	BytesPerSec   float64 `json:"bytes_per_sec"`
	// BaselineRecordsPerSec and BaselineBytesPerSec are the same for the
	// baseline (Baseline says what it is).
	BaselineRecordsPerSec float64 `json:"baseline_records_per_sec"`
	BaselineBytesPerSec   float64 `json:"baseline_bytes_per_sec"`
	// Ratio is the median over rounds of engine rate ÷ baseline rate, each
	// engine round paired with the baseline round next to it.
	Ratio float64 `json:"ratio"`
	// RoundRatios are the per-round ratios the median is taken over.
	RoundRatios []float64 `json:"round_ratios"`
	// Baseline says what the baseline did.
	Baseline string `json:"baseline"`
	// SpareZeroed and SparePreallocated count, for the spare floor, the
	// segments its timed rounds began in a file zeroed in the background
	// and in one fallocated because the zeros were not ready.
	SpareZeroed       int `json:"spare_zeroed_segments,omitempty"`
	SparePreallocated int `json:"spare_preallocated_segments,omitempty"`

	// StoredBytesPerRecord is the engine's bytes on disk (or on the wire)
	// per timed record, batch framing included.
	StoredBytesPerRecord float64 `json:"stored_bytes_per_record"`
	// Latency is per call (Append, AppendBatch, Read+WriteTo, or lookup),
	// in microseconds; BaselineLatency is per baseline call (write(+sync),
	// sendfile, or search).
	Latency         Latency `json:"latency_us"`
	BaselineLatency Latency `json:"baseline_latency_us"`
	// CPUSeconds and BaselineCPUSeconds are process user+system time over
	// each side's timed rounds.
	CPUSeconds         float64 `json:"cpu_sec"`
	BaselineCPUSeconds float64 `json:"baseline_cpu_sec"`
	// BaselineRecords is how many records the baseline handled in the
	// timed rounds.
	BaselineRecords int64 `json:"baseline_records"`
	// CPURatio is the baseline's CPU time per record ÷ the engine's, over
	// all timed rounds: 1 means the engine spends what the baseline does
	// per record. On a machine shared with other work it moves far less
	// than Ratio, since time spent waiting for a core is not counted.
	CPURatio float64 `json:"cpu_ratio"`
	// WallSeconds is each side's timed wall time, summed over rounds.
	WallSeconds         float64 `json:"wall_sec"`
	BaselineWallSeconds float64 `json:"baseline_wall_sec"`
	// Verified is how many records were read back (or parsed off the
	// socket, or cross-checked against the baseline's answer) and found as
	// written, outside the timed sections.
	Verified int64 `json:"verified_records"`
	// Speedup, for durable sweeps, is this writer count's rate ÷ the
	// 1-writer rate of the same sweep.
	Speedup float64 `json:"speedup_vs_1_writer,omitempty"`

	// Samples is throughput over time, for plots.
	Samples []Sample `json:"-"`
}

// Latency summarises an HDR histogram of call latencies, in microseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Sample is the rate of one side over one sampling period.
type Sample struct {
	At          time.Duration // since the run started
	Baseline    bool
	Round       int // -1 for warm-up
	BytesPerSec float64
}

// roundStat is one side's timed round.
type roundStat struct {
	records int64
	bytes   int64 // for the rate: value bytes, or wire bytes for reads
	stored  int64 // engine bytes on disk or wire
	wall    time.Duration
	cpu     time.Duration
	// zeroedSegs and preallocatedSegs count the spare floor's segments
	// begun in a zeroed file and in a fallocated one.
	zeroedSegs, preallocatedSegs int
}

func (r roundStat) recordsPerSec() float64 { return float64(r.records) / r.wall.Seconds() }
func (r roundStat) bytesPerSec() float64   { return float64(r.bytes) / r.wall.Seconds() }

// Median is the median of xs, 0 for none (xs is not changed): what every
// benchmark here reports of its rounds, and of its rounds' ratios.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// summarize fills the rate, ratio and time fields of res from the rounds.
func summarize(res *Result, a, b []roundStat) {
	var ar, ab, br, bb, ratios []float64
	for i := range a {
		ar = append(ar, a[i].recordsPerSec())
		ab = append(ab, a[i].bytesPerSec())
		br = append(br, b[i].recordsPerSec())
		bb = append(bb, b[i].bytesPerSec())
		ratios = append(ratios, a[i].recordsPerSec()/b[i].recordsPerSec())
		res.Records += a[i].records
		res.BaselineRecords += b[i].records
		res.CPUSeconds += a[i].cpu.Seconds()
		res.BaselineCPUSeconds += b[i].cpu.Seconds()
		res.WallSeconds += a[i].wall.Seconds()
		res.BaselineWallSeconds += b[i].wall.Seconds()
		res.StoredBytesPerRecord += float64(a[i].stored)
	}
	if res.Records > 0 {
		res.StoredBytesPerRecord /= float64(res.Records)
	}
	res.Rounds = len(a)
	res.RecordsPerSec, res.BytesPerSec = Median(ar), Median(ab)
	res.BaselineRecordsPerSec, res.BaselineBytesPerSec = Median(br), Median(bb)
	res.Ratio = Median(ratios)
	res.RoundRatios = ratios
	if res.Records > 0 && res.BaselineRecords > 0 && res.CPUSeconds > 0 {
		res.CPURatio = (res.BaselineCPUSeconds / float64(res.BaselineRecords)) / (res.CPUSeconds / float64(res.Records))
	}
}
