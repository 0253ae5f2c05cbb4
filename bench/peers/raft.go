package main

// The raft comparison (-raft): seglog's raftlog.Store against raft-wal
// v0.4.1 and raft-boltdb v2 as hashicorp/raft log and stable stores, in
// one process and one run. The shapes and the runner are package
// bench/raftbench, which seglog bench raft (built with -tags benchextras)
// runs too; this file adds the two peers and the plot.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/seglog/seglog/bench/raftbench"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var raftPeers = []raftbench.Peer{
	raftbench.SeglogPeer,
	{Name: raftbench.PeerWAL, Open: func(dir string) (raftbench.Store, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return raftwal.Open(dir)
	}},
	{Name: raftbench.PeerBolt, Open: func(dir string) (raftbench.Store, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		return raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	}},
}

// raftMain is -raft: run (or, with from, load a -json file of a run) and
// print, write and plot.
func raftMain(dir string, rounds, commands int, only, peersRe, jsonOut, plotOut, from string) {
	var all []raftbench.Result
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
		raftPeers = slices.DeleteFunc(raftPeers, func(p raftbench.Peer) bool { return !pre.MatchString(p.Name) })
		all, err = raftbench.Run(context.Background(), base, raftbench.Config{
			Peers: raftPeers, Rounds: rounds, RoundTime: roundTime, Commands: commands,
			Only: regexp.MustCompile(only), Rows: os.Stdout,
		})
		if err != nil {
			fail(err)
		}
		fmt.Println()
	}
	raftbench.WriteRows(os.Stdout, all, true)
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

// plotRaft draws each store's ratio to raft-wal on every test that all
// ran (log scale: the reads differ by orders of magnitude), one column
// per test; raft-wal is the line at 1.
func plotRaft(path string, all []raftbench.Result) error {
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
			if c, ok := col[r.Test]; ok && r.Peer == rp.Name && r.Ratio > 0 {
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
		p.Legend.Add(rp.Name, s)
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
