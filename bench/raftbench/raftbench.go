// Package raftbench compares hashicorp/raft log stores side by side in one
// process and one run: seglog's raftlog.Store against whatever peers the
// caller passes in (raft-wal and raft-boltdb v2 for `seglog bench raft`,
// built with -tags benchextras, and `bench/peers -raft`). Every store is
// driven through the public raft.LogStore and raft.StableStore API only,
// with its durable defaults, on the shapes issue 29 names: StoreLogs of 1,
// 16 and 128 entries of 128 B and 1 KiB; GetLog sequential and random over
// 1 KiB entries stored 64 per call; Set, SetUint64 and Get of the keys raft
// writes; and a 3-node in-process cluster's applied commands per second.
//
// The package imports no peer itself, so the peers' modules stay out of
// any binary that does not ask for them.
package raftbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/raftlog"
	"github.com/seglog/seglog/vfs"
)

// Store is what each peer opens: a raft log store that is also its stable
// store, as all three compared stores are.
type Store interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// Peer is one store kind. Open opens (creating if needed) a store in dir,
// which may not exist yet.
type Peer struct {
	Name string
	Open func(dir string) (Store, error)
}

// The stores' names. Ratios are taken to the peers named PeerWAL and
// PeerBolt, when they run.
const (
	PeerSeglog = "seglog raftlog"
	PeerWAL    = "raft-wal"
	PeerBolt   = "raft-boltdb"
)

// SeglogPeer is seglog's raftlog.Store with its default Options.
var SeglogPeer = Peer{PeerSeglog, func(dir string) (Store, error) { return raftlog.Open(dir, raftlog.Options{}) }}

// Result is one peer on one shape. Its JSON names are what bench/peers
// -raft has written since before this package, so older -json files load.
type Result struct {
	Test    string  `json:"test"`
	Peer    string  `json:"peer"`
	NsPerOp float64 `json:"ns_per_op,omitempty"`
	PerSec  float64 `json:"per_sec,omitempty"`
	// Ratio, RatioBolt and RatioFloor are the medians over rounds of this
	// store's rate ÷ raft-wal's, ÷ raft-boltdb's and ÷ the floor's in the
	// same round.
	Ratio      float64 `json:"ratio_to_raft_wal,omitempty"`
	RatioBolt  float64 `json:"ratio_to_raft_boltdb,omitempty"`
	RatioFloor float64 `json:"ratio_to_floor,omitempty"`
	Rounds     int     `json:"rounds"`
	Error      string  `json:"error,omitempty"`
}

// Config is one run.
type Config struct {
	// Peers are the stores compared, in the order of the first round
	// (the order rotates by one each round).
	Peers []Peer
	// Rounds is how many times every shape runs on every peer (at least 1).
	Rounds int
	// RoundTime is how long each peer runs each shape in each round, at
	// least (not the cluster, which applies Commands).
	RoundTime time.Duration
	// Commands is how many 1 KiB commands the 3-node cluster applies.
	Commands int
	// Only, when not nil, selects the shapes whose name it matches.
	Only *regexp.Regexp
	// Progress, when not nil, gets a line as each shape's round starts.
	Progress io.Writer
	// Rows, when not nil, gets each shape's row (WriteRows) as soon as
	// it is measured, the header before the first.
	Rows io.Writer
}

// Run runs every selected shape on every peer, Rounds times with the
// peers' order rotating, each store fresh in its own directory below dir
// (which must exist; what Run makes in it is removed), and returns per
// shape one Result per peer, in the order of cfg.Peers. A store's error
// ends that store's rounds of that shape, not the run; ctx ends the run
// between two stores' turns.
func Run(ctx context.Context, dir string, cfg Config) ([]Result, error) {
	if cfg.Rounds < 1 {
		return nil, fmt.Errorf("raftbench: %d rounds: need at least 1", cfg.Rounds)
	}
	if len(cfg.Peers) == 0 {
		return nil, errors.New("raftbench: no peers")
	}
	var all []Result
	seq := 0
	for _, sh := range Shapes(cfg.Commands) {
		if cfg.Only != nil && !cfg.Only.MatchString(sh.Name) {
			continue
		}
		res, err := measure(sh.Name, cfg.Peers, cfg.Rounds, func(p Peer, round int) (float64, float64, error) {
			if err := ctx.Err(); err != nil {
				return 0, 0, err
			}
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "bench raft: %s, round %d/%d: %s\n", sh.Name, round+1, cfg.Rounds, p.Name)
			}
			seq++
			d := filepath.Join(dir, fmt.Sprintf("%s-%d", "run", seq))
			defer vfs.RemoveAll(vfs.Default, d)
			return runShape(sh, p, d, cfg)
		})
		if err != nil {
			return all, err
		}
		if cfg.Rows != nil {
			WriteRows(cfg.Rows, res, len(all) == 0)
		}
		all = append(all, res...)
	}
	return all, ctx.Err()
}

// runShape runs one shape once on a fresh store of p in dir and returns
// nanoseconds per operation and operations per second (the cluster: 0 and
// commands per second).
func runShape(sh Shape, p Peer, dir string, cfg Config) (float64, float64, error) {
	if sh.Cluster {
		rate, err := ClusterRate(p, dir, cfg.Commands)
		return 0, rate, err
	}
	s, err := p.Open(filepath.Join(dir, "store"))
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	if sh.Setup != nil {
		if err := sh.Setup(s); err != nil {
			return 0, 0, fmt.Errorf("setup: %w", err)
		}
	}
	ns, err := TimeOps(s, sh.Op, cfg.RoundTime)
	if err != nil {
		return 0, 0, err
	}
	return ns, 1e9 / ns, nil
}

