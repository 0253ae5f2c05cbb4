package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// The cases 1-3 as a user meets them on the command line: a size
// limit, damage in synced data and the wrong directory must never cost
// stored data or write where nothing should be written.

// TestTrustBigBatchSurvivesKill (case 1): produce --max-batch-bytes
// 20000000 stores a 10 MiB record; the process is killed (no clean-shutdown
// marker). consume with default flags prints the record and changes no
// byte; a later produce with default flags (a writable open, which
// recovers) keeps the batch and appends after it.
func TestTrustBigBatchSurvivesKill(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	big := strings.Repeat("0123456789abcdef", 10<<20/16) // 10 MiB
	var stderr lockedBuffer
	cmd, pw := startWithStdinPipe(t, &stderr, "produce", dir, "--max-batch-bytes", "20000000", "--linger", "0")
	if _, err := io.WriteString(pw, big+"\n"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, "the 10 MiB record was stored", func() bool { return completeBatches(t, dir) == 1 })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if exists(filepath.Join(dir, ".kafka_cleanshutdown")) {
		t.Fatal("a clean-shutdown marker after SIGKILL")
	}
	logFile := filepath.Join(dir, segment.FileName(0, segment.LogSuffix))
	stored := readVFS(t, logFile)
	if len(stored) <= len(big) {
		t.Fatalf(".log holds %d bytes, less than the record", len(stored))
	}

	before := dirSnapshot(t, dir)
	r := invoke(t, "", "consume", dir, "--json")
	vfstest.Unchanged(t, "consume", before, dirSnapshot(t, dir))
	recs := parseConsumed(t, r.stdout)
	if r.code != 0 || len(recs) != 1 || recs[0].Value == nil || *recs[0].Value != base64.StdEncoding.EncodeToString([]byte(big)) {
		t.Fatalf("consume: exit %d, %d records, stderr %q; want the 10 MiB record", r.code, len(recs), r.stderr)
	}

	// A writable open with the default limit recovers the unclean log.
	r = invoke(t, "after\n", "produce", dir)
	if r.code != 0 {
		t.Fatalf("produce after the kill: exit %d: %s", r.code, r.stderr)
	}
	if now := readVFS(t, logFile); !bytes.HasPrefix(now, stored) {
		t.Fatalf("recovery changed the stored batch: .log %d bytes, first difference at %d", len(now), firstDiff(now, stored))
	}
	vals := consumedValues(t, dir)
	if len(vals) != 2 || vals[0] != big || vals[1] != "after" {
		t.Fatalf("after recovery the log holds %d records, want the big one and %q", len(vals), "after")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestTrustKafkaBigBatchKept (case 1 on a Kafka directory): a partition of
// a broker's log.dir holding a 2 MiB batch (stored under a raised
// max.message.bytes), after an unclean shutdown with the broker's recovery
// point at 0: consume with default flags prints every record and changes
// nothing; produce with default flags (a writable open, which recovers)
// keeps the batch byte for byte and appends after it; the log.dir's own
// files are never rewritten.
func TestTrustKafkaBigBatchKept(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 2<<20/16) // 2 MiB
	src := filepath.Join(t.TempDir(), "src")
	mustInvoke(t, "small\n"+big+"\nsmall\n", "produce", src, "--max-batch-bytes", "3000000", "--batch", "1")
	root := filepath.Join(t.TempDir(), "kafka-logs")
	part := filepath.Join(root, "events-0")
	if err := vfs.Default.MkdirAll(part); err != nil {
		t.Fatal(err)
	}
	logName := segment.FileName(0, segment.LogSuffix)
	stored := readVFS(t, filepath.Join(src, logName))
	writeVFS(t, filepath.Join(part, logName), stored)
	writeVFS(t, filepath.Join(root, "recovery-point-offset-checkpoint"), []byte("0\n2\nevents 0 0\nother 3 7\n"))
	writeVFS(t, filepath.Join(root, "log-start-offset-checkpoint"), []byte("0\n0\n"))
	if n := len(storedBatches(t, part)); n != 3 {
		t.Fatalf("the partition holds %d batches, want 3", n)
	}
	logDirFiles := func() map[string]string {
		snap := dirSnapshot(t, root)
		for k := range snap {
			if strings.HasPrefix(k, "events-0") {
				delete(snap, k)
			}
		}
		return snap
	}
	brokers := logDirFiles()

	before := dirSnapshot(t, root)
	r := invoke(t, "", "consume", part, "--json")
	vfstest.Unchanged(t, "consume", before, dirSnapshot(t, root))
	if recs := parseConsumed(t, r.stdout); r.code != 0 || len(recs) != 3 {
		t.Fatalf("consume: exit %d, %d records, stderr %q; want 3 records", r.code, len(recs), r.stderr)
	}

	// The broker's partition is the broker's to write: produce given it
	// refuses, changing nothing, and says how to take the log.dir over.
	r = invoke(t, "after\n", "produce", part)
	if r.code == 0 || !strings.Contains(r.stderr, "not a seglog store") {
		t.Fatalf("produce to a broker's partition: exit %d: %s", r.code, r.stderr)
	}
	vfstest.Unchanged(t, "the log.dir's files", brokers, logDirFiles())
	vfstest.Unchanged(t, "a refused produce", before, dirSnapshot(t, root))
	// Taken over as a store, the partition is recovered by its topic's
	// config (max.message.bytes 1 MiB): the 2 MiB batch stays.
	r = invoke(t, "after\n", "produce", root, "--topic", "events")
	if r.code != 0 {
		t.Fatalf("produce through the store: exit %d: %s", r.code, r.stderr)
	}
	if now := readVFS(t, filepath.Join(part, logName)); !bytes.HasPrefix(now, stored) {
		t.Fatalf("recovery changed the stored batches: .log %d bytes, first difference at %d", len(now), firstDiff(now, stored))
	}
	if vals := consumedValues(t, part); len(vals) != 4 || vals[1] != big || vals[3] != "after" {
		t.Fatalf("after recovery the partition holds %d records, want small, the big one, small, after", len(vals))
	}
}

// kafkaPartition builds a Kafka log.dir holding one partition directory,
// events-0, of n records in many batches, laid out as a broker leaves it
// after a clean shutdown: segment files in the partition directory; the
// recovery point and log start of each partition, and the clean-shutdown
// marker, in the log.dir. It returns the log.dir and the partition's
// batches.
func kafkaPartition(t *testing.T, n int) (string, []record.Batch) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	mustInvoke(t, numberedLines(1, n), "produce", src, "--batch", "10")
	root := filepath.Join(t.TempDir(), "kafka-logs")
	part := filepath.Join(root, "events-0")
	if err := vfs.Default.MkdirAll(part); err != nil {
		t.Fatal(err)
	}
	names, err := vfs.Default.List(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if _, _, ok := segment.ParseFileName(name); ok {
			writeVFS(t, filepath.Join(part, name), readVFS(t, filepath.Join(src, name)))
		}
	}
	writeVFS(t, filepath.Join(root, "recovery-point-offset-checkpoint"), fmt.Appendf(nil, "0\n2\nevents 0 %d\nother 3 7\n", n))
	writeVFS(t, filepath.Join(root, "log-start-offset-checkpoint"), []byte("0\n0\n"))
	writeVFS(t, filepath.Join(root, ".kafka_cleanshutdown"), []byte(`{"version":0,"brokerEpoch":1}`))
	return root, storedBatches(t, part)
}

