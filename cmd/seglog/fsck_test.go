package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
)

// kafkaLogDir lays out a Kafka log.dir holding one partition directory per
// name, each with the given corpus broker log as its only segment (no
// index files), and returns the log.dir.
func kafkaLogDir(t *testing.T, codec string, parts ...string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "kafka-logs")
	data := readVFS(t, filepath.Join(corpusDir, codec+".broker-log"))
	for _, p := range parts {
		dir := filepath.Join(root, p)
		if err := fsckFS.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
		writeVFS(t, filepath.Join(dir, "00000000000000000000.log"), data)
	}
	return root
}

// fsckOut is the --json output, decoded strictly.
type fsckOut struct {
	Dirs     []string `json:"dirs"`
	Problems []struct {
		File     string `json:"file"`
		Position int64  `json:"position"`
		Kind     string `json:"kind"`
		Severity string `json:"severity"`
		Detail   string `json:"detail"`
		Repaired bool   `json:"repaired"`
		Repair   string `json:"repair"`
	} `json:"problems"`
	Stats map[string]any `json:"stats"`
	Exit  int            `json:"exit"`
}

var fsckJSONShape = regexp.MustCompile(`^\{"dirs":\[.*\],"problems":\[.*\],"stats":\{.*\},"exit":\d+\}\n$`)

func fsckJSONRun(t *testing.T, args ...string) (fsckOut, int) {
	t.Helper()
	r := invoke(t, "", append([]string{"fsck", "--json"}, args...)...)
	if !fsckJSONShape.MatchString(r.stdout) {
		t.Fatalf("--json output does not have the specified shape: %.400s\nstderr: %s", r.stdout, r.stderr)
	}
	var out fsckOut
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if out.Exit != r.code {
		t.Fatalf("json exit %d, process exit %d", out.Exit, r.code)
	}
	return out, r.code
}

