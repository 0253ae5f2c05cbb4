package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	// Not a terminal: nothing is drawn, however large the job.
	p := newProgress(&buf, 1<<40)
	p.Add64(1 << 30)
	p.Finish()
	if buf.Len() != 0 {
		t.Fatalf("progress drawn on a non-terminal: %q", buf.String())
	}
	// The bar itself, drawn on a buffer: it names fsck, shows the byte rate and
	// ends its line.
	bar := newProgressBar(&buf, 1000<<20)
	bar.Add64(250 << 20)
	bar.Finish()
	out := buf.String()
	if !strings.Contains(out, "fsck") || !strings.Contains(out, "25%") || !strings.Contains(out, "B/s") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("progress line %q", out)
	}
}