// TestTrustKafkaDamageReported (case 2): a byte flipped in the middle of a
// Kafka partition's .log, below the recovery point its log.dir records, is
// reported by consume with the file and the damaged batch's byte position
// (the position fsck reports), non-zero, and nothing in the log.dir changes: the records after the
// damage are not cut off. After a clean shutdown (the log.dir's marker) a
// writable open has nothing to recover; after an unclean one, produce's
// writable open meets the damage while recovering and refuses the same way.
func TestTrustKafkaDamageReported(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(fmt.Sprintf("clean=%v", clean), func(t *testing.T) {
			root, batches := kafkaPartition(t, 1000)
			if !clean {
				if err := vfs.Default.Remove(filepath.Join(root, ".kafka_cleanshutdown")); err != nil {
					t.Fatal(err)
				}
			}
			part := filepath.Join(root, "events-0")
			logFile := filepath.Join(part, segment.FileName(0, segment.LogSuffix))
			k := len(batches) / 2
			pos := 0
			for _, b := range batches[:k] {
				pos += len(b)
			}
			data := readVFS(t, logFile)
			data[pos+record.HeaderSize+3] ^= 0x20 // inside the first record: a CRC mismatch
			writeVFS(t, logFile, data)

			runs := [][]string{{"consume", part}, {"consume", part, "--from", "-10"}, {"consume", part, "--raw"}}
			if !clean {
				runs = append(runs, []string{"produce", part})
			}
			before := dirSnapshot(t, root)
			for _, args := range runs {
				r := invoke(t, "more\n", args...)
				if args[0] == "produce" {
					// The broker's partition is the broker's to write:
					// refused before anything is opened, lock included.
					if r.code == 0 || !strings.Contains(r.stderr, "not a seglog store") {
						t.Errorf("seglog %s: exit %d, stderr %q; want a refusal", strings.Join(args, " "), r.code, r.stderr)
					}
				} else if r.code == 0 || !strings.Contains(r.stderr, logFile) || !strings.Contains(r.stderr, fmt.Sprintf("byte %d", pos)) {
					t.Errorf("seglog %s: exit %d, stderr %q; want an error naming %s and byte %d", strings.Join(args, " "), r.code, r.stderr, logFile, pos)
				}
				vfstest.Unchanged(t, args[0], before, dirSnapshot(t, root))
			}
		})
	}
}

