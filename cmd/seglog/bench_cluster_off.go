//go:build !benchextras

package main

import "github.com/spf13/cobra"

// newBenchClusterCmd stands in for bench cluster (bench_cluster.go, built
// with the bench extras): a hidden command that says how to get the real
// one.
func newBenchClusterCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "cluster",
		Short:              "Three seglog serve nodes, replication factor 3, against one node (built with -tags " + benchExtrasTag + ")",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf(cmd, "this seglog has no bench cluster, which needs franz-go's kgo client: %s", benchExtrasHint)
		},
	}
}
