package main

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
)

// BenchmarkAppendJSONRecord measures consume --json's formatting of a
// 100-byte record with one header.
func BenchmarkAppendJSONRecord(b *testing.B) {
	r := record.Record{Offset: 123456, Timestamp: 1700000000000, Key: []byte("key-0000001234"),
		Value: bytes.Repeat([]byte("v"), 100), Headers: []record.Header{{Key: "trace", Value: []byte("42")}}}
	b.SetBytes(int64(len(r.Key) + len(r.Value)))
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf = appendJSONRecord(buf[:0], r)
	}
}

// BenchmarkProduceCorpus measures produce --batches of the uncompressed
// corpus into a fresh log, in-process.
func BenchmarkProduceCorpus(b *testing.B) {
	file := filepath.Join(corpusDir, "none.batches")
	b.SetBytes(int64(len(readVFS(b, file))))
	b.ReportAllocs()
	root := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		mustInvoke(b, "", "produce", filepath.Join(root, strconv.Itoa(i)), "--batches", file)
	}
}

// BenchmarkProduceLines measures produce of 10,000 stdin lines of 100
// bytes, 100 per batch.
func BenchmarkProduceLines(b *testing.B) {
	in := strings.Repeat("key-000000\t"+strings.Repeat("v", 89)+"\n", 10000)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	root := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		mustInvoke(b, in, "produce", filepath.Join(root, strconv.Itoa(i)))
	}
}
