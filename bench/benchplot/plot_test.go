package benchplot

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"path/filepath"
	"testing"
	"time"

	"github.com/seglog/seglog/bench"
	"github.com/seglog/seglog/vfs"
)

// The plot is drawn from real results, a sweep of two record sizes (so
// both panels are drawn): PNG's image decodes, and Write stores it.
func TestPlot(t *testing.T) {
	dir := t.TempDir()
	var results []*bench.Result
	for _, size := range []int{50, 200} {
		res, err := bench.RunWrite(context.Background(), bench.Env{Dir: dir, SampleEvery: time.Millisecond},
			bench.WriteConfig{RecordSize: size, Batch: 10, Duration: 40 * time.Millisecond, Rounds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Samples) == 0 {
			t.Fatal("no throughput samples")
		}
		results = append(results, res)
	}
	img, err := PNG(results, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("the plot is not a PNG (%d bytes): %v", len(img), err)
	}
	// Two panels, one above the other: taller than one.
	if cfg.Height <= cfg.Width/2 {
		t.Errorf("a sweep's plot is %dx%d: the second panel is missing", cfg.Width, cfg.Height)
	}
	path := filepath.Join(dir, "p.png")
	if err := Write(path, results, "smoke"); err != nil {
		t.Fatal(err)
	}
	if fi, err := vfs.Default.Stat(path); err != nil || fi.Size() != int64(len(img)) {
		t.Errorf("Write: %v, %v", fi, err)
	}
	if _, err := PNG(nil, "x"); !errors.Is(err, bench.ErrInvalidConfig) {
		t.Errorf("empty plot: %v", err)
	}
}
