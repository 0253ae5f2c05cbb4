package raftlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/crc32c"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// fixBatch makes data look like a stored magic-2 batch the Log would hand
// back: the length field, the magic and the CRC-32C are set to match and
// the codec is none, so the fuzzer explores what lies past the header (the
// record count, the records, their headers) instead of failing the CRC.
func fixBatch(data []byte) record.Batch {
	b := bytes.Clone(data)
	if len(b) < record.HeaderSize {
		return b
	}
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	b[16] = byte(record.CurrentMagic)
	b[22] &^= 0x07 // codec none
	binary.BigEndian.PutUint32(b[17:], crc32c.Checksum(b[21:]))
	return b
}

// allocated runs fn and returns the bytes it allocated. The counter is
// the process's, so a goroutine another test left running could add to
// it: fn, which must be repeatable, is run up to three times and the
// least is kept (an allocation fn makes itself shows in every run).
func allocated(fn func(), limit uint64) uint64 {
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
		if least <= limit {
			break
		}
	}
	return least
}

// fuzzEntries reads raft entries from data: each is a type, a term step,
// an AppendedAt, a commit flag and length-prefixed Data and Extensions
// (lengths bounded by what is left). The terms never decrease and the
// indexes are contiguous from 1+data[0].
type entryReader struct{ data []byte }

func (r *entryReader) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	c := r.data[0]
	r.data = r.data[1:]
	return c
}

func (r *entryReader) u64() uint64 {
	var v uint64
	for range 8 {
		v = v<<8 | uint64(r.byte())
	}
	return v
}

func (r *entryReader) bytes() []byte {
	n := int(r.byte())
	switch {
	case n == 255:
		return nil
	case n > len(r.data):
		n = len(r.data)
	}
	b := r.data[:n:n]
	r.data = r.data[n:]
	return bytes.Clone(b)
}

func fuzzEntries(data []byte) (entries []raft.Log, commit uint64) {
	r := &entryReader{data}
	index := uint64(r.byte())<<32 | uint64(r.byte()) + 1
	term := uint64(r.byte())
	if r.byte()&1 == 1 {
		term = math.MaxInt32 - term
	}
	commit = uint64(r.byte())
	for len(r.data) > 0 && len(entries) < 64 {
		l := raft.Log{Index: index + uint64(len(entries)), Term: term, Type: raft.LogType(r.byte())}
		if flags := r.byte(); flags&1 == 1 {
			sec := int64(r.u64()) % (1 << 40)
			l.AppendedAt = time.Unix(sec, int64(r.u64()%1e9))
		}
		l.Data = r.bytes()
		l.Extensions = r.bytes()
		entries = append(entries, l)
	}
	return entries, commit
}

