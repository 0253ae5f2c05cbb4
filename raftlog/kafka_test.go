package raftlog

import (
	"encoding/binary"
	"hash/crc32"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/kmsgtest"
	"github.com/seglog/seglog/vfs"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkKafkaDecode reads a Store's segment files with franz-go's kmsg, as
// a Kafka tool would, and checks that every entry the Store serves is
// there, in offset order, with its term as the partition leader epoch and
// its fields in the value and headers.
func checkKafkaDecode(t *testing.T, dir string) {
	t.Helper()
	s, err := Open(dir, Options{Logger: quiet, SegmentBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	part := filepath.Join(dir, PartitionDir)
	names, err := vfs.Default.List(part)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	next := first
	for _, name := range names {
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		data, err := vfs.ReadFileLimit(vfs.Default, filepath.Join(part, name), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for pos := 0; pos < len(data); {
			if len(data)-pos < 12 {
				t.Fatalf("%s: %d stray bytes at %d", name, len(data)-pos, pos)
			}
			size := 12 + int(binary.BigEndian.Uint32(data[pos+8:]))
			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(data[pos : pos+size]); err != nil {
				t.Fatalf("%s at %d: kmsg: %v", name, pos, err)
			}
			if uint32(kb.CRC) != crc32.Checksum(data[pos+21:pos+size], castagnoli) {
				t.Fatalf("%s at %d: CRC mismatch", name, pos)
			}
			recs, err := kmsgtest.Records(kb.Records)
			if err != nil {
				t.Fatal(err)
			}
			for _, kr := range recs {
				index := toIndex(kb.FirstOffset + int64(kr.OffsetDelta))
				if index < first {
					continue // below the log start: compacted away
				}
				if index != next {
					t.Fatalf("%s: Kafka offset %d after index %d", name, index-1, next-1)
				}
				var want raft.Log
				if err := s.GetLog(index, &want); err != nil {
					t.Fatalf("GetLog(%d): %v", index, err)
				}
				got := raft.Log{Index: index, Term: uint64(kb.PartitionLeaderEpoch), Data: kr.Value}
				for _, h := range kr.Headers {
					switch h.Key {
					case hdrType:
						got.Type = raft.LogType(h.Value[0])
					case hdrExt:
						got.Extensions = h.Value
					case hdrAt:
						got.AppendedAt = time.Unix(int64(binary.BigEndian.Uint64(h.Value)), int64(binary.BigEndian.Uint32(h.Value[8:])))
					}
				}
				if !sameLog(&got, &want) {
					t.Fatalf("index %d via kmsg %+v, Store %+v", index, got, want)
				}
				next++
			}
			pos += size
		}
	}
	if last > 0 && next != last+1 {
		t.Fatalf("kmsg found entries up to %d, Store's last is %d", next-1, last)
	}
}
