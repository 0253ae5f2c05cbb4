package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
)

func b64(s string) *string {
	e := base64.StdEncoding.EncodeToString([]byte(s))
	return &e
}

// TestProduceLinesRoundTrip: stdin lines become records with the key
// before the first tab, a null key without one, an empty key before a
// leading tab, and every other byte kept.
func TestProduceLinesRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	in := "k1\tv1\nonly-value\n\tempty key\nk4\t\nk5\tv\twith tabs\r\n\nlast without newline"
	r := mustInvoke(t, in, "produce", dir, "--batch", "2")
	if !strings.Contains(r.stderr, "produced 7 records in 4 batches") || !strings.Contains(r.stderr, "offsets 0..6") {
		t.Errorf("summary: %q", r.stderr)
	}
	if counts := batchCounts(t, dir); fmt.Sprint(counts) != "[2 2 2 1]" {
		t.Errorf("records per stored batch %v, want [2 2 2 1]", counts)
	}
	want := []struct{ key, value *string }{
		{b64("k1"), b64("v1")},
		{nil, b64("only-value")},
		{b64(""), b64("empty key")},
		{b64("k4"), b64("")},
		{b64("k5"), b64("v\twith tabs\r")},
		{nil, b64("")},
		{nil, b64("last without newline")},
	}
	got := parseConsumed(t, mustInvoke(t, "", "consume", dir, "--json").stdout)
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Offset != int64(i) || !sameB64(g.Key, w.key) || !sameB64(g.Value, w.value) || len(g.Headers) != 0 {
			t.Errorf("record %d: offset %d key %s value %s headers %d; want key %s value %s", i, g.Offset, show(g.Key), show(g.Value), len(g.Headers), show(w.key), show(w.value))
		}
		if g.Timestamp <= 0 {
			t.Errorf("record %d: timestamp %d, want the append time", i, g.Timestamp)
		}
	}

	// A second produce continues at the log's end.
	r = mustInvoke(t, "more\n", "produce", dir)
	if !strings.Contains(r.stderr, "offsets 7..7") {
		t.Errorf("second produce summary: %q", r.stderr)
	}
}

func batchCounts(t *testing.T, dir string) []int32 {
	t.Helper()
	var counts []int32
	for _, b := range storedBatches(t, dir) {
		counts = append(counts, b.NumRecords())
	}
	return counts
}

// TestConsumeFromMax: --from and --max select a window; the text format
// quotes keys and values and prints null.
func TestConsumeFromMax(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	var in strings.Builder
	for i := range 10 {
		fmt.Fprintf(&in, "key%d\tvalue%d\n", i, i)
	}
	in.WriteString("no key\n")
	mustInvoke(t, in.String(), "produce", dir, "--batch", "3")

	offsets := func(out string) []int64 {
		var offs []int64
		for _, r := range parseConsumed(t, out) {
			offs = append(offs, r.Offset)
		}
		return offs
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "[0 1 2 3 4 5 6 7 8 9 10]"},
		{[]string{"--from", "4", "--max", "3"}, "[4 5 6]"},
		{[]string{"--from", "9"}, "[9 10]"},
		{[]string{"--max", "0"}, "[]"},
		{[]string{"--max", "-1", "--from", "10"}, "[10]"},
		{[]string{"--from", "11"}, "[]"}, // the end offset: nothing yet
		// Counting back from the end, as kcat's -o -N.
		{[]string{"--from", "-3"}, "[8 9 10]"},
		{[]string{"--from", "-1"}, "[10]"},
		{[]string{"--from", "-3", "--max", "2"}, "[8 9]"},
		{[]string{"--from", "-11"}, "[0 1 2 3 4 5 6 7 8 9 10]"},
		{[]string{"--from", "-500"}, "[0 1 2 3 4 5 6 7 8 9 10]"}, // all there is
	} {
		out := mustInvoke(t, "", append([]string{"consume", dir, "--json"}, c.args...)...).stdout
		if got := fmt.Sprint(offsets(out)); got != c.want {
			t.Errorf("consume %v: offsets %s, want %s", c.args, got, c.want)
		}
	}
	// Past the end fails, plain and raw alike.
	for _, args := range [][]string{{"--from", "12"}, {"--from", "12", "--raw"}, {"--from", "1000", "--raw"}} {
		if r := invoke(t, "", append([]string{"consume", dir}, args...)...); r.code == 0 || !strings.Contains(r.stderr, "out of range") || r.stdout != "" {
			t.Errorf("consume %v: exit %d, stdout %q, stderr %q; want an out-of-range error", args, r.code, r.stdout, r.stderr)
		}
	}

	out := mustInvoke(t, "", "consume", dir, "--from", "9").stdout
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("text output %q: want 2 lines", out)
	}
	for i, want := range []string{"9\t*\t\"key9\"\t\"value9\"", "10\t*\tnull\t\"no key\""} {
		f := strings.Split(lines[i], "\t")
		wf := strings.Split(want, "\t")
		if len(f) != len(wf) || f[0] != wf[0] || f[2] != wf[2] || f[3] != wf[3] {
			t.Errorf("text line %q, want %q", lines[i], want)
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			t.Errorf("text line %q: timestamp field: %v", lines[i], err)
		}
	}
}

