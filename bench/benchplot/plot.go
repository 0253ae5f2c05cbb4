// Package benchplot draws seglog bench's results as PNG images with
// gonum.org/v1/plot. It is a package of its own, apart from bench, so
// that the seglog binary links the plotting library, its fonts and its
// PDF, SVG and TeX back ends only when built with -tags benchextras
// (cmd/seglog/bench_extras.go): compiling them from an empty build cache
// took about as long as the rest of `go run ./cmd/seglog demo`.
package benchplot

import (
	"bytes"
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/vfs"
)

var (
	engineColor   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	baselineColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
)

// PNG draws results as a PNG: throughput over time of both sides (each
// round a line segment, warm-up rounds included and dashed), and, when
// results is a sweep (several results differing in record size or writer
// count), a second panel of throughput and ratio against that parameter.
// No results is an error wrapping bench.ErrInvalidConfig.
func PNG(results []*bench.Result, title string) ([]byte, error) {
	if len(results) == 0 {
		return nil, fmt.Errorf("%w: nothing to plot", bench.ErrInvalidConfig)
	}
	rows := [][]*plot.Plot{{timePlot(results, title)}}
	if len(results) > 1 {
		rows = append(rows, []*plot.Plot{sweepPlot(results)})
	}
	const width = 9 * vg.Inch
	height := 4 * vg.Inch * vg.Length(len(rows))
	img := vgimg.New(width, height)
	dc := draw.New(img)
	canvases := plot.Align(rows, draw.Tiles{Rows: len(rows), Cols: 1, PadY: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4)}, dc)
	for i, row := range rows {
		row[0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write writes PNG's image to path (through vfs, like every file the
// benchmarks write).
func Write(path string, results []*bench.Result, title string) error {
	png, err := PNG(results, title)
	if err != nil {
		return err
	}
	f, err := vfs.Default.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(png); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func timePlot(results []*bench.Result, title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "MB/s (record values; wire bytes for reads)"
	if results[0].Workload == "lookup" {
		p.Y.Label.Text = "lookups × record size, MB/s"
	}
	var offset float64
	legend := [2]bool{}
	for _, r := range results {
		var last float64
		// Group consecutive samples of one side and round into a segment.
		for i := 0; i < len(r.Samples); {
			j := i
			for j < len(r.Samples) && r.Samples[j].Baseline == r.Samples[i].Baseline && r.Samples[j].Round == r.Samples[i].Round {
				j++
			}
			seg := make(plotter.XYs, 0, j-i)
			for _, s := range r.Samples[i:j] {
				x := offset + s.At.Seconds()
				seg = append(seg, plotter.XY{X: x, Y: s.BytesPerSec / 1e6})
				last = x
			}
			line, points, err := plotter.NewLinePoints(seg)
			if err == nil {
				c := engineColor
				if r.Samples[i].Baseline {
					c = baselineColor
				}
				line.Color, points.Color = c, c
				points.Radius = vg.Points(1.5)
				if r.Samples[i].Round < 0 {
					line.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
				}
				p.Add(line, points)
				k := 0
				if r.Samples[i].Baseline {
					k = 1
				}
				if !legend[k] && r.Samples[i].Round >= 0 {
					legend[k] = true
					name := "seglog"
					if k == 1 {
						name = "baseline"
					}
					p.Legend.Add(name, line)
				}
			}
			i = j
		}
		offset = last
	}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

func sweepPlot(results []*bench.Result) *plot.Plot {
	p := plot.New()
	byWriters := results[0].Writers != results[len(results)-1].Writers
	param := func(r *bench.Result) float64 { return float64(r.RecordBytes) }
	p.X.Label.Text = "record size (bytes, log scale)"
	if byWriters {
		param = func(r *bench.Result) float64 { return float64(r.Writers) }
		p.X.Label.Text = "writers (log scale)"
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		var ts []plot.Tick
		for _, r := range results {
			ts = append(ts, plot.Tick{Value: param(r), Label: strconv.FormatFloat(param(r), 'f', -1, 64)})
		}
		return ts
	})
	// Against record size, bytes are the comparable unit; against writers,
	// records (appends) are.
	rate := func(r *bench.Result) (float64, float64) { return r.BytesPerSec / 1e6, r.BaselineBytesPerSec / 1e6 }
	p.Y.Label.Text = "MB/s"
	if byWriters {
		rate = func(r *bench.Result) (float64, float64) { return r.RecordsPerSec, r.BaselineRecordsPerSec }
		p.Y.Label.Text = "records/s"
	}
	var eng, base plotter.XYs
	for _, r := range results {
		e, b := rate(r)
		eng = append(eng, plotter.XY{X: param(r), Y: e})
		base = append(base, plotter.XY{X: param(r), Y: b})
	}
	for _, s := range []struct {
		name string
		xys  plotter.XYs
		c    color.Color
	}{{"seglog", eng, engineColor}, {"baseline", base, baselineColor}} {
		l, pts, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			continue
		}
		l.Color, pts.Color = s.c, s.c
		p.Add(l, pts)
		p.Legend.Add(s.name, l)
	}
	labels := make([]string, len(results))
	var xys plotter.XYs
	for i, r := range results {
		labels[i] = fmt.Sprintf("%.2f×", r.Ratio)
		e, _ := rate(r)
		xys = append(xys, plotter.XY{X: param(r), Y: e})
	}
	if l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels}); err == nil {
		p.Add(l)
	}
	p.Title.Text = "rate against " + map[bool]string{false: "record size", true: "writers"}[byWriters] + " (labels: seglog ÷ baseline)"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}
