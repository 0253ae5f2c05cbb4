package main

// The raft comparison (-raft): seglog's raftlog.Store against raft-wal
// v0.4.1 and raft-boltdb v2 as hashicorp/raft log and stable stores, in
// one process and one run, through the public raft.LogStore and
// raft.StableStore API only, each store with its durable defaults: the
// shapes issue 29 names (StoreLogs of 1, 16 and 128 entries of 128 B and
// 1 KiB; GetLog sequential and random over 1 KiB entries stored 64 per
// call; Set, SetUint64 and Get of the keys raft writes) and a 3-node
// in-process cluster's applied 1 KiB commands per second.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/seglog/seglog/raftlog"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// raftStore is a LogStore that is also a StableStore, as all three are.
type raftStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

type raftPeer struct {
	name string
	open func(dir string) (raftStore, error)
}

// The stores' names; ratios are taken to the last two.
const (
	peerSeglog = "seglog raftlog"
	peerWAL    = "raft-wal"
	peerBolt   = "raft-boltdb"
)

var raftPeers = []raftPeer{
	{peerSeglog, func(dir string) (raftStore, error) { return raftlog.Open(dir, raftlog.Options{}) }},
	{peerWAL, func(dir string) (raftStore, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return raftwal.Open(dir)
	}},
	{peerBolt, func(dir string) (raftStore, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	}},
}

// raftResult is one peer on one measurement.
type raftResult struct {
	Test    string  `json:"test"`
	Peer    string  `json:"peer"`
	NsPerOp float64 `json:"ns_per_op,omitempty"`
	PerSec  float64 `json:"per_sec,omitempty"`
	// Ratio and RatioBolt are the medians over rounds of this store's
	// rate ÷ raft-wal's and ÷ raft-boltdb's in the same round.
	Ratio     float64 `json:"ratio_to_raft_wal,omitempty"`
	RatioBolt float64 `json:"ratio_to_raft_boltdb,omitempty"`
	Rounds    int     `json:"rounds"`
	Error     string  `json:"error,omitempty"`
}

// raftTest is one measured shape. setup (untimed, may be nil) prepares a
// fresh store; op runs the i-th operation on it (i counts from 0, the
// first few calls untimed warm-up).
type raftTest struct {
	name  string
	setup func(s raftStore) error
	op    func(s raftStore, i int) error
	// cluster tests measure themselves (the 3-node cluster).
	cluster bool
}

// Payload sizes of the shapes issue 29 asks for.
const (
	small = 128
	large = 1024
	// readEntries is how many 1 KiB entries the GetLog shapes store
	// (64 per call, as a leader's MaxAppendEntries batches them) before
	// reading: 50 MiB, more than any store caches by shape alone.
	readEntries = 64 * 800
)

func raftTests(commands int) []raftTest {
	var ts []raftTest
	for _, size := range []int{small, large} {
		for _, n := range []int{1, 16, 128} {
			ts = append(ts, storeLogsTest(n, size))
		}
	}
	ts = append(ts,
		raftTest{name: "GetLog sequential, 1 KiB entries stored 64 per call", setup: fillLog, op: func(s raftStore, i int) error {
			var l raft.Log
			return s.GetLog(uint64(i%readEntries)+1, &l)
		}},
		getLogRandom(),
		raftTest{name: "Set (8-byte value, one key)", op: func(s raftStore, i int) error {
			return s.Set(keyVote, binary.BigEndian.AppendUint64(nil, uint64(i)))
		}},
		raftTest{name: "SetUint64 (one key)", op: func(s raftStore, i int) error {
			return s.SetUint64(keyTerm, uint64(i)+1)
		}},
		raftTest{name: "Get (one of two keys set)", setup: func(s raftStore) error {
			if err := s.Set(keyVote, []byte("node-1")); err != nil {
				return err
			}
			return s.SetUint64(keyTerm, 7)
		}, op: func(s raftStore, i int) error {
			v, err := s.Get(keyVote)
			if err == nil && len(v) != len("node-1") {
				err = fmt.Errorf("Get returned %q", v)
			}
			return err
		}},
		raftTest{name: fmt.Sprintf("3-node cluster, %d applied 1 KiB commands", commands), cluster: true},
	)
	return ts
}

// The keys raft itself stores (raft/api.go: keyCurrentTerm, keyLastVoteCand).
var (
	keyTerm = []byte("CurrentTerm")
	keyVote = []byte("LastVoteCand")
)