// TestConsumeTextHeaders: headers print as "key"=value, null values as null,
// and odd bytes are escaped so a record stays on one line.
func TestConsumeTextHeaders(t *testing.T) {
	r := record.Record{Offset: 3, Timestamp: 42, Key: []byte("a\tb\n"), Value: nil,
		Headers: []record.Header{{Key: "h1", Value: []byte("x")}, {Key: "h2", Value: nil}}}
	got := string(appendTextRecord(nil, r))
	want := "3\t42\t\"a\\tb\\n\"\tnull\t\"h1\"=\"x\"\t\"h2\"=null"
	if got != want {
		t.Errorf("text record %q, want %q", got, want)
	}
	got = string(appendJSONRecord(nil, r))
	want = `{"offset":3,"timestamp":42,"key":"YQliCg==","value":null,"headers":[{"key":"h1","value":"eA=="},{"key":"h2","value":null}]}`
	if got != want {
		t.Errorf("json record %s, want %s", got, want)
	}
	if !jsonLine.MatchString(got) {
		t.Errorf("json record %s does not match the specified shape", got)
	}
}

// TestProduceCutsBatchesBySize: a batch is cut before it would exceed
// --max-batch-bytes, and a line that cannot fit is refused by number.
func TestProduceCutsBatchesBySize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	line := strings.Repeat("v", 50)
	in := strings.Repeat(line+"\n", 20)
	mustInvoke(t, in, "produce", dir, "--batch", "100", "--max-batch-bytes", "300", "--segment-bytes", "4096")
	batches := storedBatches(t, dir)
	total := 0
	for i, b := range batches {
		if len(b) > 300 {
			t.Errorf("batch %d: %d bytes, over --max-batch-bytes 300", i, len(b))
		}
		total += int(b.NumRecords())
	}
	if total != 20 || len(batches) < 2 {
		t.Errorf("%d records in %d batches, want 20 in several", total, len(batches))
	}

	r := invoke(t, "short\n"+strings.Repeat("x", 400)+"\n", "produce", dir, "--max-batch-bytes", "300", "--segment-bytes", "4096")
	if r.code == 0 || !strings.Contains(r.stderr, "line 2") {
		t.Errorf("over-long line: exit %d, stderr %q; want an error naming line 2", r.code, r.stderr)
	}
}

// corruptCopy writes a copy of the none corpus with batch k's CRC damaged
// and returns its path, the batches, and batch k's byte position.
func corruptCopy(t *testing.T, k int) (string, []record.Batch, int) {
	t.Helper()
	data := readVFS(t, filepath.Join(corpusDir, "none.batches"))
	batches := splitBatches(t, data)
	pos := 0
	for _, b := range batches[:k] {
		pos += len(b)
	}
	bad := append([]byte(nil), data...)
	bad[pos+record.MagicOffset+1] ^= 0x40 // the first CRC byte
	name := filepath.Join(t.TempDir(), "bad.batches")
	writeVFS(t, name, bad)
	return name, batches, pos
}

