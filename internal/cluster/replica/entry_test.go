package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestControlEntryRoundTrip: raft's own entries come back whole from
// their control batch: type, data and extensions byte-exact (nil and
// empty alike), AppendedAt to the millisecond, and a zero AppendedAt
// stays zero.
func TestControlEntryRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 4, 18, 0, 0, 123_456_789, time.UTC)
	for _, l := range []*raft.Log{
		{Index: 1, Term: 3, Type: raft.LogNoop},
		{Index: 1, Term: 3, Type: raft.LogBarrier, AppendedAt: at},
		{Index: 1, Term: 3, Type: raft.LogConfiguration, Data: []byte("conf"), Extensions: []byte{0, 1, 2}, AppendedAt: at},
		{Index: 1, Term: 3, Type: raft.LogType(200), Data: bytes.Repeat([]byte("x"), 5000)},
	} {
		b, _, err := buildControl(record.NewBuilder(record.None), l, nil)
		if err != nil {
			t.Fatal(err)
		}
		b.SetPartitionLeaderEpoch(3)
		var got raft.Log
		if err := decodeEntry(b, 1, &got); err != nil {
			t.Fatal(err)
		}
		want := *l
		want.AppendedAt = l.AppendedAt.Truncate(time.Millisecond)
		if got.Type != want.Type || got.Term != 3 || !bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) || got.AppendedAt.IsZero() != l.AppendedAt.IsZero() {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
}

