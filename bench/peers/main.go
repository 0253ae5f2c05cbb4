// Command peers runs seglog's write workloads side by side with other Go
// write-ahead logs — etcd's WAL, hashicorp/raft-wal, tidwall/wal and the
// NATS JetStream file store (embedded server, in-process connection) — and
// a raw file append, the floor, all in one process with interleaved rounds.
//
// It is a separate module so the peers' dependencies stay out of seglog's
// go.mod. Run it from this directory:
//
//	go run . -rounds 3 -plot ../../docs/img/peers.png -json peers.json
//
// Every round of every engine starts in a fresh directory, writes the same
// records (same sizes, same batches), is timed, and is then read back
// record by record with the engine's own reader (untimed), so no engine is
// timed writing nothing. The engines' order rotates each round. Rates are
// medians over the timed rounds; each engine's ratio is the median of its
// per-round rate ÷ the raw floor's rate in the same round.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seglog/seglog/bench"
)

// workload is one write pattern, run against every peer.
type workload struct {
	name    string
	size    int  // record bytes
	batch   int  // records per append call
	writers int  // concurrent appenders
	sync    bool // fsync per call (the peer's durable mode)
	calls   int  // append calls per writer per round, at least (rounds last -round-time)
	// paired: each round runs every peer with 1 writer and then with
	// writers writers, and the ratio is the second rate ÷ the first (the
	// group-commit speedup under the same machine conditions).
	paired bool
}

var workloads = []workload{
	{"no fsync, 1 KiB records, batches of 100", 1024, 100, 1, false, 1000, false},
	{"no fsync, 100 B records, batches of 100", 100, 100, 1, false, 2000, false},
	{"fsync per call, 1 KiB records, batches of 100", 1024, 100, 1, true, 150, false},
	{"fsync per call, 100 B records, batches of 100", 100, 100, 1, true, 150, false},
	{"fsync, 1 writer, single 1 KiB records", 1024, 1, 1, true, 400, false},
	{"fsync, 64 writers, single 1 KiB records", 1024, 1, 64, true, 60, false},
	{"fsync, 64 writers ÷ 1 writer, paired in each round, single 1 KiB records", 1024, 1, 64, true, 60, true},
}

// The floors every ratio is taken against: the plain raw file (the
// column "× raw floor"), and the two that reserve blocks ahead as seglog
// does (issue 17): bare values (payload) and seglog's own batches built
// per call (reserved). The read rate is compared with the reserved
// floor's: pread of the same kind of file and record.Iterator over it.
const (
	floorPlain    = "raw file"
	floorPayload  = "raw file, reserved"
	floorReserved = "raw file, reserved, framed"
)

// roundTime is how long a round lasts at least (-round-time).
var roundTime = time.Second

// result is one peer on one workload.
type result struct {
	Workload      string  `json:"workload"`
	Peer          string  `json:"peer"`
	Durability    string  `json:"durability"`
	RecordBytes   int     `json:"record_bytes"`
	Batch         int     `json:"batch"`
	Writers       int     `json:"writers"`
	Sync          bool    `json:"fsync"`
	Records       int64   `json:"records_per_round"` // the fewest a timed round wrote
	RecordsPerSec float64 `json:"records_per_sec"`
	BytesPerSec   float64 `json:"bytes_per_sec"`
	// Ratio and RoundRatios are to the raw floor, except in a paired
	// workload, where they are the many-writer rate ÷ the 1-writer rate
	// (and RoundRates is empty).
	Ratio       float64   `json:"ratio_to_raw_floor"`
	RoundRates  []float64 `json:"round_records_per_sec"`
	RoundRatios []float64 `json:"round_ratios"`
	// RatioPayload and RatioReserved are the medians of the per-round
	// ratios to the payload and reserved floors (when they ran).
	RatioPayload  float64 `json:"ratio_to_payload_floor,omitempty"`
	RatioReserved float64 `json:"ratio_to_reserved_floor,omitempty"`
	ReadPerSec    float64 `json:"read_records_per_sec,omitempty"`
	ReadRatio     float64 `json:"read_ratio_to_reserved_floor,omitempty"`
	roundPayload  []float64
	roundReserved []float64
	roundReads    []float64
	roundReadRat  []float64
	Verified      int64  `json:"verified_records"`
	Error         string `json:"error,omitempty"`
}

