package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
)

// corpusRecord is one line of CODEC.records.jsonl (see its README).
type corpusRecord struct {
	Key         *string           `json:"key"`
	Value       *string           `json:"value"`
	Headers     map[string]string `json:"headers"`
	TimestampMs int64             `json:"timestamp_ms"`
	Aborted     bool              `json:"aborted"`
}

// consumedRecord is one line of consume --json.
type consumedRecord struct {
	Offset    int64   `json:"offset"`
	Timestamp int64   `json:"timestamp"`
	Key       *string `json:"key"`
	Value     *string `json:"value"`
	Headers   []struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	} `json:"headers"`
}

// jsonLine is the exact shape DESIGN.md gives consume --json: these keys,
// in this order, base64 or null, headers always an array.
var jsonLine = regexp.MustCompile(`^\{"offset":\d+,"timestamp":-?\d+,"key":(null|"[A-Za-z0-9+/=]*"),"value":(null|"[A-Za-z0-9+/=]*"),"headers":\[(\{"key":"(?:[^"\\]|\\.)*","value":(null|"[A-Za-z0-9+/=]*")\}(,\{"key":"(?:[^"\\]|\\.)*","value":(null|"[A-Za-z0-9+/=]*")\})*)?\]\}$`)

// parseConsumed decodes consume --json output, checking each line's shape.
func parseConsumed(t *testing.T, out string) []consumedRecord {
	t.Helper()
	var recs []consumedRecord
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" && out == "" {
			break
		}
		if !jsonLine.MatchString(line) {
			t.Fatalf("consume --json line %d does not have the specified shape: %.300s", i, line)
		}
		var r consumedRecord
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("line %d: %v: %.300s", i, err, line)
		}
		if r.Headers == nil {
			t.Fatalf("line %d: headers is not an array: %.300s", i, line)
		}
		recs = append(recs, r)
	}
	return recs
}

