//go:build benchextras

package main

import "github.com/seglog/seglog/bench/benchplot"

// writePlot draws --plot's PNG (bench_extras.go).
var writePlot = benchplot.Write
