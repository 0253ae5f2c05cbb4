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
	tp := &textProgress{w: &buf, total: 1000 << 20}
	tp.Add64(250 << 20)
	tp.Finish()
	out := buf.String()
	if !strings.Contains(out, " 25.0%") || !strings.Contains(out, "250.0 MiB of 1000.0 MiB") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("progress line %q", out)
	}
}
