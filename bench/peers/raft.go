package main

// The raft comparison (-raft): seglog's raftlog.Store against raft-wal and
// raft-boltdb as hashicorp/raft log stores, in one process and one run:
// hashicorp/raft's own raftbench functions, a 64-entry StoreLogs (what a
// leader writes per AppendEntries batch: MaxAppendEntries = 64) and a
// 3-node in-process cluster's applied commands per second with 1 KiB
// commands.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	raftbench "github.com/hashicorp/raft/bench"
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

var raftPeers = []raftPeer{
	{"seglog raftlog", func(dir string) (raftStore, error) { return raftlog.Open(dir, raftlog.Options{}) }},
	{"raft-wal", func(dir string) (raftStore, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return raftwal.Open(dir)
	}},
	{"raft-boltdb", func(dir string) (raftStore, error) {
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
	Ratio   float64 `json:"ratio_to_raft_wal,omitempty"`
	Error   string  `json:"error,omitempty"`
}

type raftTest struct {
	name string
	run  func(b *testing.B, s raftStore)
}

var raftTests = []raftTest{
	{"raftbench FirstIndex", func(b *testing.B, s raftStore) { raftbench.FirstIndex(b, s) }},
	{"raftbench LastIndex", func(b *testing.B, s raftStore) { raftbench.LastIndex(b, s) }},
	{"raftbench GetLog", func(b *testing.B, s raftStore) { raftbench.GetLog(b, s) }},
	{"raftbench StoreLog", func(b *testing.B, s raftStore) { raftbench.StoreLog(b, s) }},
	{"raftbench StoreLogs (3 entries)", func(b *testing.B, s raftStore) { raftbench.StoreLogs(b, s) }},
	{"raftbench DeleteRange", func(b *testing.B, s raftStore) { raftbench.DeleteRange(b, s) }},
	{"raftbench Set", func(b *testing.B, s raftStore) { raftbench.Set(b, s) }},
	{"raftbench Get", func(b *testing.B, s raftStore) { raftbench.Get(b, s) }},
	{"raftbench SetUint64", func(b *testing.B, s raftStore) { raftbench.SetUint64(b, s) }},
	{"raftbench GetUint64", func(b *testing.B, s raftStore) { raftbench.GetUint64(b, s) }},
	{"StoreLogs of 64 × 1 KiB", storeLogs64},
	{"GetLog, 64 × 1 KiB batches, sequential", getLogSequential},
}

// storeLogs64 appends contiguous 64-entry batches of 1 KiB commands.
func storeLogs64(b *testing.B, s raftStore) {
	data := make([]byte, 1024)
	next := uint64(1)
	logs := make([]*raft.Log, 64)
	for n := 0; n < b.N; n++ {
		for i := range logs {
			logs[i] = &raft.Log{Index: next, Term: 1, Data: data, AppendedAt: time.Now()}
			next++
		}
		if err := s.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
	}
}

// getLogSequential reads entries one at a time in index order, as raft's
// replication does, from a log written in 64-entry batches.
func getLogSequential(b *testing.B, s raftStore) {
	const total = 64 * 256
	data := make([]byte, 1024)
	for i := uint64(0); i < total; i += 64 {
		var logs []*raft.Log
		for j := uint64(1); j <= 64; j++ {
			logs = append(logs, &raft.Log{Index: i + j, Term: 1, Data: data})
		}
		if err := s.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var l raft.Log
	for n := 0; n < b.N; n++ {
		if err := s.GetLog(uint64(n%total)+1, &l); err != nil {
			b.Fatal(err)
		}
	}
}

// raftMain is -raft: run (or, with from, load a -json file of a run) and
// print, write and plot.
func raftMain(dir string, rounds, commands int, jsonOut, plotOut, from string) {
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
		all = runRaft(base, rounds, commands)
	}
	printRaft(all)
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

// runRaft runs every test for every raft peer, rounds times with the
// peers' order rotating, and returns medians with ratios to raft-wal.
func runRaft(base string, rounds, commands int) []raftResult {
	// testing.Benchmark reads -test.benchtime; half a second per run keeps
	// three rounds of three stores in minutes.
	testing.Init()
	if err := flag.Set("test.benchtime", "500ms"); err != nil {
		fail(err)
	}
	var all []raftResult
	for _, tc := range raftTests {
		all = append(all, measure(tc.name, rounds, func(p raftPeer, dir string) (float64, float64, error) {
			var failed atomic.Value
			var k int
			r := testing.Benchmark(func(b *testing.B) {
				k++
				s, err := p.open(filepath.Join(dir, strconv.Itoa(k)))
				if err != nil {
					failed.Store(err.Error())
					b.Skip(err)
				}
				defer s.Close()
				tc.run(b, s)
			})
			if r.N == 0 {
				if e, ok := failed.Load().(string); ok {
					return 0, 0, fmt.Errorf("%s", e)
				}
				return 0, 0, fmt.Errorf("refused (the benchmark writes index 0 or gaps, which a monotonic store rejects)")
			}
			ns := float64(r.T.Nanoseconds()) / float64(r.N)
			return ns, 1e9 / ns, nil
		}, base)...)
	}
	name := fmt.Sprintf("3-node cluster, %d applied 1 KiB commands/s", commands)
	all = append(all, measure(name, rounds, func(p raftPeer, dir string) (float64, float64, error) {
		rate, err := clusterRate(p, dir, commands)
		return 0, rate, err
	}, base)...)
	return all
}

// measure runs one test for every peer, rounds times in rotating order,
// and returns the median per peer with the ratio to raft-wal's median
// (above 1 is better: for ns/op the inverse).
func measure(test string, rounds int, run func(p raftPeer, dir string) (float64, float64, error), base string) []raftResult {
	ns := map[string][]float64{}
	rate := map[string][]float64{}
	errs := map[string]string{}
	for r := range rounds {
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
		}
	}
	var out []raftResult
	for _, p := range raftPeers {
		res := raftResult{Test: test, Peer: p.name, Error: errs[p.name]}
		if len(rate[p.name]) > 0 {
			res.NsPerOp, res.PerSec = median(ns[p.name]), median(rate[p.name])
			res.Error = ""
		}
		out = append(out, res)
	}
	for i := range out {
		if w := out[1]; w.PerSec > 0 && out[i].PerSec > 0 {
			out[i].Ratio = out[i].PerSec / w.PerSec
		}
	}
	return out
}

func printRaft(all []raftResult) {
	fmt.Printf("%-44s %-16s %14s %14s %10s\n", "test", "store", "ns/op", "per second", "÷ raft-wal")
	for _, r := range all {
		if r.Error != "" {
			fmt.Printf("%-44s %-16s %s\n", r.Test, r.Peer, r.Error)
			continue
		}
		ns := "-"
		if r.NsPerOp > 0 {
			ns = fmt.Sprintf("%.0f", r.NsPerOp)
		}
		fmt.Printf("%-44s %-16s %14s %14.0f %10.2f\n", r.Test, r.Peer, ns, r.PerSec, r.Ratio)
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
		case strings.HasPrefix(t, "GetLog, "):
			short[i] = "GetLog\nsequential"
		default:
			short[i] = strings.TrimPrefix(t, "raftbench ")
		}
	}
	p.NominalX(short...)
	p.X.Tick.Label.Font.Size = vg.Points(7)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return savePNG(p, 13*vg.Inch, 6*vg.Inch, path)
}