func main() {
	rounds := flag.Int("rounds", 3, "timed rounds per workload (after one warm-up round)")
	scale := flag.Float64("scale", 1, "multiply every workload's append calls by this")
	only := flag.String("only", "", "run only workloads (with -raft: shapes) whose name matches this regular expression")
	peersRe := flag.String("peers", "", "run only peers whose name matches this regular expression (the three raw floors always run; with -raft: stores)")
	dir := flag.String("dir", "", "parent of the temporary directories (default: the system's)")
	jsonOut := flag.String("json", "", "write all results as JSON to this file")
	plotOut := flag.String("plot", "", "draw the results into this PNG file")
	flag.DurationVar(&roundTime, "round-time", roundTime, "a round of each engine lasts at least this long (its writers go on past the workload's calls until it has passed)")
	raftMode := flag.Bool("raft", false, "run the hashicorp/raft log store comparison (raft.go) instead")
	raftCommands := flag.Int("raft-commands", 20000, "commands per 3-node cluster run in -raft mode")
	from := flag.String("from", "", "do not run: read results written by -json (several files, comma-separated; a later file's workload replaces an earlier one's) and print and plot them")
	flag.Parse()
	if *raftMode {
		raftMain(*dir, *rounds, *raftCommands, *only, *peersRe, *jsonOut, *plotOut, *from)
		return
	}
	if *from != "" {
		all, err := loadResults(strings.Split(*from, ","))
		if err != nil {
			fail(err)
		}
		printTargets(all)
		if *plotOut != "" {
			if err := plotResults(*plotOut, all); err != nil {
				fail(err)
			}
		}
		return
	}

	var selected []peer
	pre := regexp.MustCompile(*peersRe)
	for _, p := range peers {
		if p.name == floorPlain || p.name == floorPayload || p.name == floorReserved || pre.MatchString(p.name) {
			selected = append(selected, p)
		}
	}
	wre := regexp.MustCompile(*only)
	base, err := os.MkdirTemp(*dir, "seglog-peers-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(base)

	host, _ := os.Hostname()
	fmt.Printf("bench/peers: %s, %s/%s, %d CPUs, %s, %d timed rounds (+1 warm-up), scale %g, host %s\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), *rounds, *scale, host)
	var all []result
	for _, w := range workloads {
		if !wre.MatchString(w.name) {
			continue
		}
		w.calls = max(1, int(float64(w.calls)*(*scale)))
		res := runWorkload(base, w, selected, *rounds)
		printTable(w, res)
		all = append(all, res...)
	}
	printDurability(selected)
	printTargets(all)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(all, "", "  ")
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			fail(err)
		}
	}
	if *plotOut != "" {
		if err := plotResults(*plotOut, all); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "peers:", err)
	os.Exit(1)
}

// values returns the records for one writer: distinct, incompressible
// enough, made before anything is timed.
func values(size, n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	buf := make([]byte, size*n)
	for i := range buf {
		buf[i] = "0123456789abcdef"[rng.IntN(16)]
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = buf[i*size : (i+1)*size : (i+1)*size]
	}
	return out
}

