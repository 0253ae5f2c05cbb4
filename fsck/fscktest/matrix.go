package fscktest

import (
	"encoding/binary"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/record"
)

// Cases returns the corruption matrix: every kind of damage fsck knows,
// each injected into a fresh copy of the log described above.
func Cases() []Case {
	return append(dataCases(), fileCases()...)
}

// dataCases damage the batches of a .log.
func dataCases() []Case {
	return []Case{
		{Name: "torn tail", Kind: fsck.KindTornTail, SyncedKind: fsck.KindBadLength, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.lastLog()
			p, data := d.batch(l, -1)
			d.Write(l, data[:p+30])
			return d.damaged(l, p)
		}},
		// Zeros to the end of the file are a preallocated file's zero tail,
		// the end of the data (TestZeroTailIsTheEnd); zeros with data after
		// them are damage.
		{Name: "zeros then data", Kind: fsck.KindBadLength, SyncedKind: fsck.KindBadLength, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.lastLog()
			data := d.Read(l)
			d.Write(l, append(append(data, make([]byte, 4096)...), 0x5a))
			return d.damaged(l, int64(len(data)))
		}},
		{Name: "crc at tail", Kind: fsck.KindCRC, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.lastLog()
			p, data := d.batch(l, -1)
			data[p+70] ^= 0x40
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "crc mid-log", Kind: fsck.KindCRC, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[0]
			p, data := d.batch(l, 2)
			data[p+record.HeaderSize+3] ^= 0x01
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "short length mid-log", Kind: fsck.KindBadLength, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[1]
			p, data := d.batch(l, 1)
			binary.BigEndian.PutUint32(data[p+8:], 5)
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "huge length mid-log", Kind: fsck.KindBadLength, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[0]
			p, data := d.batch(l, 1)
			binary.BigEndian.PutUint32(data[p+8:], 0x7fffffff)
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "bad magic", Kind: fsck.KindBadMagic, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[0]
			p, data := d.batch(l, 3)
			data[p+16] = 7
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "unknown codec", Kind: fsck.KindBadHeader, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[0]
			p, data := d.batch(l, 1)
			data[p+22] |= 0x07
			resum(data, p)
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "offsets go backwards", Kind: fsck.KindOffsetOrder, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[0]
			p, data := d.batch(l, 2)
			// The base offset is outside the CRC, so the batch stays valid.
			binary.BigEndian.PutUint64(data[p:], 1)
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "segment below its base offset", Kind: fsck.KindOffsetOrder, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[1]
			p, data := d.batch(l, 0)
			base := record.Batch(data).BaseOffset()
			binary.BigEndian.PutUint64(data[p:], uint64(base-1))
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "offsets reach the next segment", Kind: fsck.KindOffsetRange, Data: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[0]
			p, data := d.batch(l, -1)
			next := d.Read(d.Logs[1])
			binary.BigEndian.PutUint64(data[p:], uint64(record.Batch(next).BaseOffset()))
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "bad record framing (deep)", Kind: fsck.KindBadRecords, Data: true, Deep: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[0]
			p, data := d.batch(l, 1)
			b := record.Batch(data[p:])
			binary.BigEndian.PutUint32(b[57:], uint32(b.NumRecords()+1)) // count one record too many
			resum(data, p)
			d.Write(l, data)
			return d.damaged(l, p)
		}},
		{Name: "record offsets out of order (deep)", Kind: fsck.KindBadRecords, Data: true, Deep: true, Inject: func(t testing.TB, d *Dir) Damage {
			l := d.Logs[0]
			p, data := d.batch(l, 1)
			// Uncompressed record 0: length, attributes, timestamp delta
			// (one byte each here), then the offset delta, zig-zag 0 -> 8
			// (4, above record 1's).
			if data[p+record.HeaderSize+3] != 0 {
				t.Fatalf("unexpected record layout")
			}
			data[p+record.HeaderSize+3] = 8
			resum(data, p)
			d.Write(l, data)
			return d.damaged(l, p)
		}},
	}
}