// storeLogsTest appends n contiguous entries of size bytes per call, the
// way raft's leader and followers call StoreLogs, from index 1 of a fresh
// store. The entries are built before the op runs; only StoreLogs is
// timed beyond a loop that stamps indexes.
func storeLogsTest(n, size int) raftTest {
	name := fmt.Sprintf("StoreLogs %d × %d B", n, size)
	if size == large {
		name = fmt.Sprintf("StoreLogs %d × 1 KiB", n)
	}
	data := values(size, 1, uint64(size))[0]
	logs := make([]*raft.Log, n)
	for i := range logs {
		logs[i] = &raft.Log{Term: 1, Data: data, AppendedAt: time.Now()}
	}
	return raftTest{name: name, op: func(s raftStore, i int) error {
		for j, l := range logs {
			l.Index = uint64(i*n+j) + 1
		}
		return s.StoreLogs(logs)
	}}
}

// fillLog stores readEntries 1 KiB entries, 64 per call, from index 1.
func fillLog(s raftStore) error {
	data := values(large, 1, 3)[0]
	logs := make([]*raft.Log, 64)
	for i := 0; i < readEntries; i += len(logs) {
		for j := range logs {
			logs[j] = &raft.Log{Index: uint64(i+j) + 1, Term: 1, Data: data, AppendedAt: time.Now()}
		}
		if err := s.StoreLogs(logs); err != nil {
			return err
		}
	}
	return nil
}

// getLogRandom reads entries at indexes drawn from a fixed-seed generator
// (the same sequence for every store and round), as a follower catching
// up from an arbitrary point or a leader answering a lagging peer does.
func getLogRandom() raftTest {
	idx := make([]uint64, 1<<16)
	rng := rand.New(rand.NewPCG(29, 29))
	for i := range idx {
		idx[i] = uint64(rng.IntN(readEntries)) + 1
	}
	return raftTest{name: "GetLog random, 1 KiB entries stored 64 per call", setup: fillLog, op: func(s raftStore, i int) error {
		var l raft.Log
		want := idx[i%len(idx)]
		if err := s.GetLog(want, &l); err != nil {
			return err
		}
		if l.Index != want || len(l.Data) != large {
			return fmt.Errorf("GetLog(%d) returned index %d with %d bytes", want, l.Index, len(l.Data))
		}
		return nil
	}}
}

// timeOps runs op on s, after a few untimed warm-up calls, until at least
// d has passed (and at least 16 calls), and returns the nanoseconds per call.
func timeOps(s raftStore, op func(s raftStore, i int) error, d time.Duration) (float64, error) {
	i := 0
	for ; i < 4; i++ {
		if err := op(s, i); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	n := 0
	for {
		if err := op(s, i); err != nil {
			return 0, err
		}
		i++
		n++
		// Reading the clock every call would be a visible share of a Get.
		if n >= 16 && n%16 == 0 {
			if el := time.Since(start); el >= d {
				return float64(el.Nanoseconds()) / float64(n), nil
			}
		}
	}
}

// raftMain is -raft: run (or, with from, load a -json file of a run) and
// print, write and plot.
func raftMain(dir string, rounds, commands int, only, peersRe, jsonOut, plotOut, from string) {
	var all []raftResult
	if from != "" {
		b, err := os.ReadFile(from)
		if err != nil {
			fail(err)
		}
		if err := json.Unmarshal(b, &all); err != nil {
			fail(fmt.Errorf("%s: %w", from, err))
		}
	} else {
		base, err := os.MkdirTemp(dir, "seglog-raft-")
		if err != nil {
			fail(err)
		}
		defer os.RemoveAll(base)
		host, _ := os.Hostname()
		fmt.Printf("bench/peers -raft: %s, %s/%s, %d CPUs, %s, %d rounds (stores alternating), %s per store per shape, host %s\n\n",
			time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), rounds, roundTime, host)
		pre := regexp.MustCompile(peersRe)
		raftPeers = slices.DeleteFunc(raftPeers, func(p raftPeer) bool { return !pre.MatchString(p.name) })
		all = runRaft(base, rounds, commands, regexp.MustCompile(only))
	}
	printRaftRows(all, true)
	if jsonOut != "" {
		b, _ := json.MarshalIndent(all, "", "  ")
		if err := os.WriteFile(jsonOut, b, 0o644); err != nil {
			fail(err)
		}
	}
	if plotOut != "" {
		if err := plotRaft(plotOut, all); err != nil {
			fail(err)
		}
	}
}