// oneRound runs w against p in a fresh directory and returns the write
// rate, the rate of reading every record back with the engine's own
// reader, and the records read back. Each writer makes at least w.calls
// calls and goes on until roundTime has passed.
func oneRound(base string, w workload, p peer, data [][][]byte) (rate, readRate float64, verified int64, err error) {
	dir, err := os.MkdirTemp(base, "run-")
	if err != nil {
		return 0, 0, 0, err
	}
	defer os.RemoveAll(dir)
	s, err := p.open(dir, w.sync)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("open: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			s.Close()
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, w.writers)
	calls := make([]int, w.writers)
	t0 := time.Now()
	deadline := t0.Add(roundTime)
	for wr := range w.writers {
		wg.Go(func() {
			recs := data[wr]
			c := 0
			for ; c < w.calls || time.Now().Before(deadline); c++ {
				i := (c * w.batch) % (len(recs) - w.batch + 1)
				if err := s.Append(recs[i : i+w.batch]); err != nil {
					errs[wr] = err
					break
				}
			}
			calls[wr] = c
		})
	}
	wg.Wait()
	elapsed := time.Since(t0)
	for _, e := range errs {
		if e != nil {
			return 0, 0, 0, fmt.Errorf("append: %w", e)
		}
	}
	var want int64
	for _, c := range calls {
		want += int64(c * w.batch)
	}
	t1 := time.Now()
	verified, err = s.Verify(want, w.size)
	readTime := time.Since(t1)
	if err == nil && verified != want {
		err = fmt.Errorf("read back %d records, wrote %d", verified, want)
	}
	if err != nil {
		return 0, 0, verified, fmt.Errorf("verify: %w", err)
	}
	closed = true
	if err := s.Close(); err != nil {
		return 0, 0, verified, fmt.Errorf("close: %w", err)
	}
	return float64(want) / elapsed.Seconds(), float64(want) / readTime.Seconds(), verified, nil
}

func runWorkload(base string, w workload, ps []peer, rounds int) []result {
	data := make([][][]byte, w.writers)
	for i := range data {
		data[i] = values(w.size, max(w.batch*8, 1024), uint64(i+1))
	}
	res := make([]result, len(ps))
	for i, p := range ps {
		res[i] = result{Workload: w.name, Peer: p.name, Durability: p.durability(w.sync), RecordBytes: w.size,
			Batch: w.batch, Writers: w.writers, Sync: w.sync}
	}
	floor := func(name string) int {
		return slices.IndexFunc(ps, func(p peer) bool { return p.name == name })
	}
	payload, reserved := floor(floorPayload), floor(floorReserved)
	single := w
	single.writers = 1
	for r := -1; r < rounds; r++ {
		rates := make([]float64, len(ps))
		reads := make([]float64, len(ps))
		// Rotate the order each round so no peer always follows the same one.
		for k := range ps {
			i := (k + r + 1) % len(ps)
			if res[i].Error != "" {
				continue
			}
			if tty {
				fmt.Fprintf(os.Stderr, "\r%-60.60s round %2d: %-24s", w.name, r, ps[i].name)
			}
			var one float64
			var err error
			if w.paired {
				// The single writer first, then the many, back to back.
				var v int64
				one, _, v, err = oneRound(base, single, ps[i], data)
				res[i].Verified += v
			}
			if err == nil {
				var rate, read float64
				var v int64
				rate, read, v, err = oneRound(base, w, ps[i], data)
				res[i].Verified += v
				if err == nil && r >= 0 && (res[i].Records == 0 || v < res[i].Records) {
					res[i].Records = v
				}
				rates[i], reads[i] = rate, read
				if w.paired {
					rates[i] = rate / one // the speedup stands in for the rate
				}
			}
			if err != nil {
				res[i].Error = err.Error()
				fmt.Fprintf(os.Stderr, "\n%s: %s: %v\n", w.name, ps[i].name, err)
				rates[i] = 0
			}
		}
		if r < 0 {
			continue
		}
		for i := range ps {
			if res[i].Error != "" {
				continue
			}
			if w.paired {
				res[i].RoundRatios = append(res[i].RoundRatios, rates[i])
				continue
			}
			if rates[0] > 0 {
				res[i].RoundRates = append(res[i].RoundRates, rates[i])
				res[i].RoundRatios = append(res[i].RoundRatios, rates[i]/rates[0])
			}
			if payload >= 0 && rates[payload] > 0 {
				res[i].roundPayload = append(res[i].roundPayload, rates[i]/rates[payload])
			}
			if reserved >= 0 && rates[reserved] > 0 {
				res[i].roundReserved = append(res[i].roundReserved, rates[i]/rates[reserved])
				res[i].roundReadRat = append(res[i].roundReadRat, reads[i]/reads[reserved])
			}
			res[i].roundReads = append(res[i].roundReads, reads[i])
		}
	}
	if tty {
		fmt.Fprintf(os.Stderr, "\r%100s\r", "")
	} else {
		fmt.Fprintf(os.Stderr, "%s: done\n", w.name)
	}
	for i := range res {
		res[i].RecordsPerSec = bench.Median(res[i].RoundRates)
		res[i].BytesPerSec = res[i].RecordsPerSec * float64(w.size)
		res[i].Ratio = bench.Median(res[i].RoundRatios)
		res[i].RatioPayload = bench.Median(res[i].roundPayload)
		res[i].RatioReserved = bench.Median(res[i].roundReserved)
		res[i].ReadPerSec = bench.Median(res[i].roundReads)
		res[i].ReadRatio = bench.Median(res[i].roundReadRat)
	}
	return res
}