// TestTrustWrongDirectoryRefused (case 3): consume and produce on a Kafka
// log.dir (partition directories inside) or on a non-empty directory that
// is not a log are refused with a non-zero exit, and write nothing there.
func TestTrustWrongDirectoryRefused(t *testing.T) {
	logDir, _ := kafkaPartition(t, 50)
	other := filepath.Join(t.TempDir(), "photos")
	if err := vfs.Default.MkdirAll(filepath.Join(other, "2026")); err != nil {
		t.Fatal(err)
	}
	writeVFS(t, filepath.Join(other, "notes.txt"), []byte("not a log\n"))
	plain := filepath.Join(t.TempDir(), "plain")
	if err := vfs.Default.MkdirAll(plain); err != nil {
		t.Fatal(err)
	}
	writeVFS(t, filepath.Join(plain, "notes.txt"), []byte("not a log\n"))

	for _, dir := range []string{logDir, other, plain} {
		for _, args := range [][]string{{"consume", dir}, {"consume", dir, "--raw"}, {"consume", dir, "--from", "0"}, {"produce", dir}} {
			before := dirSnapshot(t, dir)
			r := invoke(t, "a line\n", args...)
			if r.code == 0 {
				t.Errorf("seglog %s: exit 0, stdout %q; want a refusal", strings.Join(args, " "), r.stdout)
			}
			vfstest.Unchanged(t, strings.Join(args, " "), before, dirSnapshot(t, dir))
		}
	}
}

// TestTrustKafkaLogStartHonoured: consume of a Kafka partition starts at
// the log start its log.dir's log-start-offset-checkpoint records (after
// a DeleteRecords or retention), not at the first stored offset; --from -N
// stops there too, and --from below it is out of range.
func TestTrustKafkaLogStartHonoured(t *testing.T) {
	root, _ := kafkaPartition(t, 300)
	writeVFS(t, filepath.Join(root, "log-start-offset-checkpoint"), []byte("0\n2\nother 3 5\nevents 0 100\n"))
	part := filepath.Join(root, "events-0")
	before := dirSnapshot(t, root)
	offsets := func(args ...string) string {
		var offs []int64
		for _, r := range parseConsumed(t, mustInvoke(t, "", append([]string{"consume", part, "--json"}, args...)...).stdout) {
			offs = append(offs, r.Offset)
		}
		if len(offs) == 0 {
			return "none"
		}
		return fmt.Sprintf("%d..%d (%d)", offs[0], offs[len(offs)-1], len(offs))
	}
	if got := offsets(); got != "100..299 (200)" {
		t.Errorf("consume printed offsets %s, want 100..299 (200)", got)
	}
	if got := offsets("--from", "-1000"); got != "100..299 (200)" {
		t.Errorf("consume --from -1000 printed offsets %s, want 100..299 (200)", got)
	}
	if r := invoke(t, "", "consume", part, "--from", "50"); r.code == 0 || !strings.Contains(r.stderr, "out of range") {
		t.Errorf("consume --from 50: exit %d, stderr %q; want out of range", r.code, r.stderr)
	}
	vfstest.Unchanged(t, "consume", before, dirSnapshot(t, root))
}

// TestTrustNoLogInsideALog: produce into a directory that would be created
// inside an existing log (a typo such as "produce mylog/x") is refused and
// writes nothing: the new directory would make the log one that consume
// and produce refuse to open.
func TestTrustNoLogInsideALog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	mustInvoke(t, numberedLines(1, 20), "produce", dir)
	before := dirSnapshot(t, dir)
	for _, sub := range []string{"x", "a/b"} {
		r := invoke(t, "line\n", "produce", filepath.Join(dir, sub))
		if r.code == 0 || !strings.Contains(r.stderr, "inside the log in "+dir) {
			t.Errorf("produce %s: exit %d, stderr %q; want a refusal naming the log", sub, r.code, r.stderr)
		}
		vfstest.Unchanged(t, "produce "+sub, before, dirSnapshot(t, dir))
	}
	if vals := consumedValues(t, dir); len(vals) != 20 {
		t.Fatalf("the log holds %d records after the refusals, want 20", len(vals))
	}
}