func loadCorpusRecords(t *testing.T, codec string) []corpusRecord {
	t.Helper()
	var recs []corpusRecord
	for i, line := range strings.Split(strings.TrimSpace(string(readVFS(t, filepath.Join(corpusDir, codec+".records.jsonl")))), "\n") {
		var r corpusRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%s.records.jsonl line %d: %v", codec, i+1, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// sameBytes compares an optional base64 string of consume's output with the
// corpus's, null and empty being different.
func sameB64(got, want *string) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return *got == *want
}

// checkCorpusRecords compares consume --json output with the corpus
// records, expecting offsets from, from+1, ...
func checkCorpusRecords(t *testing.T, got []consumedRecord, want []corpusRecord, from int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("consumed %d records, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		off := from + int64(i)
		switch {
		case g.Offset != off:
			t.Fatalf("record %d: offset %d, want %d", i, g.Offset, off)
		case g.Timestamp != w.TimestampMs:
			t.Fatalf("offset %d: timestamp %d, want %d", off, g.Timestamp, w.TimestampMs)
		case !sameB64(g.Key, w.Key):
			t.Fatalf("offset %d: key %v, want %v", off, show(g.Key), show(w.Key))
		case !sameB64(g.Value, w.Value):
			t.Fatalf("offset %d: value %.60s, want %.60s", off, show(g.Value), show(w.Value))
		case len(g.Headers) != len(w.Headers):
			t.Fatalf("offset %d: %d headers, want %d", off, len(g.Headers), len(w.Headers))
		}
		for _, h := range g.Headers {
			wv, ok := w.Headers[h.Key]
			if !ok || h.Value == nil {
				t.Fatalf("offset %d: header %q=%v not in %v", off, h.Key, show(h.Value), w.Headers)
			}
			v, err := base64.StdEncoding.DecodeString(*h.Value)
			if err != nil || string(v) != wv {
				t.Fatalf("offset %d: header %q=%q (%v), want %q", off, h.Key, v, err, wv)
			}
		}
	}
}

func show(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

// checkStoredBatches checks that dir's segments hold exactly the input
// batches, each with its offsets assigned and the leader epoch stamped and
// nothing else changed, and that every stored CRC still holds.
func checkStoredBatches(t *testing.T, dir string, input []record.Batch, epoch int32) {
	t.Helper()
	stored := storedBatches(t, dir)
	if len(stored) != len(input) {
		t.Fatalf("%d batches stored, want %d", len(stored), len(input))
	}
	next := int64(0)
	for i, in := range input {
		s := stored[i]
		if len(s) != len(in) {
			t.Fatalf("batch %d: %d bytes stored, %d given", i, len(s), len(in))
		}
		if got := int64(binary.BigEndian.Uint64(s[0:8])); got != next {
			t.Fatalf("batch %d: base offset %d, want %d", i, got, next)
		}
		if got := int32(binary.BigEndian.Uint32(s[12:16])); got != epoch {
			t.Fatalf("batch %d: partition leader epoch %d, want %d", i, got, epoch)
		}
		// Bytes 8-12 are the length, 16 on the magic, CRC and everything
		// it covers: all as the producer sent them.
		if !bytes.Equal(s[8:12], in[8:12]) || !bytes.Equal(s[16:], in[16:]) {
			t.Fatalf("batch %d: stored bytes differ from the producer's beyond base offset and leader epoch", i)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("batch %d: stored batch invalid: %v", i, err)
		}
		next += int64(in.NumRecords())
	}
}

// TestCorpusProduceConsume stores every real Kafka-client batch file with
// produce --batches and reads it back with consume --json, once in a single
// segment and once spread over small segments.
func TestCorpusProduceConsume(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			file := filepath.Join(corpusDir, codec+".batches")
			data := readVFS(t, file)
			input := splitBatches(t, data)
			want := loadCorpusRecords(t, codec)
			largest := 0
			for _, b := range input {
				largest = max(largest, len(b))
			}

			t.Run("one segment", func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "log")
				r := mustInvoke(t, "", "produce", dir, "--batches", file, "--leader-epoch", "5")
				if !strings.Contains(r.stderr, "produced "+strconv.Itoa(len(want))+" records in "+strconv.Itoa(len(input))+" batches") {
					t.Errorf("summary %q does not count %d records in %d batches", r.stderr, len(want), len(input))
				}
				if n := len(storedLogs(t, dir)); n != 1 {
					t.Fatalf("%d segments, want 1", n)
				}
				checkStoredBatches(t, dir, input, 5)
				got := parseConsumed(t, mustInvoke(t, "", "consume", dir, "--json").stdout)
				checkCorpusRecords(t, got, want, 0)
			})

			t.Run("small segments", func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "log")
				segBytes := max(largest, len(data)/6)
				flags := []string{
					"--segment-bytes", strconv.Itoa(segBytes),
					"--max-batch-bytes", strconv.Itoa(largest),
					"--index-interval-bytes", "1",
				}
				mustInvoke(t, "", append([]string{"produce", dir, "--batches", file}, flags...)...)
				if n := len(storedLogs(t, dir)); n < 2 {
					t.Fatalf("%d segments with --segment-bytes %d for %d bytes, want several", n, segBytes, len(data))
				}
				checkStoredBatches(t, dir, input, 0)
				// consume takes only the reading flags.
				got := parseConsumed(t, mustInvoke(t, "", "consume", dir, "--json").stdout)
				checkCorpusRecords(t, got, want, 0)

				// Starting points across segments go through the index.
				for _, from := range []int{1, len(want) / 3, len(want) / 2, len(want) - 1} {
					out := mustInvoke(t, "", "consume", dir, "--json", "--from", strconv.Itoa(from), "--max", "25").stdout
					end := min(from+25, len(want))
					checkCorpusRecords(t, parseConsumed(t, out), want[from:end], int64(from))
				}
			})
		})
	}
}

// TestCorpusMatchesBroker compares what produce stores with the log the
// Kafka broker stored for the same batches: the same bytes, batch for
// batch, but for the leader epoch (and, where the broker interleaved
// transaction markers, the offsets).
func TestCorpusMatchesBroker(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "log")
			mustInvoke(t, "", "produce", dir, "--batches", filepath.Join(corpusDir, codec+".batches"))
			stored := storedBatches(t, dir)
			var broker []record.Batch
			markers := false
			for _, b := range splitBatches(t, readVFS(t, filepath.Join(corpusDir, codec+".broker-log"))) {
				if b.IsControl() {
					markers = true
					continue
				}
				broker = append(broker, b)
			}
			if len(stored) != len(broker) {
				t.Fatalf("%d batches stored, the broker stored %d data batches", len(stored), len(broker))
			}
			for i := range stored {
				s, b := stored[i], broker[i]
				if !markers && s.BaseOffset() != b.BaseOffset() {
					t.Fatalf("batch %d: base offset %d, the broker's %d", i, s.BaseOffset(), b.BaseOffset())
				}
				if !bytes.Equal(s[8:12], b[8:12]) || !bytes.Equal(s[16:], b[16:]) {
					t.Fatalf("batch %d differs from the broker's", i)
				}
			}
		})
	}
}
