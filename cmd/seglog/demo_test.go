package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	demoDirLine  = regexp.MustCompile(`segments of .* in (\S+) \(seed`)
	demoSegments = regexp.MustCompile(`(?m)^log: +(\d+) segments`)
)

// TestDemo runs demo small: it must pass its own checks, roll segments, and
// remove its temporary directory (or keep the one given with --dir).
func TestDemo(t *testing.T) {
	r := mustInvoke(t, "", "demo", "--records", "3000", "--size", "40", "--batch", "7", "--segment-bytes", "16384")
	if !strings.Contains(r.stdout, "all checks passed") {
		t.Fatalf("demo output lacks its verdict:\n%s", r.stdout)
	}
	m := demoSegments.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("demo output lacks the segment count:\n%s", r.stdout)
	}
	if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("demo rolled into %d segments, want several:\n%s", n, r.stdout)
	}
	d := demoDirLine.FindStringSubmatch(r.stdout)
	if d == nil {
		t.Fatalf("demo output lacks its directory:\n%s", r.stdout)
	}
	if exists(d[1]) {
		t.Errorf("demo left its temporary directory %s behind", d[1])
	}
	if !strings.Contains(r.stdout, "removed the temporary directory "+d[1]+"\n") {
		t.Errorf("demo does not say that it removed %s:\n%s", d[1], r.stdout)
	}

	keep := filepath.Join(t.TempDir(), "demo")
	r = mustInvoke(t, "", "demo", "--records", "500", "--size", "3", "--batch", "50", "--dir", keep,
		"--compression", "zstd", "--timestamp-type", "append", "--sync", "always")
	if !strings.Contains(r.stdout, "all checks passed") {
		t.Fatalf("demo output lacks its verdict:\n%s", r.stdout)
	}
	if len(storedLogs(t, keep)) == 0 {
		t.Errorf("demo --dir %s kept no segments", keep)
	}
	if strings.Contains(r.stdout, "removed") {
		t.Errorf("demo --dir says it removed something:\n%s", r.stdout)
	}
	// A used directory is refused rather than mixed into the checks.
	if r := invoke(t, "", "demo", "--records", "10", "--dir", keep); r.code == 0 || !strings.Contains(r.stderr, "not empty") {
		t.Errorf("demo into a used --dir: exit %d, stderr %q", r.code, r.stderr)
	}
	mustInvoke(t, "", "demo", "--records", "1")
}

func TestDemoInvalid(t *testing.T) {
	for _, args := range [][]string{
		{"--records", "0"},
		{"--size", "-1"},
		{"--batch", "0"},
		{"--size", "2000000"},
		{"extra-arg"},
		{"--segment-bytes", "1"},
	} {
		if r := invoke(t, "", append([]string{"demo"}, args...)...); r.code == 0 || r.stderr == "" {
			t.Errorf("demo %v: exit %d, stderr %q; want an error", args, r.code, r.stderr)
		}
	}
}
