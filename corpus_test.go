package seglog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// corpusRecord is one line of a kafka-client records.jsonl file.
type corpusRecord struct {
	Key       *string           `json:"key"`
	Value     *string           `json:"value"`
	Headers   map[string]string `json:"headers"`
	Timestamp int64             `json:"timestamp_ms"`
	Aborted   bool              `json:"aborted"`
}

// readFile returns the whole of a file on the real filesystem.
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	return vfstest.ReadFile(t, vfs.Default, path)
}

func loadCorpusRecords(t testing.TB, codec string) []corpusRecord {
	t.Helper()
	var out []corpusRecord
	dec := json.NewDecoder(bytes.NewReader(readFile(t, filepath.Join("testdata", "kafka-client", codec+".records.jsonl"))))
	for dec.More() {
		var r corpusRecord
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// splitBatches frames a file of concatenated batches.
func splitBatches(t testing.TB, data []byte) []record.Batch {
	t.Helper()
	var out []record.Batch
	for len(data) > 0 {
		size, _, err := record.PeekEntry(data)
		if err != nil || size > len(data) {
			t.Fatalf("corpus framing: size %d, %d left, err %v", size, len(data), err)
		}
		out = append(out, record.Batch(data[:size]))
		data = data[size:]
	}
	return out
}

func b64(s *string) []byte {
	if s == nil {
		return nil
	}
	v, err := base64.StdEncoding.DecodeString(*s)
	if err != nil {
		panic(err)
	}
	if v == nil {
		v = []byte{}
	}
	return v
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// TestAppendBatchCorpus stores every batch a real Kafka client produced
// through AppendBatch: the records read back equal records.jsonl with
// offsets 0..n-1, and the .log holds the input bytes with only the base
// offset and leader epoch changed (CreateTime batches whose max timestamp
// is already right keep their CRC).
func TestAppendBatchCorpus(t *testing.T) {
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			input := readFile(t, filepath.Join("testdata", "kafka-client", codec+".batches"))
			want := loadCorpusRecords(t, codec)
			dir := t.TempDir()
			fscktest.CheckCleanAtEnd(t, vfs.Default, dir)
			l, err := Open(dir, Options{LeaderEpoch: 7, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			var expectLog []byte
			next := int64(0)
			for i, b := range splitBatches(t, input) {
				orig := record.Batch(bytes.Clone(b))
				info, err := l.AppendBatch(bytes.Clone(b))
				if err != nil {
					t.Fatalf("batch %d: %v", i, err)
				}
				if info.FirstOffset != next || info.LastOffset != next+int64(orig.NumRecords())-1 {
					t.Fatalf("batch %d: offsets [%d, %d], want from %d", i, info.FirstOffset, info.LastOffset, next)
				}
				orig.SetBaseOffset(next)
				orig.SetPartitionLeaderEpoch(7)
				expectLog = append(expectLog, orig...)
				next = info.LastOffset + 1
			}
			checkRecordsEqual(t, l, want)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			got := readFile(t, filepath.Join(dir, segment.FileName(0, segment.LogSuffix)))
			if !bytes.Equal(got, expectLog) {
				t.Fatalf(".log differs from the input batches with offsets assigned (%d vs %d bytes)", len(got), len(expectLog))
			}
		})
	}
}

// checkRecordsEqual reads the whole log and compares it with the corpus.
func checkRecordsEqual(t *testing.T, l *Log, want []corpusRecord) {
	t.Helper()
	i := 0
	for r, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(want) {
			t.Fatalf("more records than the corpus (%d)", len(want))
		}
		w := want[i]
		if r.Offset != int64(i) || r.Timestamp != w.Timestamp || !sameBytes(r.Key, b64(w.Key)) || !sameBytes(r.Value, b64(w.Value)) {
			t.Fatalf("record %d: got offset %d ts %d key %q value %.20q; want ts %d key %q value %.20q",
				i, r.Offset, r.Timestamp, r.Key, r.Value, w.Timestamp, b64(w.Key), b64(w.Value))
		}
		if len(r.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(r.Headers), len(w.Headers))
		}
		for _, h := range r.Headers {
			if v, ok := w.Headers[h.Key]; !ok || string(h.Value) != v {
				t.Fatalf("record %d: header %q=%q not in %v", i, h.Key, h.Value, w.Headers)
			}
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("read %d records, corpus has %d", i, len(want))
	}
}
