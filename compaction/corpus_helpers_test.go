package compaction

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

const corpusDir = "../testdata/kafka-client"

var corpusCodecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// corpusBatches splits a corpus file into its batches.
func corpusBatches(t *testing.T, name string) []record.Batch {
	t.Helper()
	data, err := vfs.ReadFileLimit(vfs.Default, filepath.Join(corpusDir, name), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Batch
	for len(data) > 0 {
		b := record.Batch(data)
		n := b.Size()
		if n < record.HeaderSize || n > len(data) {
			t.Fatalf("%s: bad batch length", name)
		}
		out = append(out, b[:n:n])
		data = data[n:]
	}
	return out
}

// corpusRecord is one line of CODEC.records.jsonl.
type corpusRecord struct {
	Key     *string `json:"key"`
	Value   *string `json:"value"`
	Aborted bool    `json:"aborted"`
}

func (c corpusRecord) bytes(s *string) []byte {
	if s == nil {
		return nil
	}
	b, _ := base64.StdEncoding.DecodeString(*s)
	if b == nil {
		b = []byte{}
	}
	return b
}

func corpusRecords(t *testing.T, codec string) []corpusRecord {
	t.Helper()
	data, err := vfs.ReadFileLimit(vfs.Default, filepath.Join(corpusDir, codec+".records.jsonl"), 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusRecord
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r corpusRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// writeSegments writes batches into /log as .log files, a new one
// starting before each batch split says; Open rebuilds their indexes.
func writeSegments(t *testing.T, fsys vfs.FS, batches []record.Batch, split func(i int) bool) {
	t.Helper()
	if err := fsys.MkdirAll("/log"); err != nil {
		t.Fatal(err)
	}
	var f vfs.File
	for i, b := range batches {
		if f == nil || split(i) {
			if f != nil {
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}
			var err error
			if f, err = fsys.Create(filepath.Join("/log", layout.FileName(b.BaseOffset(), layout.LogSuffix))); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir("/log"); err != nil {
		t.Fatal(err)
	}
}