// TestProduceRefusedBatch: a batch with a bad CRC stops produce with its
// index and position; the batches before it stay, nothing after is stored.
func TestProduceRefusedBatch(t *testing.T) {
	const k = 5
	file, batches, pos := corruptCopy(t, k)
	dir := filepath.Join(t.TempDir(), "log")
	r := invoke(t, "", "produce", dir, "--batches", file)
	if r.code == 0 {
		t.Fatalf("produce of a corrupt batch exited 0; stderr %q", r.stderr)
	}
	if want := fmt.Sprintf("batch %d at byte %d", k, pos); !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "bad.batches") || !strings.Contains(r.stderr, "crc") {
		t.Errorf("stderr %q: want the file, %q and the CRC", r.stderr, want)
	}
	kept := 0
	for _, b := range batches[:k] {
		kept += int(b.NumRecords())
	}
	if !strings.Contains(r.stderr, fmt.Sprintf("produced %d records in %d batches", kept, k)) {
		t.Errorf("stderr %q: want a summary of the %d stored batches", r.stderr, k)
	}
	checkStoredBatches(t, dir, batches[:k], 0)
	got := parseConsumed(t, mustInvoke(t, "", "consume", dir, "--json").stdout)
	if len(got) != kept || got[len(got)-1].Offset != int64(kept-1) {
		t.Fatalf("consumed %d records, want the %d of the first %d batches", len(got), kept, k)
	}
}

// TestProduceBatchFraming: truncated files, lying length fields and
// batches over --max-batch-bytes are refused by index and position,
// without reading or allocating what the length field claims.
func TestProduceBatchFraming(t *testing.T) {
	data := readVFS(t, filepath.Join(corpusDir, "none.batches"))
	batches := splitBatches(t, data)
	first := len(batches[0])
	largest, largestAt := 0, 0
	for i, b := range batches {
		if len(b) > largest {
			largest, largestAt = len(b), i
		}
	}
	posOf := func(k int) int {
		p := 0
		for _, b := range batches[:k] {
			p += len(b)
		}
		return p
	}
	huge := append([]byte(nil), batches[0]...)
	binary.BigEndian.PutUint32(huge[8:], 0x7fffff00)
	short := append([]byte(nil), batches[0]...)
	binary.BigEndian.PutUint32(short[8:], 3)

	for _, c := range []struct {
		name  string
		data  []byte
		flags []string
		want  string
	}{
		{"truncated mid-batch", data[:first+30], nil, "batch 1 at byte " + strconv.Itoa(first)},
		{"truncated header", data[:first+5], nil, "batch 1 at byte " + strconv.Itoa(first)},
		{"huge length", append(append([]byte(nil), batches[0]...), huge...), nil, "batch 1 at byte " + strconv.Itoa(first)},
		{"short length", short, nil, "batch 0 at byte 0"},
		{"over max batch bytes", data, []string{"--max-batch-bytes", strconv.Itoa(largest - 1)}, fmt.Sprintf("batch %d at byte %d", largestAt, posOf(largestAt))},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "in.batches")
			writeVFS(t, file, c.data)
			r := invoke(t, "", append([]string{"produce", filepath.Join(t.TempDir(), "log"), "--batches", file}, c.flags...)...)
			if r.code == 0 || !strings.Contains(r.stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want an error with %q", r.code, r.stderr, c.want)
			}
		})
	}

	// The same batches through stdin.
	dir := filepath.Join(t.TempDir(), "log")
	mustInvoke(t, string(data), "produce", dir, "--batches", "-")
	checkStoredBatches(t, dir, batches, 0)
}

// TestJSONHeaderKeys: header keys with quotes, backslashes, control bytes,
// non-ASCII and invalid UTF-8 come out as JSON strings encoding/json reads
// back as the key (invalid bytes as U+FFFD).
func TestJSONHeaderKeys(t *testing.T) {
	for _, key := range []string{"", "plain", `q"uo\te`, "tab\there\nnl\x00\x1f", "héllo ✓ 𝄞", "bad\xff\xfeutf8", "\u2028<&>"} {
		line := appendJSONRecord(nil, record.Record{Headers: []record.Header{{Key: key, Value: []byte{}}}})
		if !jsonLine.Match(line) {
			t.Errorf("key %q: line %s does not match the specified shape", key, line)
		}
		var got consumedRecord
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("key %q: %v in %s", key, err, line)
		}
		// encoding/json's own reading of the key is the reference.
		ref, _ := json.Marshal(key)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if len(got.Headers) != 1 || got.Headers[0].Key != want {
			t.Errorf("key %q read back as %+v", key, got.Headers)
		}
	}
}
