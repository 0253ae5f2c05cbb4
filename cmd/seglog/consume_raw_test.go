package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
)

// TestConsumeRaw: consume --raw writes exactly the stored bytes of every
// segment, from the batch holding --from to the end, both to a buffer (the
// copy path) and to a pipe (the sendfile path).
func TestConsumeRaw(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	input := filepath.Join("..", "..", "testdata", "kafka-client", "lz4.batches")
	mustInvoke(t, "", "produce", dir, "--batches", input, "--segment-bytes", "40000", "--max-index-bytes", "4096")
	var all []byte
	for _, name := range storedLogs(t, dir) {
		all = append(all, readVFS(t, name)...)
	}
	if len(storedLogs(t, dir)) < 3 {
		t.Fatalf("want several segments, have %d", len(storedLogs(t, dir)))
	}
	out := mustInvoke(t, "", "consume", dir, "--raw")
	if !bytes.Equal([]byte(out.stdout), all) {
		t.Fatalf("--raw wrote %d bytes, the segments hold %d", len(out.stdout), len(all))
	}
	// From an offset inside a later batch: the output starts at that batch.
	batches := storedBatches(t, dir)
	mid := batches[len(batches)/2]
	from := mid.BaseOffset() + int64(mid.NumRecords())/2
	out = mustInvoke(t, "", "consume", dir, "--raw", "--from", itoa(from))
	start := bytes.Index(all, mid)
	if !bytes.Equal([]byte(out.stdout), all[start:]) {
		t.Fatalf("--raw --from %d: %d bytes, want the %d from batch [%d, %d]", from, len(out.stdout), len(all)-start, mid.BaseOffset(), mid.LastOffset())
	}

	// The last N offsets: from the batch holding the end minus N.
	end := batches[len(batches)-1].LastOffset() + 1
	last := batches[len(batches)-1]
	out = mustInvoke(t, "", "consume", dir, "--raw", "--from", itoa(-int64(last.NumRecords())))
	if !bytes.Equal([]byte(out.stdout), last) {
		t.Fatalf("--raw --from -%d: %d bytes, want the last batch's %d", last.NumRecords(), len(out.stdout), len(last))
	}
	out = mustInvoke(t, "", "consume", dir, "--raw", "--from", itoa(-(end - from)))
	if !bytes.Equal([]byte(out.stdout), all[start:]) {
		t.Fatalf("--raw --from -%d: %d bytes, want the %d from batch [%d, %d]", end-from, len(out.stdout), len(all)-start, mid.BaseOffset(), mid.LastOffset())
	}

	// Through a pipe, as a shell would connect it: sendfile serves it.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(pr)
		got <- b
	}()
	var errw bytes.Buffer
	code := runIO([]string{"consume", dir, "--raw"}, strings.NewReader(""), pw, &errw)
	pw.Close()
	if b := <-got; code != 0 || !bytes.Equal(b, all) {
		t.Fatalf("--raw into a pipe: exit %d, %d bytes of %d: %s", code, len(b), len(all), errw.String())
	}
	for _, b := range splitBatches(t, all) {
		if err := record.Batch(b).Validate(); err != nil {
			t.Fatal(err)
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
