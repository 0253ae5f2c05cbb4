package fuzz

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/internal/kmsgtest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// corpusLog is a prefix of a real Kafka broker's segment file.
func corpusLog(tb testing.TB, codec string, n int) []byte {
	data := vfstest.ReadFile(tb, vfs.Default, filepath.Join("..", "testdata", "kafka-client", codec+".broker-log"))
	return data[:min(len(data), n)]
}

// dataKinds are the fsck problems that end a .log's valid prefix.
var dataKinds = map[fsck.Kind]bool{
	fsck.KindTornTail: true, fsck.KindBadLength: true, fsck.KindBadMagic: true, fsck.KindCRC: true,
	fsck.KindBadHeader: true, fsck.KindOffsetOrder: true, fsck.KindOffsetRange: true, fsck.KindReadLimit: true,
}

// FuzzRecoveryVsFsck gives the same bytes, as the only segment of a
// directory, to segment recovery and to fsck: they are two independent
// readers of the format and must agree on where the valid prefix ends
// (recovery keeps ValidBytes; fsck's first data problem in the .log is at
// that byte, or it finds none when everything is kept), and on what recovery
// cuts: a valid batch fsck finds there must have been kept in a quarantine
// file, and a quarantine file must hold a valid entry.
func FuzzRecoveryVsFsck(f *testing.F) {
	for _, codec := range []string{"none", "zstd", "gzip"} {
		data := corpusLog(f, codec, 20000)
		f.Add(data)
		f.Add(data[:len(data)/3])
		damaged := bytes.Clone(data)
		damaged[len(damaged)/2] ^= 0x40
		f.Add(damaged)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 61))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		name := segment.FileName(0, segment.LogSuffix)
		// fsck first: it must not change the bytes recovery then sees.
		fsys := vfs.NewMem()
		if err := fsys.MkdirAll("/p"); err != nil {
			t.Fatal(err)
		}
		writeBytes(t, fsys, "/p/"+name, data)
		rep, err := fsck.Check(fsys, "/p", fsck.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fsckEnd := int64(len(data))
		for _, p := range rep.Problems {
			if p.File == name && dataKinds[p.Kind] && p.Position < fsckEnd {
				fsckEnd = p.Position
			}
		}
		s, err := segment.Open(fsys, "/p", 0, false, segment.Options{IndexIntervalBytes: 256, MaxIndexBytes: 4096, MaxBatchBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.Recover(segment.RecoverOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A zero tail (all zeros from a batch boundary to the end: an
		// untrimmed preallocated file) is the end of the data for both:
		// recovery cuts it, fsck accepts it without a problem.
		if kept := res.ValidBytes + res.ZeroTailBytes; kept != fsckEnd {
			t.Fatalf("recovery keeps %d bytes and a zero tail of %d (%v), fsck's first data problem is at %d:\n%v",
				res.ValidBytes, res.ZeroTailBytes, res.Reason, fsckEnd, rep.Problems)
		}
		// What recovery cuts is a torn tail only if no valid batch is in
		// it: fsck's scanner finding one there means recovery must have
		// kept the bytes in a quarantine file; and a quarantine recovery
		// made (short of giving up on its scan bound) holds an entry an
		// independent check of every position accepts.
		if res.Reason == nil {
			return
		}
		cut := data[res.ValidBytes:]
		if fsckFindsBatch(cut) && res.Quarantine == nil {
			t.Fatalf("fsck finds a valid batch in the %d bytes recovery cut at %d, and recovery kept no quarantine (%+v)", len(cut), res.ValidBytes, res.AfterDamage)
		}
		if q := res.Quarantine; q != nil {
			if got := vfstest.ReadFile(t, fsys, q.File); !bytes.Equal(got, cut) {
				t.Fatalf("the quarantine file does not hold the cut bytes")
			}
			if !q.Unsure && len(cut) <= 256<<10 && !anyValidEntry(cut) {
				t.Fatalf("recovery kept %d bytes at %d in quarantine (%+v), no position in them starts a valid entry", len(cut), res.ValidBytes, q.Remnant)
			}
		}
	})
}

// fsckFindsBatch reports whether fsck's scanner, taking any offsets,
// finds a valid v2 batch in b.
func fsckFindsBatch(b []byte) bool {
	sc := fsck.NewScanner(bytes.NewReader(b), int64(len(b)), 0)
	sc.SetMinOffset(math.MinInt64)
	for {
		e, ok, err := sc.Next()
		if err != nil || !ok {
			return false
		}
		if !e.Damaged() && e.Magic == record.CurrentMagic {
			return true
		}
	}
}

// anyValidEntry reports whether some position of b starts an entry with a
// legal length that fits, a known magic and a valid checksum: a v2 batch
// record.Batch.Validate accepts, or a v0/v1 message whose CRC-32 holds.
func anyValidEntry(b []byte) bool {
	for q := 0; q+record.PeekSize <= len(b); q++ {
		size, magic, err := record.PeekEntry(b[q:])
		if err != nil || size > len(b)-q {
			continue
		}
		e := b[q : q+size]
		if magic == record.CurrentMagic {
			if record.Batch(e).Validate() == nil {
				return true
			}
		} else if crc32.ChecksumIEEE(e[record.MagicOffset:]) == binary.BigEndian.Uint32(e[record.LogOverhead:]) {
			return true
		}
	}
	return false
}

// FuzzBatchKmsg parses the same bytes with record.Batch and with
// franz-go's kmsg, an independent implementation of the Kafka v2 batch:
// when this package accepts a batch (CRC and all), kmsg must read the
// same header fields and the same records (offset, timestamp, key, value,
// headers) for uncompressed batches.
func FuzzBatchKmsg(f *testing.F) {
	for _, codec := range []string{"none", "gzip", "zstd"} {
		data := corpusLog(f, codec, 1<<15) // whole first batches (up to ~14 KB)
		f.Add(data)
		if len(data) > 12 {
			size := 12 + int(binary.BigEndian.Uint32(data[8:]))
			f.Add(data[:min(size, len(data))])
		}
	}
	bld := record.NewBuilder(record.None)
	bld.SetBaseOffset(7)
	// Headers differ from record to record, so that records kept past the
	// iteration without a copy (the iterator reuses its header slice) show.
	for i := range 5 {
		r := record.Record{Key: []byte{byte(i)}, Value: bytes.Repeat([]byte{'v'}, i), Headers: []record.Header{{Key: "h", Value: []byte{byte('a' + i)}}}}
		if err := bld.AddAt(7+int64(i), 1_700_000_000_000+int64(i), &r); err != nil {
			f.Fatal(err)
		}
	}
	b, err := bld.Build()
	if err != nil || b.NumRecords() != 5 {
		f.Fatalf("seed batch: %d records, %v", b.NumRecords(), err)
	}
	f.Add([]byte(b))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < record.HeaderSize {
			return
		}
		size, _, err := record.PeekEntry(data)
		if err != nil || size > len(data) {
			return
		}
		b := record.Batch(data[:size])
		if b.Validate() != nil {
			return
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(data[:size]); err != nil {
			t.Fatalf("a batch record.Batch accepts, kmsg rejects: %v", err)
		}
		if kb.FirstOffset != b.BaseOffset() || kb.PartitionLeaderEpoch != b.PartitionLeaderEpoch() || kb.Magic != b.Magic() ||
			uint32(kb.CRC) != b.CRC() || kb.Attributes != b.Attributes() || kb.LastOffsetDelta != b.LastOffsetDelta() ||
			kb.FirstTimestamp != b.BaseTimestamp() || kb.MaxTimestamp != b.MaxTimestamp() || kb.ProducerID != b.ProducerID() ||
			kb.ProducerEpoch != b.ProducerEpoch() || kb.FirstSequence != b.BaseSequence() || kb.NumRecords != b.NumRecords() {
			t.Fatalf("header fields differ: kmsg %+v", kb)
		}
		if b.Codec() != record.None {
			return
		}
		var ours []record.Record
		for r, err := range b.Records() {
			if err != nil {
				return // framing damage under a valid CRC: kmsg's lenient decoding is no oracle
			}
			ours = append(ours, r.Clone())
		}
		theirs, err := kmsgtest.Records(kb.Records)
		if err != nil {
			t.Fatalf("we decode %d records, kmsg: %v", len(ours), err)
		}
		if len(ours) != len(theirs) {
			t.Fatalf("%d records, kmsg %d", len(ours), len(theirs))
		}
		for i, r := range ours {
			k := theirs[i]
			if r.Offset != b.BaseOffset()+int64(k.OffsetDelta) || r.Timestamp != b.BaseTimestamp()+k.TimestampDelta64 ||
				!bytes.Equal(r.Key, k.Key) || !bytes.Equal(r.Value, k.Value) || (r.Key == nil) != (k.Key == nil) ||
				(r.Value == nil) != (k.Value == nil) || len(r.Headers) != len(k.Headers) {
				t.Fatalf("record %d differs: ours %+v, kmsg %+v", i, r, k)
			}
			for j, h := range r.Headers {
				if h.Key != k.Headers[j].Key || !bytes.Equal(h.Value, k.Headers[j].Value) {
					t.Fatalf("record %d header %d differs", i, j)
				}
			}
		}
	})
}

func writeBytes(t *testing.T, fsys vfs.FS, path string, data []byte) {
	t.Helper()
	w, err := fsys.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
