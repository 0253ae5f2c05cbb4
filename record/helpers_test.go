package record

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

const corpusDir = "../testdata/kafka-client"

// readFile reads a whole file through vfs, as every file access must.
func readFile(t testing.TB, name string) []byte {
	t.Helper()
	return vfstest.ReadFile(t, vfs.OS(), name)
}

// writeFile replaces name with data through vfs.
func writeFile(t testing.TB, name string, data []byte) {
	t.Helper()
	vfstest.WriteFile(t, vfs.OS(), name, data)
}

// jsonRecord is one line of a CODEC.records.jsonl file.
type jsonRecord struct {
	Key       *string           `json:"key"`
	Value     *string           `json:"value"`
	Headers   map[string]string `json:"headers"`
	Timestamp int64             `json:"timestamp_ms"`
	Aborted   bool              `json:"aborted"`
}

// wantRecord is a corpus record decoded from JSON, with the aborted flag.
type wantRecord struct {
	Record
	Aborted bool
}

func loadRecords(t testing.TB, codec string) []wantRecord {
	t.Helper()
	data := readFile(t, filepath.Join(corpusDir, codec+".records.jsonl"))
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []wantRecord
	for dec.More() {
		var j jsonRecord
		if err := dec.Decode(&j); err != nil {
			t.Fatal(err)
		}
		r := wantRecord{Record: Record{Timestamp: j.Timestamp}, Aborted: j.Aborted}
		r.Key = b64(t, j.Key)
		r.Value = b64(t, j.Value)
		keys := make([]string, 0, len(j.Headers))
		for k := range j.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			r.Headers = append(r.Headers, Header{Key: k, Value: []byte(j.Headers[k])})
		}
		out = append(out, r)
	}
	return out
}

func b64(t testing.TB, s *string) []byte {
	if s == nil {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(*s)
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		b = []byte{}
	}
	return b
}

// splitEntries cuts a file of concatenated entries with PeekEntry, failing
// on anything but whole v2 batches.
func splitEntries(t testing.TB, data []byte) []Batch {
	t.Helper()
	var out []Batch
	for pos := 0; pos < len(data); {
		size, magic, err := PeekEntry(data[pos:])
		if err != nil {
			t.Fatalf("entry at %d: %v", pos, err)
		}
		if magic != CurrentMagic || pos+size > len(data) {
			t.Fatalf("entry at %d: magic %d size %d of %d left", pos, magic, size, len(data)-pos)
		}
		out = append(out, Batch(data[pos:pos+size]))
		pos += size
	}
	return out
}

// decodeAll validates b and returns copies of its records.
func decodeAll(b Batch) ([]Record, error) {
	var out []Record
	for r, err := range b.Records() {
		if err != nil {
			return out, err
		}
		out = append(out, r.Clone())
	}
	return out, nil
}

// diffRecord describes how got differs from want (offsets ignored), or "".
func diffRecord(got, want Record) string {
	switch {
	case (got.Key == nil) != (want.Key == nil) || !bytes.Equal(got.Key, want.Key):
		return fmt.Sprintf("key %s, want %s", show(got.Key), show(want.Key))
	case (got.Value == nil) != (want.Value == nil) || !bytes.Equal(got.Value, want.Value):
		return fmt.Sprintf("value %s, want %s", show(got.Value), show(want.Value))
	case got.Timestamp != want.Timestamp:
		return fmt.Sprintf("timestamp %d, want %d", got.Timestamp, want.Timestamp)
	case len(got.Headers) != len(want.Headers):
		return fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers))
	}
	for i := range got.Headers {
		g, w := got.Headers[i], want.Headers[i]
		if g.Key != w.Key || (g.Value == nil) != (w.Value == nil) || !bytes.Equal(g.Value, w.Value) {
			return fmt.Sprintf("header %d = %q:%s, want %q:%s", i, g.Key, show(g.Value), w.Key, show(w.Value))
		}
	}
	return ""
}

func show(b []byte) string {
	if b == nil {
		return "null"
	}
	if len(b) > 24 {
		return fmt.Sprintf("%q...(%d bytes)", b[:24], len(b))
	}
	return fmt.Sprintf("%q", b)
}
