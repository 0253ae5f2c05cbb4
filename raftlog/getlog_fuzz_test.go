package raftlog

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// FuzzEntryTable: for any bytes passing as a stored batch (framing and CRC
// fixed), buildTable never panics, and each record it locates, read alone
// behind its stand-in header, decodes to exactly the entry decodeBatch
// gives; the same record with one byte changed (as damage after the table
// was built) decodes to an error of ErrCorrupt or ErrBadEntry, or to an
// entry with the index asked for, never another index and never a panic.
func FuzzEntryTable(f *testing.F) {
	fs := vfs.NewMem()
	s, err := Open("/r", Options{FS: fs})
	if err != nil {
		f.Fatal(err)
	}
	if err := s.StoreLogs(entries(1, 12, 3)); err != nil {
		f.Fatal(err)
	}
	b, err := s.readBatch(0)
	if err != nil {
		f.Fatal(err)
	}
	s.Close()
	f.Add([]byte(b), uint16(70), byte(0xff))
	f.Add([]byte(b), uint16(64), byte(0x01))
	f.Add([]byte{}, uint16(0), byte(0))
	f.Fuzz(func(t *testing.T, data []byte, at uint16, val byte) {
		if len(data) > 1<<16 {
			return
		}
		b := fixBatch(data)
		tbl := buildTable(b)
		if tbl == nil {
			return
		}
		want, err := decodeBatch(b)
		if err != nil {
			// A batch the whole decoder refuses may still be located
			// (buildTable reads lengths only): reading it alone must not
			// panic, which the loop below checks.
			want = nil
		}
		for i := range int64(len(tbl.pos) - 1) {
			rec := b[tbl.pos[i]:tbl.pos[i+1]]
			buf := append(make([]byte, record.HeaderSize), rec...)
			var l raft.Log
			err := decodeOne(tbl.standIn(buf, i), tbl.base+i, &l)
			if want != nil && (err != nil || !sameLog(&l, &want[i])) {
				t.Fatalf("record %d alone: %+v, %v; in its batch %+v", i, l, err, want[i])
			}
			buf = append(make([]byte, record.HeaderSize), rec...)
			buf[record.HeaderSize+int(at)%len(rec)] ^= val | 1
			l = raft.Log{}
			err = decodeOne(tbl.standIn(buf, i), tbl.base+i, &l)
			switch {
			case err != nil:
				if !errors.Is(err, record.ErrCorrupt) && !errors.Is(err, ErrBadEntry) {
					t.Fatalf("damaged record %d: untyped error %v", i, err)
				}
			case l.Index != toIndex(tbl.base+i):
				t.Fatalf("damaged record %d decoded as index %d", i, l.Index)
			}
		}
	})
}
