package main

import (
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var peerColors = []color.Color{
	color.Gray{Y: 0x60},
	color.Gray{Y: 0xb0},
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
}

// plotResults draws records/s of every peer on every workload, on a log
// scale (the fsync'd and unsynced rates differ by orders of magnitude),
// one column of dots per workload.
func plotResults(path string, all []result) error {
	p := plot.New()
	p.Title.Text = "bench/peers: write throughput (records/s, log scale; raw file = the floor)"
	p.Y.Label.Text = "records/s"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var names []string
	col := map[string]int{}
	peerIdx := map[string]int{}
	for _, r := range all {
		if len(r.RoundRates) == 0 {
			continue // the paired workload has speedups, not rates
		}
		if _, ok := col[r.Workload]; !ok {
			col[r.Workload] = len(names)
			names = append(names, r.Workload)
		}
		if _, ok := peerIdx[r.Peer]; !ok {
			peerIdx[r.Peer] = len(peerIdx)
		}
	}
	n := len(peerIdx)
	order := make([]string, n)
	for name, i := range peerIdx {
		order[i] = name
	}
	for i, name := range order {
		var xys plotter.XYs
		for _, r := range all {
			if r.Peer == name && r.Error == "" && r.RecordsPerSec > 0 {
				x := float64(col[r.Workload]) + (float64(i)-float64(n-1)/2)*0.12
				xys = append(xys, plotter.XY{X: x, Y: r.RecordsPerSec})
			}
		}
		if len(xys) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color = peerColors[i%len(peerColors)]
		s.GlyphStyle.Radius = vg.Points(4)
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(s)
		p.Legend.Add(name, s)
	}
	short := make([]string, len(names))
	for i, w := range names {
		short[i] = shorten(w)
	}
	p.NominalX(short...)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	p.Legend.Top = true
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	return savePNG(p, 12*vg.Inch, 6*vg.Inch, path)
}

// savePNG draws p at width w and height h into a PNG file at path.
func savePNG(p *plot.Plot, w, h vg.Length, path string) error {
	wt, err := p.WriterTo(w, h, "png")
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := wt.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func shorten(w string) string {
	r := []rune(w)
	// Two lines: the sync mode, then the shape.
	for i, c := range r {
		if c == ',' {
			return string(r[:i]) + "\n" + string(r[i+2:])
		}
	}
	return w
}
