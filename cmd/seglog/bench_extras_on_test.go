//go:build benchextras

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// benchServeRefusal is how bench serve --records 1 --partitions 2 is
// refused (TestBadCommandLinesChangeNothing): by its own flag check.
const benchServeRefusal = "invalid --records 1: must be at least --partitions 2"

// benchRaftRefusal is how bench raft --rounds 0 is refused
// (TestBadCommandLinesChangeNothing): by its own flag rules.
const benchRaftRefusal = "invalid --rounds 0: must be from 1 to 2147483647"

// With the bench extras, --plot writes a PNG and says so, and refuses a
// file that is not one.
func TestBenchPlot(t *testing.T) {
	png := filepath.Join(t.TempDir(), "w.png")
	r := mustInvoke(t, "", "bench", "write", "--records", "500", "--size", "100", "--batch", "10", "--rounds", "1", "--dir", t.TempDir(), "--plot", png)
	if !strings.Contains(r.stdout, "Plot written to "+png) {
		t.Errorf("the output does not name the plot:\n%s", r.stdout)
	}
	f, err := vfs.Default.Open(png)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 8)
	if _, err := f.ReadAt(head, 0); err != nil || string(head) != "\x89PNG\r\n\x1a\n" {
		t.Errorf("--plot wrote %q, %v", head, err)
	}
	if r := invoke(t, "", "bench", "write", "--plot", "x.svg"); r.code == 0 || !strings.Contains(r.stderr, "invalid --plot") {
		t.Errorf("--plot x.svg: exit %d, stderr %q; want it refused", r.code, r.stderr)
	}
}

// bench serve refuses a --dir that does not exist, as every bench command
// does (TestBenchRefusesMissingDir), and creates nothing.
func TestBenchServeRefusesMissingDir(t *testing.T) {
	base := t.TempDir()
	r := invoke(t, "", "bench", "serve", "--records", "100", "--dir", filepath.Join(base, "mnt", "nvme"))
	if r.code == 0 || !strings.Contains(r.stderr, "create it first") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if names, err := vfs.Default.List(base); err != nil || len(names) != 0 {
		t.Fatalf("the refused run left %v (%v)", names, err)
	}
}