// FuzzCodec tries to break the raft.Log <-> Kafka record mapping from both
// sides. Arbitrary bytes, as they are and with the framing and CRC fixed
// so that they pass as a stored batch, go through decodeBatch (GetLog's
// decoder) when they pass Validate, as readBatch checks first: it never panics, allocates no more than a small multiple of
// the bytes it was given (a record count or a length field is not an
// allocation size), and each entry it returns has its record's index and
// the batch's epoch as term. Then entries read from the same bytes are
// encoded as the Store writes them, built into a batch, and decoded:
// every field comes back exactly, and the staged commit index with them.
func FuzzCodec(f *testing.F) {
	// Real stored batches: a Store's own segment, as seeds.
	fs := vfs.NewMem()
	s, err := Open("/r", Options{FS: fs})
	if err != nil {
		f.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 123456789)
	logs := []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: []byte("cfg"), AppendedAt: at},
		{Index: 2, Term: 1, Data: []byte("set x=1"), Extensions: []byte("ext")},
		{Index: 3, Term: 1, Type: raft.LogNoop},
		{Index: 4, Term: 3, Data: []byte{}, AppendedAt: at.Add(time.Second)},
	}
	if err := s.StageCommitIndex(2); err != nil {
		f.Fatal(err)
	}
	if err := s.StoreLogs(logs); err != nil {
		f.Fatal(err)
	}
	for _, off := range []int64{0, 3} {
		b, err := s.readBatch(off)
		if err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(b))
		huge := bytes.Clone(b)
		binary.BigEndian.PutUint32(huge[57:], math.MaxInt32) // record count
		f.Add(huge)
	}
	if err := s.Close(); err != nil {
		f.Fatal(err)
	}
	// Real Kafka batches (a Java client's, as a broker stored them), which
	// GetLog would meet in a partition some other tool wrote.
	for _, codec := range []string{"none", "zstd"} {
		data := vfstest.ReadFile(f, vfs.Default, filepath.Join("..", "testdata", "kafka-client", codec+".batches"))
		if size := int(binary.BigEndian.Uint32(data[8:])) + record.LogOverhead; size <= len(data) {
			f.Add(data[:size])
		}
	}
	f.Add([]byte{})
	f.Add(make([]byte, record.HeaderSize))
	f.Add([]byte("\x00\x00\x00\x05\x01\x00\x03\x01\x07data\x03ext"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		for _, b := range []record.Batch{data, fixBatch(data)} {
			if b.Validate() != nil {
				continue
			}
			var entries []raft.Log
			var err error
			// Each entry copies its data and extensions out of b; the
			// rest is the iterator and raft.Log structs (one per record
			// of at least 7 bytes).
			limit := uint64(64*len(b) + 64<<10)
			if n := allocated(func() { entries, err = decodeBatch(b) }, limit); n > limit {
				t.Fatalf("decoding %d bytes allocated %d bytes (limit %d)", len(b), n, limit)
			}
			if err != nil {
				if !errors.Is(err, ErrBadEntry) && !errors.Is(err, record.ErrCorrupt) && !errors.Is(err, record.ErrUnsupportedMagic) {
					t.Fatalf("untyped error: %v", err)
				}
				continue
			}
			var offsets []int64
			for r, err := range b.Records() {
				if err != nil {
					t.Fatalf("decodeBatch took a batch whose records fail: %v", err)
				}
				offsets = append(offsets, r.Offset)
			}
			if len(offsets) != len(entries) {
				t.Fatalf("%d records, %d entries", len(offsets), len(entries))
			}
			for i, l := range entries {
				if l.Index != toIndex(offsets[i]) {
					t.Fatalf("entry %d has index %d for the record at offset %d", i, l.Index, offsets[i])
				}
				if l.Term != uint64(b.PartitionLeaderEpoch()) {
					t.Fatalf("entry %d has term %d in a batch of epoch %d", i, l.Term, b.PartitionLeaderEpoch())
				}
			}
		}

		want, commit := fuzzEntries(data)
		if len(want) == 0 {
			return
		}
		bld := record.NewBuilder(record.None)
		bld.SetBaseOffset(toOffset(want[0].Index))
		bld.SetPartitionLeaderEpoch(int32(want[0].Term))
		var hdrs [4]record.Header
		for i := range want {
			if err := checkEntry(&want[i]); err != nil {
				t.Fatalf("generated entry refused: %v", err)
			}
			c := uint64(0)
			if i == len(want)-1 {
				c = commit
			}
			r := encode(&want[i], c, hdrs[:0], 1)
			if err := bld.AddAt(toOffset(want[i].Index), r.Timestamp, &r); err != nil {
				t.Fatal(err)
			}
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeBatch(b)
		if err != nil {
			t.Fatalf("decoding what was encoded: %v", err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d entries encoded, %d decoded", len(want), len(got))
		}
		for i := range want {
			w, g := want[i], got[i]
			if g.Index != w.Index || g.Term != w.Term || g.Type != w.Type ||
				!bytes.Equal(g.Data, w.Data) || (g.Data == nil) != (w.Data == nil) ||
				!bytes.Equal(g.Extensions, w.Extensions) || !g.AppendedAt.Equal(w.AppendedAt) {
				t.Fatalf("entry %d: encoded %+v, decoded %+v", i, w, g)
			}
		}
		var last record.Record
		for r, err := range b.Records() {
			if err != nil {
				t.Fatal(err)
			}
			last = r.Clone()
		}
		if got := commitOf(last); got != commit {
			t.Fatalf("commit index %d stored, %d read back", commit, got)
		}
	})
}

// TestGetLogOfLyingRecordCount is FuzzCodec's finding through the Store: a
// stored batch whose record count says 2^31-1, with its CRC made to match,
// used to make GetLog size a slice of 2^31 entries and die out of memory.
// Now GetLog fails with the batch's damage, and the batches around it
// still serve.
func TestGetLogOfLyingRecordCount(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open("/r", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	for i, term := range []uint64{1, 2, 3} {
		if err := s.StoreLog(&raft.Log{Index: uint64(i + 1), Term: term, Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	dir := s.log.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	name := dir + "/" + "00000000000000000000.log"
	data := vfstest.ReadFile(t, fs, name)
	first := int(binary.BigEndian.Uint32(data[8:])) + record.LogOverhead
	binary.BigEndian.PutUint32(data[57:], math.MaxInt32)
	copy(data, fixBatch(data[:first]))
	vfstest.WriteFile(t, fs, name, data)

	s, err = Open("/r", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var l raft.Log
	if err := s.GetLog(1, &l); err == nil || !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("GetLog of the lying batch: %v, want a corruption error", err)
	}
	for _, i := range []uint64{2, 3} {
		if err := s.GetLog(i, &l); err != nil || string(l.Data) != "x" || l.Term != i {
			t.Fatalf("GetLog(%d) = %+v, %v", i, l, err)
		}
	}
}