// TestBadValues: a malformed entry value is refused with a reason, and
// never makes the decoder allocate by a length it holds.
func TestBadValues(t *testing.T) {
	good := func() []byte {
		v := binary.BigEndian.AppendUint16(nil, entryVersion)
		v = append(v, byte(raft.LogNoop))
		v = binary.BigEndian.AppendUint32(v, 2)
		v = append(v, "ab"...)
		return binary.BigEndian.AppendUint32(v, 0)
	}
	var l raft.Log
	if err := decodeValue(good(), &l); err != nil || string(l.Data) != "ab" {
		t.Fatalf("good value: %v %q", err, l.Data)
	}
	for name, mutate := range map[string]func([]byte) []byte{
		"short":             func(v []byte) []byte { return v[:5] },
		"newer version":     func(v []byte) []byte { v[1] = 1; return v },
		"a command":         func(v []byte) []byte { v[2] = byte(raft.LogCommand); return v },
		"data past the end": func(v []byte) []byte { binary.BigEndian.PutUint32(v[3:], 1<<31); return v },
		"cut in extensions": func(v []byte) []byte { return v[:len(v)-1] },
		"trailing bytes":    func(v []byte) []byte { return append(v, 0) },
	} {
		if err := decodeValue(mutate(good()), &l); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzDecodeValue: any value is decoded or refused, never a panic, and
// what decodes re-encodes to the same bytes.
func FuzzDecodeValue(f *testing.F) {
	b, _, _ := buildControl(record.NewBuilder(record.None), &raft.Log{Type: raft.LogConfiguration, Data: []byte("c"), Extensions: []byte("e")}, nil)
	for r := range b.Records() {
		f.Add(bytes.Clone(r.Value))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		var l raft.Log
		if decodeValue(v, &l) != nil {
			return
		}
		b, _, err := buildControl(record.NewBuilder(record.None), &l, nil)
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

// TestRefusedEntries: what StoreLogs refuses, with nothing written.
func TestRefusedEntries(t *testing.T) {
	s, err := Open("/data/t-0", Options{FS: vfs.NewMem(), SegmentBytes: testSegmentBytes, MaxBatchBytes: 512, Logger: quiet, maxIndexBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cmd := func(data []byte) *raft.Log { return &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: data} }
	ctrl := producerBatch(t, 1, 1, 0)
	record.Batch(ctrl).SetPartitionLeaderEpoch(0)
	bld := record.NewBuilder(record.None)
	bld.SetControl(true)
	if err := bld.Add(record.Record{Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	control, _ := bld.Build()
	// A batch whose CRC is right but whose first record's length is not:
	// only the record walk finds it.
	walk := producerBatch(t, 1, 2, 0)
	walk[record.HeaderSize] += 2
	binary.BigEndian.PutUint32(walk[17:], record.Batch(walk).ComputeCRC())
	delta := producerBatch(t, 1, 2, 0)
	binary.BigEndian.PutUint32(delta[23:], 5) // lastOffsetDelta
	binary.BigEndian.PutUint32(delta[17:], record.Batch(delta).ComputeCRC())
	for name, l := range map[string]*raft.Log{
		"index 0":                {Index: 0, Term: 1, Type: raft.LogNoop},
		"term past int32":        {Index: 1, Term: 1 << 31, Type: raft.LogNoop},
		"control entry too big":  {Index: 1, Term: 1, Type: raft.LogConfiguration, Data: make([]byte, 600)},
		"command too big":        cmd(producerBatch(t, 1, 40, 0)),
		"command not a batch":    cmd([]byte("hello")),
		"command a control":      cmd(bytes.Clone(control)),
		"command bad delta":      cmd(delta),
		"command with ext":       {Index: 1, Term: 1, Type: raft.LogCommand, Data: ctrl, Extensions: []byte("x")},
		"command of no bytes":    cmd(nil),
		"command cut short":      cmd(ctrl[:len(ctrl)-1]),
		"command with a tail on": cmd(append(bytes.Clone(ctrl), 0)),
		"command records bad":    cmd(walk),
	} {
		if err := s.StoreLogs([]*raft.Log{l}); !errors.Is(err, ErrBadEntry) {
			t.Errorf("%s: %v, want ErrBadEntry", name, err)
		}
	}
	if s.Log().EndOffset() != 0 {
		t.Fatalf("refused entries moved the end to %d", s.Log().EndOffset())
	}
	if first, _ := s.FirstIndex(); first != 0 {
		t.Fatalf("first index %d after refusals", first)
	}
	// Nothing of a refused call stays, not even its epoch.
	checkEpochs(t, "after refusals", s.fs, s)
	// A call whose last entry only the record walk refuses stores none.
	good := entries(t, 1, 2, 1)
	bad := &raft.Log{Index: 3, Term: 2, Type: raft.LogCommand, Data: walk}
	if err := s.StoreLogs(append(good, bad)); !errors.Is(err, ErrBadEntry) || !errors.Is(err, seglog.ErrCorruptBatch) {
		t.Fatalf("a bad record in the last entry: %v", err)
	}
	if last, _ := s.LastIndex(); last != 0 || s.Log().EndOffset() != 0 {
		t.Fatalf("last index %d, end %d after a refused call", last, s.Log().EndOffset())
	}
	checkEpochs(t, "after a refused call", s.fs, s)
}

// TestForeignControlBatch: a control batch that is not one of raft's
// entries (a transaction marker, which no replica store writes) where an
// entry should be is damage, not an entry.
func TestForeignControlBatch(t *testing.T) {
	fs := vfs.NewMem()
	l, err := seglog.Open("/data/t-0", seglog.Options{FS: fs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
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
	defer s.Close()
	var e raft.Log
	if err := s.GetLog(1, &e); !errors.Is(err, ErrNotAnEntry) || !errors.Is(err, seglog.ErrCorrupt) {
		t.Fatalf("GetLog of a marker: %v", err)
	}
}

// TestBadIndexCheckpoint: a raft-index checkpoint that is malformed, or
// whose anchors go back, is refused at Open: it is the one record of which
// batch is which entry.
func TestBadIndexCheckpoint(t *testing.T) {
	for name, text := range map[string]string{
		"malformed":         "0\n1\nx 0\n",
		"index 0":           "0\n1\n0 0\n",
		"indexes go back":   "0\n2\n5 0\n4 10\n",
		"offsets too close": "0\n2\n5 0\n10 3\n",
	} {
		fs := vfs.NewMem()
		s := openT(t, fs, "/data/t-0")
		if err := s.StoreLogs(entries(t, 5, 15, 1)); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := vfs.WriteFileAtomic(fs, filepath.Join("/data/t-0", layout.RaftIndexFile), []byte(text)); err != nil {
			t.Fatal(err)
		}
		_, err := Open("/data/t-0", Options{FS: fs, Logger: quiet})
		if !errors.Is(err, layout.ErrBadCheckpoint) {
			t.Errorf("%s: %v, want layout.ErrBadCheckpoint", name, err)
		}
	}
}