// runRaft runs every test matching only for every raft peer, rounds times
// with the peers' order rotating, each store fresh, and returns medians
// with ratios to raft-wal and raft-boltdb.
func runRaft(base string, rounds, commands int, only *regexp.Regexp) []raftResult {
	var all []raftResult
	for _, tc := range raftTests(commands) {
		if !only.MatchString(tc.name) {
			continue
		}
		res := measure(tc.name, rounds, func(p raftPeer, dir string) (float64, float64, error) {
			if tc.cluster {
				rate, err := clusterRate(p, dir, commands)
				return 0, rate, err
			}
			s, err := p.open(filepath.Join(dir, "store"))
			if err != nil {
				return 0, 0, err
			}
			defer s.Close()
			if tc.setup != nil {
				if err := tc.setup(s); err != nil {
					return 0, 0, fmt.Errorf("setup: %w", err)
				}
			}
			ns, err := timeOps(s, tc.op, roundTime)
			if err != nil {
				return 0, 0, err
			}
			return ns, 1e9 / ns, nil
		}, base)
		printRaftRows(res, len(all) == 0)
		all = append(all, res...)
	}
	fmt.Println()
	return all
}

// measure runs one test for every peer, rounds times in rotating order,
// and returns the median per peer with the ratios to raft-wal and
// raft-boltdb: the median over rounds of the ratio within each round
// (rates, so above 1 is better), which a machine whose speed drifts
// between rounds disturbs less than a ratio of medians.
func measure(test string, rounds int, run func(p raftPeer, dir string) (float64, float64, error), base string) []raftResult {
	ns := map[string][]float64{}
	rate := map[string][]float64{}
	errs := map[string]string{}
	var toWAL, toBolt = map[string][]float64{}, map[string][]float64{}
	for r := range rounds {
		got := map[string]float64{}
		for i := range raftPeers {
			p := raftPeers[(i+r)%len(raftPeers)]
			dir, err := os.MkdirTemp(base, "raft-")
			if err != nil {
				fail(err)
			}
			n, s, err := run(p, dir)
			os.RemoveAll(dir)
			if err != nil {
				errs[p.name] = err.Error()
				continue
			}
			ns[p.name] = append(ns[p.name], n)
			rate[p.name] = append(rate[p.name], s)
			got[p.name] = s
		}
		for _, p := range raftPeers {
			if v, ok := got[p.name]; ok {
				if w := got[peerWAL]; w > 0 {
					toWAL[p.name] = append(toWAL[p.name], v/w)
				}
				if b := got[peerBolt]; b > 0 {
					toBolt[p.name] = append(toBolt[p.name], v/b)
				}
			}
		}
	}
	var out []raftResult
	for _, p := range raftPeers {
		res := raftResult{Test: test, Peer: p.name, Error: errs[p.name]}
		if len(rate[p.name]) > 0 {
			res.NsPerOp, res.PerSec = median(ns[p.name]), median(rate[p.name])
			res.Error = ""
		}
		if len(toWAL[p.name]) > 0 {
			res.Ratio = median(toWAL[p.name])
		}
		if len(toBolt[p.name]) > 0 {
			res.RatioBolt = median(toBolt[p.name])
		}
		res.Rounds = len(rate[p.name])
		out = append(out, res)
	}
	return out
}

// printRaftRows prints one line per test: each store's median time per
// operation (or, for the cluster, commands per second), then seglog's
// ratios to raft-wal and raft-boltdb (rates; above 1, seglog is faster).
func printRaftRows(all []raftResult, header bool) {
	byTest := map[string]map[string]raftResult{}
	var tests []string
	for _, r := range all {
		if byTest[r.Test] == nil {
			byTest[r.Test] = map[string]raftResult{}
			tests = append(tests, r.Test)
		}
		byTest[r.Test][r.Peer] = r
	}
	if header {
		fmt.Printf("%-54s %13s %13s %13s %9s %9s\n", "shape (µs/op; cluster: commands/s)", peerSeglog, peerWAL, peerBolt, "÷ wal", "÷ bolt")
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
		s := row[peerSeglog]
		fmt.Printf("%-54s %13s %13s %13s %9s %9s\n", t, cell(peerSeglog), cell(peerWAL), cell(peerBolt), ratio(s.Ratio), ratio(s.RatioBolt))
		for _, p := range []string{peerSeglog, peerWAL, peerBolt} {
			if r, ok := row[p]; ok && r.Error != "" {
				fmt.Printf("    %s: %s\n", p, r.Error)
			}
		}
	}
}

// countFSM counts applied commands.
type countFSM struct{ n atomic.Uint64 }

func (f *countFSM) Apply(*raft.Log) any { f.n.Add(1); return nil }
func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) {
	return countSnap(f.n.Load()), nil
}
func (f *countFSM) Restore(rc io.ReadCloser) error { return rc.Close() }