// stopped is whether err is the run's context ending: then the run ends
// rather than the store being marked as failed.
func stopped(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// measure runs one shape for every peer, rounds times in rotating order,
// and returns the median per peer with the ratios to raft-wal and
// raft-boltdb: the median over rounds of the ratio within each round
// (rates, so above 1 is better), which a machine whose speed drifts
// between rounds disturbs less than a ratio of medians. A peer that fails
// is not run again on this shape; its Result carries the error.
func measure(test string, peers []Peer, rounds int, run func(p Peer, round int) (ns, rate float64, err error)) ([]Result, error) {
	ns := map[string][]float64{}
	rate := map[string][]float64{}
	errs := map[string]string{}
	toWAL, toBolt, toFloor := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	for r := range rounds {
		got := map[string]float64{}
		for i := range peers {
			p := peers[(i+r)%len(peers)]
			if errs[p.Name] != "" {
				continue
			}
			n, s, err := run(p, r)
			if stopped(err) {
				return nil, err
			}
			if err != nil {
				errs[p.Name] = err.Error()
				continue
			}
			ns[p.Name] = append(ns[p.Name], n)
			rate[p.Name] = append(rate[p.Name], s)
			got[p.Name] = s
		}
		for _, p := range peers {
			if v, ok := got[p.Name]; ok {
				if w := got[PeerWAL]; w > 0 {
					toWAL[p.Name] = append(toWAL[p.Name], v/w)
				}
				if b := got[PeerBolt]; b > 0 {
					toBolt[p.Name] = append(toBolt[p.Name], v/b)
				}
				if f := got[PeerFloor]; f > 0 {
					toFloor[p.Name] = append(toFloor[p.Name], v/f)
				}
			}
		}
	}
	var out []Result
	for _, p := range peers {
		res := Result{Test: test, Peer: p.Name, Error: errs[p.Name], Rounds: len(rate[p.Name])}
		if len(rate[p.Name]) > 0 {
			res.NsPerOp, res.PerSec = bench.Median(ns[p.Name]), bench.Median(rate[p.Name])
		}
		res.Ratio, res.RatioBolt, res.RatioFloor = bench.Median(toWAL[p.Name]), bench.Median(toBolt[p.Name]), bench.Median(toFloor[p.Name])
		out = append(out, res)
	}
	return out, nil
}

// WriteRows prints one line per shape (after a header line when header is
// set): each store's median time per operation in µs (the cluster:
// commands per second), then seglog's ratios to raft-wal and, when they
// ran, raft-boltdb and the floor (rates; above 1, seglog is faster). A
// store that failed shows "refused", with its error on a line below; one
// that did not run, "-". raft-boltdb's and the floor's columns appear only
// when all holds their results: seglog bench raft runs without raft-boltdb
// (its module stays out of the main go.mod), and the floor only when asked.
func WriteRows(w io.Writer, all []Result, header bool) {
	has := func(peer string) bool { return slices.ContainsFunc(all, func(r Result) bool { return r.Peer == peer }) }
	cols := []string{PeerSeglog, PeerWAL}
	ratios := []string{"÷ wal"}
	if has(PeerBolt) {
		cols, ratios = append(cols, PeerBolt), append(ratios, "÷ bolt")
	}
	if has(PeerFloor) {
		cols, ratios = append(cols, PeerFloor), append(ratios, "÷ floor")
	}
	line := func(shape string, cells, rs []string) {
		var b strings.Builder
		fmt.Fprintf(&b, "%-54s %14s", shape, cells[0])
		for _, c := range cells[1:] {
			fmt.Fprintf(&b, " %13s", c)
		}
		for _, r := range rs {
			fmt.Fprintf(&b, " %9s", r)
		}
		fmt.Fprintln(w, b.String())
	}
	byTest := map[string]map[string]Result{}
	var tests []string
	for _, r := range all {
		if byTest[r.Test] == nil {
			byTest[r.Test] = map[string]Result{}
			tests = append(tests, r.Test)
		}
		byTest[r.Test][r.Peer] = r
	}
	if header {
		line("shape (µs/op; cluster: commands/s)", cols, ratios)
	}
	for _, t := range tests {
		row := byTest[t]
		cell := func(p string) string {
			r, ok := row[p]
			switch {
			case !ok:
				return "-"
			case r.Error != "":
				return "refused"
			case r.NsPerOp > 0 && r.NsPerOp < 100:
				// A cached Get takes tens of nanoseconds: one decimal
				// would print it as 0.0.
				return fmt.Sprintf("%.2f", r.NsPerOp/1e3)
			case r.NsPerOp > 0:
				return fmt.Sprintf("%.1f", r.NsPerOp/1e3)
			default:
				return fmt.Sprintf("%.0f/s", r.PerSec)
			}
		}
		ratio := func(v float64) string {
			if v == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", v)
		}
		s := row[PeerSeglog]
		var cells []string
		for _, p := range cols {
			cells = append(cells, cell(p))
		}
		rs := []string{ratio(s.Ratio)}
		if has(PeerBolt) {
			rs = append(rs, ratio(s.RatioBolt))
		}
		if has(PeerFloor) {
			rs = append(rs, ratio(s.RatioFloor))
		}
		line(t, cells, rs)
		for _, p := range cols {
			if r, ok := row[p]; ok && r.Error != "" {
				fmt.Fprintf(w, "    %s: %s\n", p, r.Error)
			}
		}
	}
}