func TestFsckKafkaLogDir(t *testing.T) {
	root := kafkaLogDir(t, "lz4", "events-0", "events-1")
	out, code := fsckJSONRun(t, root)
	if code != 4 {
		t.Fatalf("exit %d, want 4 (missing indexes)", code)
	}
	if len(out.Dirs) != 2 || out.Dirs[0] != filepath.Join(root, "events-0") {
		t.Fatalf("dirs %v", out.Dirs)
	}
	if len(out.Problems) != 4 {
		t.Fatalf("%d problems, want the 4 missing indexes: %+v", len(out.Problems), out.Problems)
	}
	for _, p := range out.Problems {
		if p.Kind != "index-missing" || p.Severity != "error" || p.Repaired || !strings.HasPrefix(p.File, root+"/events-") {
			t.Fatalf("unexpected problem %+v", p)
		}
	}
	if out.Stats["batches"].(float64) == 0 || out.Stats["segments"].(float64) != 2 {
		t.Fatalf("stats %v", out.Stats)
	}

	out, code = fsckJSONRun(t, "--repair", root)
	if code != 1 || len(out.Problems) != 4 || !out.Problems[0].Repaired {
		t.Fatalf("repair: exit %d, %+v", code, out.Problems)
	}
	r := invoke(t, "", "fsck", root)
	if r.code != 0 || !strings.Contains(r.stdout, "clean") {
		t.Fatalf("after repair: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// writeSeglog writes a small multi-segment log with the Log and returns its
// directory.
func writeSeglog(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "orders-0")
	l, err := seglog.Open(dir, seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: 8 << 10, IndexIntervalBytes: 256}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := l.Append(record.Record{Key: []byte("k"), Value: []byte(fmt.Sprintf("value %d %s", i, strings.Repeat("x", 100)))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestFsckMidLogDamage(t *testing.T) {
	dir := writeSeglog(t)
	if r := invoke(t, "", "fsck", dir); r.code != 0 {
		t.Fatalf("fresh log: exit %d\n%s", r.code, r.stdout)
	}
	logs := storedLogs(t, dir)
	if len(logs) < 2 {
		t.Fatalf("want several segments, got %d", len(logs))
	}
	data := readVFS(t, logs[0])
	batches := splitBatches(t, data)
	pos := len(batches[0]) + len(batches[1])
	data[pos+40] ^= 1 // inside the third batch's CRC-covered header
	writeVFS(t, logs[0], data)

	out, code := fsckJSONRun(t, dir)
	if code != 4 || len(out.Problems) != 1 {
		t.Fatalf("exit %d, problems %+v", code, out.Problems)
	}
	p := out.Problems[0]
	if p.File != logs[0] || p.Position != int64(pos) || p.Kind != "crc" {
		t.Fatalf("problem %+v, want crc in %s at byte %d", p, logs[0], pos)
	}
	// dump shows the damage at the same position.
	d := invoke(t, "", "dump", logs[0])
	if d.code != 0 || !strings.Contains(d.stdout, fmt.Sprintf("position: %d damaged (crc", pos)) {
		t.Fatalf("dump does not show the damage at %d:\n%s", pos, d.stdout)
	}

	if _, code := fsckJSONRun(t, "--repair", dir); code != 4 {
		t.Fatalf("--repair without --truncate-damaged: exit %d, want 4", code)
	}
	// The cut keeps every valid batch after it in quarantine files, which
	// stay listed (exit 4) until moved away.
	out, code = fsckJSONRun(t, "--repair", "--truncate-damaged", dir)
	quarantines := 0
	for _, p := range out.Problems {
		if p.Kind == "quarantine" {
			quarantines++
		} else if !p.Repaired {
			t.Fatalf("--truncate-damaged left %+v", p)
		}
	}
	if code != 4 || quarantines != len(logs) {
		t.Fatalf("--truncate-damaged: exit %d, %d quarantine files: %+v", code, quarantines, out.Problems)
	}
	if r := invoke(t, "", "fsck", "--deep", dir); r.code != 4 || strings.Count(r.stdout, "warning quarantine") != len(logs) || strings.Contains(r.stdout, ": error ") {
		t.Fatalf("after truncation: exit %d\n%s", r.code, r.stdout)
	}
	if got := len(storedLogs(t, dir)); got != 1 {
		t.Fatalf("%d segments after truncating the first, want 1", got)
	}
}

func TestFsckRepairRefusedWhileOpen(t *testing.T) {
	dir := writeSeglog(t)
	l, err := seglog.Open(dir, seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := invoke(t, "", "fsck", "--repair", dir)
	if r.code&8 == 0 || !strings.Contains(r.stderr, "lock") {
		t.Fatalf("repair beside a live log: exit %d, stderr %q", r.code, r.stderr)
	}
	// A plain check is allowed beside it.
	if r := invoke(t, "", "fsck", dir); r.code&8 != 0 {
		t.Fatalf("check beside a live log: exit %d %s", r.code, r.stderr)
	}
}

func TestFsckUsageErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	for _, args := range [][]string{
		{"fsck"},
		{"fsck", "--no-such-flag", t.TempDir()},
		{"fsck", missing},
		{"fsck", "--truncate-damaged", t.TempDir()},
	} {
		if r := invoke(t, "", args...); r.code != 8 {
			t.Errorf("seglog %s: exit %d, want 8 (stderr %q)", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// A missing directory beside one with problems: 8|4.
	root := kafkaLogDir(t, "none", "t-0")
	if r := invoke(t, "", "fsck", missing, root); r.code != 12 {
		t.Errorf("exit %d, want 12", r.code)
	}
}

// TestFsckParentCheckpointOnce checks that a damaged log.dir checkpoint is
// listed once, not once per partition, with its path under the log.dir.
func TestFsckParentCheckpointOnce(t *testing.T) {
	root := kafkaLogDir(t, "none", "a-0", "a-1")
	writeVFS(t, filepath.Join(root, "recovery-point-offset-checkpoint"), []byte("0\n2\na 0 5\na x 7\n"))
	out, _ := fsckJSONRun(t, root)
	n := 0
	for _, p := range out.Problems {
		if p.Kind == "checkpoint" {
			n++
			if p.File != filepath.Join(root, "recovery-point-offset-checkpoint") || p.Position != 10 {
				t.Errorf("checkpoint problem at %s byte %d", p.File, p.Position)
			}
		}
	}
	if n != 1 {
		t.Fatalf("%d checkpoint problems, want 1: %+v", n, out.Problems)
	}
}

func TestDumpIndexes(t *testing.T) {
	dir := writeSeglog(t)
	r := invoke(t, "", "dump", dir)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Every batch position the dump prints must be a batch start, and every
	// offset-index entry must name a position the dump printed.
	starts := map[string]bool{}
	for _, m := range regexp.MustCompile(`isControl: \w+ deleteHorizonMs: \w+ position: (\d+) `).FindAllStringSubmatch(r.stdout, -1) {
		starts[m[1]] = true
	}
	entries := regexp.MustCompile(`(?m)^offset: \d+ position: (\d+)$`).FindAllStringSubmatch(r.stdout, -1)
	if len(starts) == 0 || len(entries) == 0 {
		t.Fatalf("no batches or index entries in the dump:\n%.1000s", r.stdout)
	}
	for _, e := range entries {
		if !starts[e[1]] {
			t.Fatalf("index entry points at %s, not a batch start printed by dump", e[1])
		}
	}
	if !strings.Contains(r.stdout, "timestamp: ") {
		t.Fatalf("no time-index entries in the dump")
	}
	if rr := invoke(t, "", "dump", "--records", storedLogs(t, dir)[0]); !strings.Contains(rr.stdout, `| offset: 0 CreateTime: `) || !strings.Contains(rr.stdout, `payload: "value 0 `) {
		t.Fatalf("--records output:\n%.600s", rr.stdout)
	}
}

// TestFsckReadLimitFlag checks --max-entry-bytes and its hidden old name
// --max-batch-bytes: an entry above the read limit is a read-limit
// problem, not damage, and --help lists only the new name.
func TestFsckReadLimitFlag(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "big-0")
	l, err := seglog.Open(dir, seglog.Options{LogConfig: seglog.LogConfig{MaxBatchBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(record.Record{Value: []byte(strings.Repeat("x", 100<<10))}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--max-entry-bytes", "--max-batch-bytes"} {
		out, code := fsckJSONRun(t, flag, "65536", dir)
		if code != 4 || len(out.Problems) != 1 || out.Problems[0].Kind != "read-limit" || out.Problems[0].Position != 0 ||
			!strings.Contains(out.Problems[0].Detail, "raise --max-entry-bytes") {
			t.Fatalf("%s 65536: exit %d, problems %+v", flag, code, out.Problems)
		}
	}
	if _, code := fsckJSONRun(t, dir); code != 0 {
		t.Fatalf("default read limit: exit %d", code)
	}
	help := mustInvoke(t, "", "fsck", "--help").stdout
	if !strings.Contains(help, "--max-entry-bytes") || strings.Contains(help, "--max-batch-bytes") {
		t.Fatalf("--help should list --max-entry-bytes and hide --max-batch-bytes:\n%s", help)
	}
}

// TestFsckRepairRecoveryPoint runs --repair on a crashed log with damage on
// both sides of its recovery point: the CRC flipped in synced data is
// reported and left byte for byte, the torn tail past the recovery point
// is cut, and the checkpoint is not lowered while damage remains.
func TestFsckRepairRecoveryPoint(t *testing.T) {
	dir := writeSeglog(t)
	logs := storedLogs(t, dir)
	if len(logs) < 3 {
		t.Fatalf("want 3 segments or more, got %d", len(logs))
	}
	first := readVFS(t, logs[0])
	bs := splitBatches(t, first)
	pos := len(bs[0])
	first[pos+40] ^= 1 // inside the second batch
	writeVFS(t, logs[0], first)
	last := readVFS(t, logs[len(logs)-1])
	lb := splitBatches(t, last)
	tail := len(last) - len(lb[len(lb)-1])
	writeVFS(t, logs[len(logs)-1], last[:len(last)-20])
	if err := fsckFS.Remove(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatal(err)
	}
	// The recovery point lies in the last segment, before its last batch.
	rp := record.Batch(lb[len(lb)-1]).BaseOffset()
	cp := []byte(fmt.Sprintf("0\n1\norders 0 %d\n", rp))
	writeVFS(t, filepath.Join(dir, "recovery-point-offset-checkpoint"), cp)

	out, code := fsckJSONRun(t, "--repair", dir)
	if code != 4 {
		t.Fatalf("exit %d, want 4 (synced damage left): %+v", code, out.Problems)
	}
	var crc, torn bool
	for _, p := range out.Problems {
		switch {
		case p.Kind == "crc" && p.File == logs[0] && p.Position == int64(pos):
			crc = !p.Repaired && strings.Contains(p.Detail, "below the recovery point")
		case p.Kind == "torn-tail" && p.File == logs[len(logs)-1] && p.Position == int64(tail):
			torn = p.Repaired
		}
	}
	if !crc || !torn {
		t.Fatalf("want the CRC below the recovery point left and the torn tail past it cut: %+v", out.Problems)
	}
	if got := readVFS(t, logs[0]); !bytes.Equal(got, first) {
		t.Fatalf("the segment with synced damage was changed")
	}
	if got := readVFS(t, logs[len(logs)-1]); !bytes.Equal(got, last[:tail]) {
		t.Fatalf("last segment: %d bytes, want the %d before the torn tail", len(got), tail)
	}
	if got := readVFS(t, filepath.Join(dir, "recovery-point-offset-checkpoint")); !bytes.Equal(got, cp) {
		t.Fatalf("checkpoint rewritten while damage remains: %q", got)
	}
}

// TestFsckCheckWritesNothing checks that fsck without --repair changes no
// byte and creates no file (not even a lock) in a damaged seglog directory
// and in a Kafka log.dir, with every output option.
func TestFsckCheckWritesNothing(t *testing.T) {
	dir := writeSeglog(t)
	logs := storedLogs(t, dir)
	data := readVFS(t, logs[0])
	data[len(splitBatches(t, data)[0])+40] ^= 1
	writeVFS(t, logs[0], data)
	writeVFS(t, logs[0]+".deleted", []byte("x"))
	root := kafkaLogDir(t, "none", "t-0", "t-1")
	writeVFS(t, filepath.Join(root, "recovery-point-offset-checkpoint"), []byte("0\n1\nt 0 1000000\n"))

	dirs := []string{dir, root, filepath.Join(root, "t-0"), filepath.Join(root, "t-1")}
	before := fscktest.TakeSnapshot(t, fsckFS, dirs...)
	for _, args := range [][]string{{"fsck", dir, root}, {"fsck", "--deep", dir, root}, {"fsck", "--json", dir, root}} {
		if r := invoke(t, "", args...); r.code != 4 {
			t.Fatalf("seglog %s: exit %d, want 4\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		if diff := before.Diff(fscktest.TakeSnapshot(t, fsckFS, dirs...)); len(diff) > 0 {
			t.Fatalf("seglog %s changed files: %v", strings.Join(args, " "), diff)
		}
	}
}
