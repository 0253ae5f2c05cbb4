package main

import (
	"bufio"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// Each bench subcommand runs end to end with tiny sizes; --json gives one
// object per workload with the fields DESIGN.md names, and the run leaves
// nothing behind in --dir.
func TestBenchJSON(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		objects int
	}{
		{[]string{"write", "--records", "1000", "--size", "50,100", "--batch", "10"}, 2},
		{[]string{"write", "--records", "200", "--size", "64", "--batch", "10", "--producer", "--compression", "lz4"}, 1},
		{[]string{"read", "--log-bytes", "100000", "--size", "100", "--fetch-bytes", "8192"}, 1},
		{[]string{"lookup", "--log-bytes", "100000", "--size", "100", "--lookups", "300"}, 1},
		{[]string{"durable", "--writers", "2", "--size", "64", "--duration", "40ms"}, 2},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"bench"}, tc.args...)
			args = append(args, "--rounds", "1", "--json", "--dir", dir)
			r := mustInvoke(t, "", args...)
			sc := bufio.NewScanner(strings.NewReader(r.stdout))
			n := 0
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("line %d is not JSON: %v\n%s", n+1, err, sc.Text())
				}
				for _, k := range []string{"workload", "records", "record_bytes", "records_per_sec", "bytes_per_sec", "baseline_records_per_sec", "ratio", "verified_records"} {
					if _, ok := m[k]; !ok {
						t.Errorf("object %d lacks %q", n+1, k)
					}
				}
				if m["workload"] != tc.args[0] {
					t.Errorf("workload %v, want %s", m["workload"], tc.args[0])
				}
				if v, _ := m["verified_records"].(float64); v <= 0 {
					t.Errorf("object %d: verified_records %v", n+1, m["verified_records"])
				}
				n++
			}
			if n != tc.objects {
				t.Errorf("%d JSON objects, want %d:\n%s", n, tc.objects, r.stdout)
			}
			if names, err := vfs.Default.List(dir); err != nil || len(names) != 0 {
				t.Errorf("left behind in --dir: %v %v", names, err)
			}
		})
	}
}

// Without --json the output is the table (--plot: bench_extras_*_test.go).
func TestBenchTable(t *testing.T) {
	r := mustInvoke(t, "", "bench", "write", "--records", "500", "--size", "100", "--batch", "10", "--rounds", "1", "--dir", t.TempDir())
	for _, want := range []string{"records/s", "seglog", "baseline", "ratio", "read back as written"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.stderr != "" {
		t.Errorf("stderr is not a terminal, yet got %q", r.stderr)
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"bench", "write", "--size", "0"},
		{"bench", "write", "--batch", "0"},
		{"bench", "write", "--writers", "0"},
		{"bench", "write", "--records", "0"},
		{"bench", "write", "--rounds", "0"},
		{"bench", "write", "--sync", "sometimes"},
		{"bench", "write", "--size", "2000000", "--batch", "1"},
		{"bench", "read", "--log-bytes", "0"},
		{"bench", "lookup", "--lookups", "-1"},
		{"bench", "durable", "--duration", "0s"},
	} {
		r := invoke(t, "", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "invalid") {
			t.Errorf("seglog %s: exit %d, stderr %q; want an error naming the flag", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}

// TestBenchRefusesMissingDir: every bench command refuses a --dir that
// does not exist (a mistyped mount point would otherwise be created on
// another disk and measured there) and creates nothing.
func TestBenchRefusesMissingDir(t *testing.T) {
	base := t.TempDir()
	missing := filepath.Join(base, "mnt", "nvme")
	for _, args := range [][]string{
		{"bench", "write", "--records", "10"},
		{"bench", "store", "--records", "10"},
		{"bench", "compact", "--records", "10"},
		{"bench", "retention", "--logs", "1"},
	} {
		r := invoke(t, "", append(args, "--dir", missing)...)
		if r.code == 0 || !strings.Contains(r.stderr, "create it first") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	if names, err := vfs.Default.List(base); err != nil || len(names) != 0 {
		t.Fatalf("the refused runs left %v (%v)", names, err)
	}
}
