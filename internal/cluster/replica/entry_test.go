package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// TestControlEntryRoundTrip: raft's own entries come back whole from
// their control batch: type, data byte-exact, and the size raft counts.
func TestControlEntryRoundTrip(t *testing.T) {
	for _, e := range []*pb.Entry{
		{Index: new(uint64(1)), Term: new(uint64(3))},
		{Index: new(uint64(1)), Term: new(uint64(3)), Type: pb.EntryConfChange.Enum(), Data: []byte("conf")},
		{Index: new(uint64(1)), Term: new(uint64(3)), Type: pb.EntryConfChangeV2.Enum(), Data: bytes.Repeat([]byte("x"), 5000)},
	} {
		b, _, err := buildControl(record.NewBuilder(record.None), e, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.SetPartitionLeaderEpoch(3)
		got, err := decodeEntry(b, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, e) {
			t.Fatalf("got %v, want %v", got, e)
		}
	}
}

// TestBadValues: a malformed entry value is refused with a reason.
func TestBadValues(t *testing.T) {
	good := func() []byte {
		v := binary.BigEndian.AppendUint16(nil, entryVersion)
		v = append(v, byte(pb.EntryConfChange))
		return append(v, "ab"...)
	}
	var e pb.Entry
	if err := decodeValue(good(), &e); err != nil || string(e.GetData()) != "ab" {
		t.Fatalf("good value: %v %q", err, e.GetData())
	}
	for name, mutate := range map[string]func([]byte) []byte{
		"short":              func(v []byte) []byte { return v[:2] },
		"other version":      func(v []byte) []byte { v[1] = 9; return v },
		"normal with data":   func(v []byte) []byte { v[2] = byte(pb.EntryNormal); return v },
		"unknown entry type": func(v []byte) []byte { v[2] = 200; return v },
	} {
		if err := decodeValue(mutate(good()), &pb.Entry{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzDecodeValue: any value is decoded or refused, never a panic, and
// what decodes re-encodes to the same bytes.
func FuzzDecodeValue(f *testing.F) {
	b, _, _ := buildControl(record.NewBuilder(record.None), &pb.Entry{Type: pb.EntryConfChange.Enum(), Data: []byte("c")}, nil)
	for r := range b.Records() {
		f.Add(bytes.Clone(r.Value))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		var e pb.Entry
		if decodeValue(v, &e) != nil {
			return
		}
		b, _, err := buildControl(record.NewBuilder(record.None), &e, nil)
		if err != nil {
			t.Fatal(err)
		}
		for r := range b.Records() {
			if !bytes.Equal(r.Value, v) {
				t.Fatalf("re-encoded %x, was %x", r.Value, v)
			}
		}
	})
}

// openLimited opens a Store on a fresh partition whose MaxBatchBytes is
// 512.
func openLimited(t *testing.T) *Store {
	t.Helper()
	fs := vfs.NewMem()
	s, err := Open(openLog(t, fs, "/data/t-0"), Options{FS: fs, MaxBatchBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEntriesAboveMaxBatchBytes: a producer's batch and a raft entry
// larger than the partition's MaxBatchBytes are stored: the limit bounds
// what a producer appends, which the proposing leader checked, and a
// replica refusing an entry refuses it at every retry.
func TestEntriesAboveMaxBatchBytes(t *testing.T) {
	s := openLimited(t)
	defer func() { closeT(t, s) }()
	big := producerBatch(t, 1, 40)
	if len(big) <= 512 {
		t.Fatalf("a batch of %d bytes is not above the limit", len(big))
	}
	ents := []*pb.Entry{
		{Index: new(uint64(1)), Term: new(uint64(1)), Data: big},
		{Index: new(uint64(2)), Term: new(uint64(1)), Type: pb.EntryConfChange.Enum(), Data: make([]byte, 600)},
	}
	if err := s.Append(ents); err != nil {
		t.Fatalf("entries above MaxBatchBytes: %v", err)
	}
	if last, _ := s.LastIndex(); last != 2 {
		t.Fatalf("last index %d, want 2", last)
	}
}

// TestRefusedEntries: what Append refuses, with nothing written.
func TestRefusedEntries(t *testing.T) {
	s := openLimited(t)
	defer func() { closeT(t, s) }()
	prod := func(data []byte) *pb.Entry { return &pb.Entry{Index: new(uint64(1)), Term: new(uint64(1)), Data: data} }
	ctrl := producerBatch(t, 1, 1)
	bld := record.NewBuilder(record.None)
	bld.SetControl(true)
	if err := bld.Add(record.Record{Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	control, _ := bld.Build()
	// A batch whose CRC is right but whose first record's length is not:
	// only the record walk finds it.
	walk := producerBatch(t, 1, 2)
	walk[record.HeaderSize] += 2
	binary.BigEndian.PutUint32(walk[17:], record.Batch(walk).ComputeCRC())
	delta := producerBatch(t, 1, 2)
	binary.BigEndian.PutUint32(delta[23:], 5) // lastOffsetDelta
	binary.BigEndian.PutUint32(delta[17:], record.Batch(delta).ComputeCRC())
	for name, e := range map[string]*pb.Entry{
		"index 0":                {Index: new(uint64(0)), Term: new(uint64(1))},
		"term past int32":        {Index: new(uint64(1)), Term: new(uint64(1 << 31))},
		"not a batch":            prod([]byte("hello")),
		"a control batch":        prod(bytes.Clone(control)),
		"bad delta":              prod(delta),
		"batch cut short":        prod(ctrl[:len(ctrl)-1]),
		"batch with a tail on":   prod(append(bytes.Clone(ctrl), 0)),
		"batch with bad records": prod(walk),
	} {
		if err := s.Append([]*pb.Entry{e}); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: %v, want ErrBadEntry", name, err)
		}
	}
	if s.Log().EndOffset() != 0 {
		t.Fatalf("refused entries moved the end to %d", s.Log().EndOffset())
	}
	if last, _ := s.LastIndex(); last != 0 {
		t.Fatalf("last index %d after refusals", last)
	}
	// Nothing of a refused call stays, not even its epoch.
	checkEpochs(t, "after refusals", s.fs, s)
	// A call whose last entry only the record walk refuses stores none.
	good := entries(t, 1, 2, 1)
	bad := &pb.Entry{Index: new(uint64(3)), Term: new(uint64(2)), Data: walk}
	if err := s.Append(append(good, bad)); !errors.Is(err, ErrBadEntry) || !errors.Is(err, seglog.ErrCorruptBatch) {
		t.Fatalf("a bad record in the last entry: %v", err)
	}
	if last, _ := s.LastIndex(); last != 0 || s.Log().EndOffset() != 0 {
		t.Fatalf("last index %d, end %d after a refused call", last, s.Log().EndOffset())
	}
	checkEpochs(t, "after a refused call", s.fs, s)
	// A gap after the last entry is refused too.
	if err := s.Append(entries(t, 5, 6, 1)); !errors.Is(err, ErrBadEntry) {
		t.Fatalf("entries after a gap: %v", err)
	}
}

// TestForeignControlBatch: a control batch that is not one of raft's
// entries (a transaction marker, which no replica store writes) where an
// entry should be is damage, not an entry.
func TestForeignControlBatch(t *testing.T) {
	fs := vfs.NewMem()
	l := openLog(t, fs, "/data/t-0")
	m, err := record.BuildMarker(record.NewBuilder(record.None), record.Marker{Type: record.ControlCommit}, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendEpochBatch(1, bytes.Clone(m)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(fs, filepath.Join("/data/t-0", layout.RaftIndexFile), layout.FormatRaftIndex([]layout.IndexLine{{Index: 1, Offset: 0}})); err != nil {
		t.Fatal(err)
	}
	s := openT(t, fs, "/data/t-0")
	defer closeT(t, s)
	if _, err := s.Entries(1, 2, ^uint64(0)); !errors.Is(err, ErrNotAnEntry) || !errors.Is(err, seglog.ErrCorrupt) {
		t.Fatalf("Entries of a marker: %v", err)
	}
}

// TestBadIndexCheckpoint: a raft-index checkpoint that is malformed, or
// whose anchors go back, is refused at Open: it is the one record of which
// batch is which entry.
func TestBadIndexCheckpoint(t *testing.T) {
	for name, text := range map[string]string{
		"malformed":         "0\n1\nx 0 0\n",
		"index 0":           "0\n1\n0 0 0\n",
		"indexes go back":   "0\n2\n5 0 0\n4 10 0\n",
		"offsets too close": "0\n2\n5 0 0\n10 3 0\n",
		"terms go back":     "0\n2\n5 0 2\n10 30 1\n",
		"term past int32":   "0\n1\n5 0 4294967296\n",
	} {
		fs := vfs.NewMem()
		s := openT(t, fs, "/data/t-0")
		if err := s.Append(entries(t, 1, 15, 1)); err != nil {
			t.Fatal(err)
		}
		closeT(t, s)
		if err := vfs.WriteFileAtomic(fs, filepath.Join("/data/t-0", layout.RaftIndexFile), []byte(text)); err != nil {
			t.Fatal(err)
		}
		l := openLog(t, fs, "/data/t-0")
		_, err := Open(l, Options{FS: fs})
		l.Close()
		if !errors.Is(err, layout.ErrBadCheckpoint) {
			t.Errorf("%s: %v, want layout.ErrBadCheckpoint", name, err)
		}
	}
}

// TestBadStateFile: a damaged raft-state file is refused at Open, naming
// the file and the byte: raft's vote must not be forgotten silently.
func TestBadStateFile(t *testing.T) {
	fs := vfs.NewMem()
	const dir = "/data/t-0"
	s := openT(t, fs, dir)
	if err := s.ApplySnapshot(bootSnap(1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetHardState(&pb.HardState{Term: new(uint64(4)), Vote: new(uint64(2)), Commit: new(uint64(1))}); err != nil {
		t.Fatal(err)
	}
	closeT(t, s)
	path := filepath.Join(dir, layout.RaftStateFile)
	good, err := vfs.ReadFileLimit(fs, path, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeState(path, good); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func([]byte) []byte{
		"empty":       func([]byte) []byte { return nil },
		"cut short":   func(b []byte) []byte { return b[:len(b)-3] },
		"bit flipped": func(b []byte) []byte { b[10] ^= 1; return b },
		"huge count": func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[30:], 1<<31)
			return fixCRC(b)
		},
		"other version": func(b []byte) []byte { b[5] = 9; return fixCRC(b) },
		"trailing byte": func(b []byte) []byte { return fixCRC(append(b[:len(b)-4], 0, 0, 0, 0, 0)) },
		// Version 2 without the install it announces.
		"install missing": func(b []byte) []byte { b[5] = installVersion; return fixCRC(b) },
		"install out of order": func([]byte) []byte {
			return raftState{term: 4, commit: 1, inst: &install{index: 9, term: 4, end: 10, from: 20}}.encode()
		},
		"restart below from": func([]byte) []byte {
			return raftState{term: 4, commit: 1, inst: &install{index: 9, term: 4, end: 30, from: 20, restart: true, start: 20}}.encode()
		},
		"log start past the end": func([]byte) []byte {
			return raftState{term: 4, commit: 1, inst: &install{index: 9, term: 4, end: 30, from: 20, logStart: 31}}.encode()
		},
		// Version 3 says a log start; 0 is written as version 2.
		"log start zero": func([]byte) []byte {
			b := raftState{term: 4, commit: 1, inst: &install{index: 9, term: 4, end: 30, from: 20, logStart: 25}}.encode()
			binary.BigEndian.PutUint64(b[len(b)-12:], 0)
			return fixCRC(b)
		},
	} {
		data := mutate(bytes.Clone(good))
		if err := vfs.WriteFileAtomic(fs, path, data); err != nil {
			t.Fatal(err)
		}
		l := openLog(t, fs, dir)
		_, err := Open(l, Options{FS: fs})
		l.Close()
		if !errors.Is(err, ErrBadState) {
			t.Errorf("%s: %v, want ErrBadState", name, err)
		}
	}
}

// fixCRC recomputes a raft-state file's checksum over what precedes it.
func fixCRC(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.BigEndian.AppendUint32(body, crcOf(body))
}

// FuzzDecodeState: any raft-state file is decoded or refused with
// ErrBadState, never a panic, and what decodes re-encodes to the same
// bytes.
func FuzzDecodeState(f *testing.F) {
	f.Add(raftState{term: 3, vote: 2, commit: 9, conf: conf{voters: []uint64{1, 2, 3}, learners: []uint64{4}}}.encode())
	f.Add(raftState{term: 3, commit: 9, conf: conf{voters: []uint64{1}}, inst: &install{index: 20, term: 3, end: 90, from: 40, restart: true, start: 60, cs: conf{voters: []uint64{1, 2}}}}.encode())
	f.Add(raftState{term: 3, commit: 9, conf: conf{voters: []uint64{1}}, inst: &install{index: 20, term: 3, end: 90, from: 40, restart: true, start: 60, logStart: 61, cs: conf{voters: []uint64{1, 2}}}}.encode())
	f.Add(raftState{}.encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := decodeState("raft-state", data)
		if err != nil {
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("%v, want ErrBadState", err)
			}
			return
		}
		if got := st.encode(); !bytes.Equal(got, data) {
			t.Fatalf("re-encoded %x, was %x", got, data)
		}
	})
}