type countSnap uint64

func (s countSnap) Persist(sink raft.SnapshotSink) error {
	fmt.Fprint(sink, uint64(s))
	return sink.Close()
}
func (countSnap) Release() {}

// clusterRate runs three nodes of one store kind on in-memory transports
// and returns the commands per second applied on the leader, with up to
// 1024 commands in flight.
func clusterRate(p raftPeer, dir string, commands int) (float64, error) {
	type member struct {
		r     *raft.Raft
		store raftStore
		fsm   *countFSM
	}
	var ms []*member
	var trans []*raft.InmemTransport
	var servers []raft.Server
	for i := range 3 {
		addr, t := raft.NewInmemTransport(raft.ServerAddress(fmt.Sprintf("n%d", i)))
		trans = append(trans, t)
		servers = append(servers, raft.Server{ID: raft.ServerID(addr), Address: addr})
	}
	for _, a := range trans {
		for _, b := range trans {
			if a != b {
				a.Connect(b.LocalAddr(), b)
			}
		}
	}
	defer func() {
		for _, m := range ms {
			m.r.Shutdown().Error()
			m.store.Close()
		}
	}()
	for i := range 3 {
		nd := filepath.Join(dir, fmt.Sprint(i))
		st, err := p.open(filepath.Join(nd, "log"))
		if err != nil {
			return 0, err
		}
		snaps, err := raft.NewFileSnapshotStore(nd, 1, io.Discard)
		if err != nil {
			return 0, err
		}
		c := raft.DefaultConfig()
		c.LocalID = servers[i].ID
		c.LogOutput = io.Discard
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
		if err := raft.BootstrapCluster(c, st, st, snaps, trans[i], raft.Configuration{Servers: servers}); err != nil {
			return 0, err
		}
		m := &member{store: st, fsm: &countFSM{}}
		if m.r, err = raft.NewRaft(c, m.fsm, st, st, snaps, trans[i]); err != nil {
			return 0, err
		}
		ms = append(ms, m)
	}
	var leader *raft.Raft
	for deadline := time.Now().Add(30 * time.Second); leader == nil; {
		for _, m := range ms {
			if m.r.State() == raft.Leader {
				leader = m.r
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd := make([]byte, 1024)
	start := time.Now()
	var pending []raft.ApplyFuture
	for i := range commands {
		pending = append(pending, leader.Apply(cmd, 30*time.Second))
		if len(pending) == 1024 || i == commands-1 {
			for _, f := range pending {
				if err := f.Error(); err != nil {
					return 0, err
				}
			}
			pending = pending[:0]
		}
	}
	return float64(commands) / time.Since(start).Seconds(), nil
}

// plotRaft draws each store's ratio to raft-wal on every test that all
// ran (log scale: the reads differ by orders of magnitude), one column
// per test; raft-wal is the line at 1.
func plotRaft(path string, all []raftResult) error {
	p := plot.New()
	p.Title.Text = "bench/peers -raft: hashicorp/raft log stores, ratio to raft-wal (same run; above 1 is better)"
	p.Y.Label.Text = "× raft-wal"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var tests []string
	col := map[string]int{}
	for _, r := range all {
		if _, ok := col[r.Test]; !ok && r.Ratio > 0 {
			col[r.Test] = len(tests)
			tests = append(tests, r.Test)
		}
	}
	for i, rp := range raftPeers {
		var xys plotter.XYs
		for _, r := range all {
			if c, ok := col[r.Test]; ok && r.Peer == rp.name && r.Ratio > 0 {
				xys = append(xys, plotter.XY{X: float64(c) + (float64(i)-1)*0.15, Y: r.Ratio})
			}
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color = peerColors[(i+2)%len(peerColors)]
		s.GlyphStyle.Radius = vg.Points(4)
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(s)
		p.Legend.Add(rp.name, s)
	}
	short := make([]string, len(tests))
	for i, t := range tests {
		switch {
		case strings.HasPrefix(t, "3-node"):
			short[i] = "3-node cluster\napplied/s"
		default:
			// "GetLog random, 1 KiB entries…" → "GetLog random"; the
			// StoreLogs shapes are short already.
			short[i], _, _ = strings.Cut(t, ",")
			short[i] = strings.Replace(short[i], " (", "\n(", 1)
		}
	}
	p.NominalX(short...)
	p.X.Tick.Label.Font.Size = vg.Points(7)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return savePNG(p, 13*vg.Inch, 6*vg.Inch, path)
}
