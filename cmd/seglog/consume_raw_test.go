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

// TestConsumeRawMaxCountsBatches: with --raw, --max N writes at most N
// whole batches, the first the one holding --from, across segments; it
// was ignored, and everything to the end was written.
func TestConsumeRawMaxCountsBatches(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	input := filepath.Join("..", "..", "testdata", "kafka-client", "lz4.batches")
	mustInvoke(t, "", "produce", dir, "--batches", input, "--segment-bytes", "40000", "--max-index-bytes", "4096")
	batches := storedBatches(t, dir)
	if len(storedLogs(t, dir)) < 2 || len(batches) < 6 {
		t.Fatalf("want several segments and batches, have %d and %d", len(storedLogs(t, dir)), len(batches))
	}
	join := func(bs []record.Batch) []byte {
		var b []byte
		for _, x := range bs {
			b = append(b, x...)
		}
		return b
	}
	mid := len(batches) / 2
	from := batches[mid].BaseOffset() + int64(batches[mid].NumRecords())/2
	for _, c := range []struct {
		args []string
		want []byte
	}{
		{[]string{"--max", "1"}, batches[0]},
		{[]string{"--max", "0"}, nil},
		{[]string{"--from", itoa(from), "--max", "3"}, join(batches[mid : mid+3])},
		// Across every segment boundary, and past the end: what there is.
		{[]string{"--max", itoa(int64(len(batches) - 1))}, join(batches[:len(batches)-1])},
		{[]string{"--max", itoa(int64(len(batches) + 5))}, join(batches)},
	} {
		out := mustInvoke(t, "", append([]string{"consume", dir, "--raw"}, c.args...)...)
		if !bytes.Equal([]byte(out.stdout), c.want) {
			t.Errorf("--raw %v: %d bytes, want %d", c.args, len(out.stdout), len(c.want))
		}
	}
}
