//go:build !benchextras

package main

import (
	"github.com/spf13/cobra"

	"github.com/seglog/seglog/bench"
)

// writePlot is nil: this binary has no bench extras, so --plot is refused
// (bench_extras.go).
var writePlot func(path string, results []*bench.Result, title string) error

// newBenchServeCmd stands in for bench serve (bench_serve.go, built with
// the bench extras): a hidden command that says how to get the real one.
func newBenchServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "serve",
		Short:              "Produce and consume through seglog serve with kgo, against direct append and kfake (built with -tags " + benchExtrasTag + ")",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf(cmd, "this seglog has no bench serve, which needs franz-go's kgo client and kfake broker: %s", benchExtrasHint)
		},
	}
}

// newBenchRaftCmd stands in for bench raft (bench_raft.go, built with the
// bench extras): a hidden command that says how to get the real one.
func newBenchRaftCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "raft",
		Short:              "hashicorp/raft log stores: seglog's raftlog against raft-wal (built with -tags " + benchExtrasTag + ")",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf(cmd, "this seglog has no bench raft, which needs the raft-wal module: %s", benchExtrasHint)
		},
	}
}