// tty is whether stderr is a terminal: only then is the round-by-round
// status line redrawn in place.
var tty = func() bool {
	fi, err := os.Stderr.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}()

func printTable(w workload, res []result) {
	fmt.Printf("### %s\n\n", w.name)
	fmt.Printf("%d writer(s) × at least %d calls of %d × %d B per round, rounds of at least %v\n\n", w.writers, w.calls, w.batch, w.size, roundTime)
	if w.paired {
		fmt.Printf("| engine | %d writers ÷ 1 writer (median [min–max] of the rounds) | read back |\n", w.writers)
		fmt.Println("|---|---|---:|")
		for _, r := range res {
			if r.Error != "" {
				fmt.Printf("| %s | failed: %s | %d |\n", r.Peer, strings.ReplaceAll(r.Error, "|", "/"), r.Verified)
				continue
			}
			fmt.Printf("| %s | **%.1f×** [%.1f–%.1f] | %d |\n", r.Peer, r.Ratio, slices.Min(r.RoundRatios), slices.Max(r.RoundRatios), r.Verified)
		}
		fmt.Println()
		return
	}
	fmt.Println("| engine | records/s | MB/s | × raw floor (median [min–max]) | × payload floor | × reserved floor | read records/s | read × reserved floor | read back |")
	fmt.Println("|---|---:|---:|---|---:|---:|---:|---:|---:|")
	for _, r := range res {
		if r.Error != "" {
			fmt.Printf("| %s | — | — | failed: %s | | | | | %d |\n", r.Peer, strings.ReplaceAll(r.Error, "|", "/"), r.Verified)
			continue
		}
		lo, hi := slices.Min(r.RoundRatios), slices.Max(r.RoundRatios)
		fmt.Printf("| %s | %.0f | %.1f | **%.2f×** [%.2f–%.2f] | %s | %s | %.0f | %s | %d |\n", r.Peer, r.RecordsPerSec, r.BytesPerSec/1e6,
			r.Ratio, lo, hi, times(r.RatioPayload), times(r.RatioReserved), r.ReadPerSec, times(r.ReadRatio), r.Verified)
	}
	fmt.Println()
}

// times formats a ratio, or a dash when its floor did not run.
func times(x float64) string {
	if x == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", x)
}

func printDurability(ps []peer) {
	fmt.Println("### What each engine fsyncs")
	fmt.Println()
	fmt.Println("| engine | no-fsync rows | fsync rows |")
	fmt.Println("|---|---|---|")
	for _, p := range ps {
		fmt.Printf("| %s | %s | %s |\n", p.name, p.durability(false), p.durability(true))
	}
	fmt.Println()
}

