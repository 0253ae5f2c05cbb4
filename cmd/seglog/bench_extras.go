package main

import (
	"fmt"

	"github.com/spf13/pflag"
)

// The build tag benchextras adds to seglog what only benchmarking needs
// and what a first build would spend much of its time compiling: bench
// --plot (gonum.org/v1/plot with its fonts and its PDF, SVG and TeX back
// ends, in package bench/benchplot) and bench serve (franz-go's kgo client
// and kfake broker). From empty module and build caches they were about
// 30% of the CPU time of `go run ./cmd/seglog demo`, and their downloads
// a quarter of its module downloads (docs/benchmarks.md, "The bench
// extras"). Without the tag, --plot is hidden and refused, saying how to
// get it, and bench serve is a hidden command that says the same
// (bench_extras_off.go).
const benchExtrasTag = "benchextras"

// benchExtrasHint says how to build a seglog that has the bench extras.
const benchExtrasHint = "build seglog with -tags " + benchExtrasTag + " (go build -tags " + benchExtrasTag + " ./cmd/seglog, or go run -tags " + benchExtrasTag + " ./cmd/seglog bench ...)"

// plotFlag is --plot: the PNG file to draw into, refused when writePlot is
// nil (a binary built without the bench extras).
type plotFlag struct{ path *string }

func (f plotFlag) String() string { return *f.path }
func (f plotFlag) Type() string   { return "string" }

func (f plotFlag) Set(v string) error {
	if writePlot == nil {
		return fmt.Errorf("this seglog draws no plots: %s", benchExtrasHint)
	}
	*f.path = v
	return nil
}

// bindPlotFlag binds --plot to path; without the bench extras the flag is
// hidden from the help.
func bindPlotFlag(fl *pflag.FlagSet, path *string) {
	fl.Var(plotFlag{path}, "plot", "draw throughput over time (and against the swept parameter) into this PNG file")
	if writePlot == nil {
		fl.MarkHidden("plot")
	}
}
