package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// corpusDir holds the real Kafka-client batches, relative to this package.
const corpusDir = "../../testdata/kafka-client"

// lockedBuffer is where the Log's background goroutines log while the
// test writes and reads too.
type lockedBuffer = testutil.LockedBuffer

// cliResult is one in-process run of the CLI.
type cliResult struct {
	code           int
	stdout, stderr string
}

// invoke runs the CLI in-process with stdin and args.
func invoke(t testing.TB, stdin string, args ...string) cliResult {
	t.Helper()
	var out, errw lockedBuffer
	code := runIO(args, strings.NewReader(stdin), &out, &errw)
	return cliResult{code: code, stdout: out.String(), stderr: errw.String()}
}

// mustInvoke runs the CLI and fails the test unless it exits 0.
func mustInvoke(t testing.TB, stdin string, args ...string) cliResult {
	t.Helper()
	r := invoke(t, stdin, args...)
	if r.code != 0 {
		t.Fatalf("seglog %s: exit %d\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// readVFS returns the whole of a file on the real filesystem.
func readVFS(t testing.TB, name string) []byte {
	t.Helper()
	return vfstest.ReadFile(t, vfs.Default, name)
}

// writeVFS replaces a file on the real filesystem.
func writeVFS(t testing.TB, name string, data []byte) {
	t.Helper()
	vfstest.WriteFile(t, vfs.Default, name, data)
}

func exists(name string) bool {
	_, err := vfs.Default.Stat(name)
	return err == nil
}

// splitBatches frames concatenated batches; it fails the test on a
// truncated or malformed entry.
func splitBatches(t testing.TB, data []byte) []record.Batch {
	t.Helper()
	var out []record.Batch
	for pos := 0; pos < len(data); {
		size, _, err := record.PeekEntry(data[pos:])
		if err != nil {
			t.Fatalf("batch at byte %d: %v", pos, err)
		}
		if pos+size > len(data) {
			t.Fatalf("batch at byte %d: %d bytes, only %d left", pos, size, len(data)-pos)
		}
		out = append(out, record.Batch(data[pos:pos+size]))
		pos += size
	}
	return out
}

// storedLogs returns the .log files of dir in offset order.
func storedLogs(t testing.TB, dir string) []string {
	t.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, n := range names {
		if _, suffix, ok := segment.ParseFileName(n); ok && suffix == segment.LogSuffix {
			logs = append(logs, filepath.Join(dir, n))
		}
	}
	// Zero-padded base offsets sort as numbers.
	return logs
}

// storedBatches returns every batch stored in dir's segments, in order.
func storedBatches(t testing.TB, dir string) []record.Batch {
	t.Helper()
	var out []record.Batch
	for _, name := range storedLogs(t, dir) {
		out = append(out, splitBatches(t, readVFS(t, name))...)
	}
	return out
}