// printTargets prints seglog's ratios against the targets, and
// the group-commit comparisons.
func printTargets(all []result) {
	get := func(workload, peer string) *result {
		for i := range all {
			if all[i].Workload == workload && all[i].Peer == peer && all[i].Error == "" {
				return &all[i]
			}
		}
		return nil
	}
	fmt.Println("### seglog against the targets")
	fmt.Println()
	fmt.Println("| target | measured | met |")
	fmt.Println("|---|---|---|")
	for _, t := range []struct {
		w    string
		goal float64
	}{
		{workloads[0].name, 0.85}, {workloads[1].name, 0.6}, {workloads[2].name, 0.95},
	} {
		if r := get(t.w, "seglog"); r != nil {
			fmt.Printf("| %s: ≥ %.2f× raw | %.2f× | %s |\n", t.w, t.goal, r.Ratio, yes(r.Ratio >= t.goal))
		}
	}
	// Issue 17's, against the floors that reserve blocks ahead.
	for _, t := range []struct {
		w     string
		peer  string
		what  string
		goal  float64
		ratio func(*result) float64
	}{
		{workloads[0].name, "seglog", "≥ 0.95× the payload floor", 0.95, func(r *result) float64 { return r.RatioPayload }},
		{workloads[1].name, "seglog", "≥ 0.85× the payload floor", 0.85, func(r *result) float64 { return r.RatioPayload }},
		{workloads[0].name, "seglog", "read back ≥ 0.95× the reserved floor's pread + iterator", 0.95, func(r *result) float64 { return r.ReadRatio }},
		{workloads[1].name, "seglog", "read back ≥ 0.85× the reserved floor's pread + iterator", 0.85, func(r *result) float64 { return r.ReadRatio }},
		{workloads[2].name, "seglog, preallocated", "≥ 1.3× the plain raw file", 1.3, func(r *result) float64 { return r.Ratio }},
	} {
		if r := get(t.w, t.peer); r != nil && t.ratio(r) > 0 {
			fmt.Printf("| %s, %s: %s | %.2f× | %s |\n", t.w, t.peer, t.what, t.ratio(r), yes(t.ratio(r) >= t.goal))
		}
	}
	if r, p := get(workloads[2].name, "seglog, preallocated"), get(workloads[2].name, "raw file, preallocated"); r != nil && p != nil && p.RecordsPerSec > 0 {
		x := r.RecordsPerSec / p.RecordsPerSec
		fmt.Printf("| %s, seglog, preallocated: ≥ 0.95× the raw file preallocated the same way | %.2f× (rates) | %s |\n", workloads[2].name, x, yes(x >= 0.95))
	}
	if r := get(workloads[6].name, "seglog"); r != nil {
		fmt.Printf("| %s: ≥ 20× | %.1f× | %s |\n", workloads[6].name, r.Ratio, yes(r.Ratio >= 20))
	}
	one, many := get(workloads[4].name, "seglog"), get(workloads[5].name, "seglog")
	if one != nil && many != nil {
		x := many.RecordsPerSec / one.RecordsPerSec
		fmt.Printf("| 64 writers, fsync: ≥ 20× seglog's 1-writer rate | %.0f vs %.0f records/s = %.1f× | %s |\n", many.RecordsPerSec, one.RecordsPerSec, x, yes(x >= 20))
	}
	for _, w := range []string{workloads[4].name, workloads[5].name} {
		if n := get(w, "nats jetstream"); many != nil && n != nil {
			x := many.RecordsPerSec / n.RecordsPerSec
			fmt.Printf("| 64 writers, fsync: ≥ 20× NATS (%s) | %.0f vs %.0f records/s = %.1f× | %s |\n", w, many.RecordsPerSec, n.RecordsPerSec, x, yes(x >= 20))
		}
	}
	fmt.Println()
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

// loadResults reads -json files; a workload present in a later file
// replaces the same workload of an earlier one, so a rerun of some
// workloads (for instance with a larger -scale) can stand in for them.
func loadResults(paths []string) ([]result, error) {
	var all []result
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var rs []result
		if err := json.Unmarshal(b, &rs); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		replaced := map[string]bool{}
		for _, r := range rs {
			replaced[r.Workload] = true
		}
		all = slices.DeleteFunc(all, func(r result) bool { return replaced[r.Workload] })
		all = append(all, rs...)
	}
	// Keep the workloads in the order the program runs them.
	order := map[string]int{}
	for i, w := range workloads {
		order[w.name] = i
	}
	slices.SortStableFunc(all, func(a, b result) int { return order[a.Workload] - order[b.Workload] })
	return all, nil
}
