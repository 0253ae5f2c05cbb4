//go:build benchextras

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	raftwal "github.com/hashicorp/raft-wal"
	"github.com/spf13/cobra"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/bench/raftbench"
	"github.com/seglog/seglog/vfs"
)

// seglog bench raft: the flags, the peers and the output; the shapes and
// the runner are package bench/raftbench, shared with bench/peers -raft.
// This file links raft-wal, so it is one of the bench extras
// (bench_extras.go): a default seglog has none of it.
//
// raft-boltdb v2 is compared only in bench/peers (its own module):
// v2.3.1 imports go-metrics/compat, gone from the go-metrics v0.7.0 that
// raft v1.8.0 requires, so building it here would take a replace directive
// in the main go.mod, which downgrades the go-metrics raft is built with
// in every build of this module and makes go install ...@version refuse
// the module.

// benchRaftPeers are the stores compared: seglog's raftlog first, then
// raft-wal, which the ratios are taken to, each with its durable defaults.
var benchRaftPeers = []raftbench.Peer{
	raftbench.SeglogPeer,
	{Name: raftbench.PeerWAL, Open: func(dir string) (raftbench.Store, error) {
		// raft-wal wants its directory to exist.
		if err := vfs.Default.MkdirAll(dir); err != nil {
			return nil, err
		}
		return raftwal.Open(dir)
	}},
}

func newBenchRaftCmd() *cobra.Command {
	var (
		rounds, commands int
		roundTime        time.Duration
		only, peers, dir string
		asJSON, floor    bool
	)
	cmd := &cobra.Command{
		Use:   "raft",
		Short: "hashicorp/raft log stores: seglog's raftlog against raft-wal",
		Long: `Compare seglog's raftlog.Store with raft-wal v0.4.1 as
hashicorp/raft log and stable stores, in one process, through raft's
LogStore and StableStore API only, each store with its durable defaults:

  StoreLogs   1, 16 and 128 entries of 128 B and 1 KiB per call, from a
              fresh store
  GetLog      sequential and random, over 51,200 1 KiB entries stored 64
              per call (untimed)
  Set, SetUint64, Get   of the keys raft writes for votes and terms
  cluster     --commands 1 KiB commands applied through a 3-node
              in-process raft cluster (in-memory transports)

Every shape runs --rounds times on every store, each time on a fresh store
for at least --round-time, the stores' order rotating each round. Each row
gives each store's median µs per operation (the cluster: commands per
second) and seglog's ratio to raft-wal: the median of the rounds' ratios
of rates, so above 1 means seglog is faster. raft-boltdb v2 joins them in
  cd bench/peers && go run . -raft
(its own module: raft-boltdb v2.3.1 needs an older go-metrics than raft).

--floor adds the least a durable StoreLogs can cost on this disk: the
entries written with one pwrite into a preallocated file, then one
fdatasync, no framing, checksum or index; seglog's ratio to it says how
much of a call is the store rather than the disk.

--json prints the results as one JSON array, which
  cd bench/peers && go run . -raft -from FILE -plot FILE.png
draws.`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.IntVar(&rounds, "rounds", 3, "rounds of every shape on every store (order rotating)")
	fl.DurationVar(&roundTime, "round-time", time.Second, "each store runs each shape at least this long per round (not the cluster)")
	fl.IntVar(&commands, "commands", 20000, "1 KiB commands the 3-node cluster applies per store per round")
	fl.StringVar(&only, "only", "", "run only the shapes whose name matches this regular expression (e.g. 'StoreLogs 1 |GetLog random')")
	fl.StringVar(&peers, "peers", "", "run only the stores whose name matches this regular expression (seglog raftlog, raft-wal, and floor with --floor)")
	fl.StringVar(&dir, "dir", "", "make the run's temporary directory below this one, which must exist (default: the system's temporary directory)")
	fl.BoolVar(&asJSON, "json", false, "print the results as one JSON array instead of the table")
	fl.BoolVar(&floor, "floor", false, "also run the floor, one pwrite and one fdatasync per call into a preallocated file, on the StoreLogs shapes (it refuses the others; use with --only StoreLogs)")
	limitFlag(cmd, "rounds", 1, math.MaxInt32)
	limitFlag(cmd, "commands", 1, math.MaxInt32)
	limitDuration(cmd, "round-time", time.Millisecond, math.MaxInt64)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		onlyRe, err := regexp.Compile(only)
		if err != nil {
			return usageErrorf(cmd, "invalid --only %q: %v", only, err)
		}
		peersRe, err := regexp.Compile(peers)
		if err != nil {
			return usageErrorf(cmd, "invalid --peers %q: %v", peers, err)
		}
		all := slices.Clone(benchRaftPeers)
		if floor {
			all = append(all, raftbench.FloorPeer)
		}
		selected := slices.DeleteFunc(all, func(p raftbench.Peer) bool { return !peersRe.MatchString(p.Name) })
		if len(selected) == 0 {
			return usageErrorf(cmd, "invalid --peers %q: matches none of %s and %s", peers, raftbench.PeerSeglog, raftbench.PeerWAL)
		}
		if !slices.ContainsFunc(raftbench.Shapes(commands), func(s raftbench.Shape) bool { return onlyRe.MatchString(s.Name) }) {
			return usageErrorf(cmd, "invalid --only %q: matches no shape", only)
		}
		ctx, cancel := benchContext(cmd)
		defer cancel()
		tmp, err := bench.MakeRunDir(dir, "raft")
		if err != nil {
			return err
		}
		defer vfs.RemoveAll(vfs.Default, tmp)
		out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
		cfg := raftbench.Config{
			Peers: selected, Rounds: rounds, RoundTime: roundTime, Commands: commands,
			Only: onlyRe, Progress: errOut,
		}
		if !asJSON {
			fmt.Fprintf(out, "seglog bench raft: %s/%s, %d CPUs, %s, %d round(s) (stores alternating), %s per store per shape\n\n",
				runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), rounds, roundTime)
			// Each row as soon as its shape is measured: a full run takes
			// minutes.
			cfg.Rows = out
		}
		if isTerminalFile(errOut) {
			// A person watching: one status line redrawn in place, cleared
			// before each row, rather than a line per store and round
			// between the rows.
			cfg.Progress = statusLine{errOut}
			if cfg.Rows != nil {
				cfg.Rows = clearThen{clear: errOut, w: out}
			}
			defer fmt.Fprint(errOut, clearLine)
		}
		res, err := raftbench.Run(ctx, tmp, cfg)
		if err != nil {
			return err
		}
		if asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			return enc.Encode(res)
		}
		return nil
	}
	return cmd
}

// clearLine returns a terminal's cursor to the start of its line and
// erases the line.
const clearLine = "\r\x1b[K"

// statusLine writes each progress line over the one before.
type statusLine struct{ w io.Writer }

func (s statusLine) Write(p []byte) (int, error) {
	_, err := fmt.Fprint(s.w, clearLine+strings.TrimRight(string(p), "\n"))
	return len(p), err
}

// clearThen erases the status line before writing to w.
type clearThen struct{ clear, w io.Writer }

func (c clearThen) Write(p []byte) (int, error) {
	fmt.Fprint(c.clear, clearLine)
	return c.w.Write(p)
}
