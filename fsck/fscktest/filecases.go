package fscktest

import (
	"encoding/binary"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/record"
)

// fileCases damage everything but the batches: indexes, leftovers of
// interrupted operations, checkpoints, names and metadata.
func fileCases() []Case {
	return []Case{
		{Name: "index missing", Kind: fsck.KindIndexMissing, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.idx(d.Logs[1])
			d.remove(name)
			return none(name, 0)
		}},
		{Name: "timeindex missing", Kind: fsck.KindIndexMissing, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.tidx(d.lastLog())
			d.remove(name)
			return none(name, 0)
		}},
		{Name: "index size", Kind: fsck.KindIndexSize, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.idx(d.Logs[0])
			data := d.Read(name)
			d.Write(name, append(data, 1, 2, 3))
			return none(name, int64(len(data)))
		}},
		{Name: "index entry wrong offset", Kind: fsck.KindIndexEntry, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.idx(d.Logs[0])
			data := d.Read(name)
			// The second entry names the offset just after the first's,
			// which lies in an earlier batch than the one it points at.
			binary.BigEndian.PutUint32(data[8:], binary.BigEndian.Uint32(data)+1)
			d.Write(name, data)
			return none(name, 8)
		}},
		{Name: "index entry wrong position", Kind: fsck.KindIndexEntry, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.idx(d.Logs[0])
			data := d.Read(name)
			binary.BigEndian.PutUint32(data[4:], binary.BigEndian.Uint32(data[4:])+1)
			d.Write(name, data)
			return none(name, 0)
		}},
		{Name: "index order", Kind: fsck.KindIndexOrder, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.idx(d.Logs[0])
			data := d.Read(name)
			copy(data[8:16], data[0:8])
			d.Write(name, data)
			return none(name, 8)
		}},
		{Name: "index contains rule", Kind: fsck.KindIndexContains, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.idx(d.Logs[0])
			data := d.Read(name)
			rel := binary.BigEndian.Uint32(data)
			binary.BigEndian.PutUint32(data, rel-1) // still inside the 5-record batch
			d.Write(name, data)
			return none(name, 0)
		}},
		{Name: "index entry of a multi-batch append", Kind: fsck.KindIndexContains, Inject: func(t testing.TB, d *Dir) Damage {
			// Kafka 3.x indexed a follower's append of several batches by
			// the append's last offset and its first batch's position.
			name := d.idx(d.Logs[0])
			data := d.Read(name)
			log := d.Orig[d.Logs[0]]
			p0 := int64(binary.BigEndian.Uint32(data[4:]))
			p1 := int64(binary.BigEndian.Uint32(data[12:]))
			starts := BatchStarts(t, log)
			for k, p := range starts {
				if p == p0 && starts[k+1] < p1 {
					next := record.Batch(log[starts[k+1]:])
					binary.BigEndian.PutUint32(data, uint32(next.LastOffset())) // segment 0: relative = absolute
					d.Write(name, data)
					return none(name, 0)
				}
			}
			t.Fatal("no two batches between the first two index entries")
			return Damage{}
		}},
		{Name: "index untrimmed", Kind: fsck.KindIndexTrim, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.idx(d.Logs[0])
			data := d.Read(name)
			d.Write(name, append(data, make([]byte, 64)...))
			return none(name, int64(len(data)))
		}},
		{Name: "timeindex order", Kind: fsck.KindIndexOrder, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.tidx(d.Logs[0])
			data := d.Read(name)
			binary.BigEndian.PutUint64(data[12:], binary.BigEndian.Uint64(data)-5)
			d.Write(name, data)
			return none(name, 12)
		}},
		{Name: "timeindex not the running max", Kind: fsck.KindIndexEntry, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.tidx(d.Logs[0])
			data := d.Read(name)
			binary.BigEndian.PutUint64(data, binary.BigEndian.Uint64(data)+1)
			d.Write(name, data)
			return none(name, 0)
		}},
		{Name: "timeindex last entry", Kind: fsck.KindIndexLast, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.tidx(d.Logs[0])
			data := d.Read(name)
			d.Write(name, data[:len(data)-12])
			return none(name, int64(len(data)-24))
		}},
		{Name: "leftover deleted", Kind: fsck.KindLeftover, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.Logs[0] + ".deleted"
			d.Write(name, []byte("old"))
			return none(name, 0)
		}},
		{Name: "leftover cleaned", Kind: fsck.KindLeftover, Inject: func(t testing.TB, d *Dir) Damage {
			name := d.Logs[0] + ".cleaned"
			d.Write(name, d.Read(d.Logs[0]))
			return none(name, 0)
		}},
		{Name: "leftover swap", Kind: fsck.KindLeftover, Inject: func(t testing.TB, d *Dir) Damage {
			// A finished compaction output for segment 0 waiting to be
			// renamed: a copy of the segment.
			name := d.Logs[0] + ".swap"
			d.Write(name, d.Read(d.Logs[0]))
			return none(name, 0)
		}},
		{Name: "leftover tmp", Kind: fsck.KindLeftover, Inject: func(t testing.TB, d *Dir) Damage {
			name := "recovery-point-offset-checkpoint.tmp"
			d.Write(name, []byte("0\n1\n"))
			return none(name, 0)
		}},
		{Name: "orphan index", Kind: fsck.KindOrphanIndex, Inject: func(t testing.TB, d *Dir) Damage {
			name := segName(99_999, ".timeindex")
			d.Write(name, make([]byte, 12))
			return none(name, 0)
		}},
		{Name: "recovery point beyond end", Kind: fsck.KindMissingData, Unfixable: true, Inject: func(t testing.TB, d *Dir) Damage {
			d.Write("recovery-point-offset-checkpoint", []byte("0\n1\np 0 123456\n"))
			return none("recovery-point-offset-checkpoint", 4)
		}},
		{Name: "malformed checkpoint", Kind: fsck.KindCheckpoint, Refused: true, Inject: func(t testing.TB, d *Dir) Damage {
			d.Write("log-start-offset-checkpoint", []byte("0\n1\np zero 0\n"))
			return none("log-start-offset-checkpoint", 4)
		}},
		{Name: "bad segment name", Kind: fsck.KindSegmentName, Unfixable: true, Inject: func(t testing.TB, d *Dir) Damage {
			d.Write("123.log", nil)
			return none("123.log", 0)
		}},
		{Name: "corrupt snapshot", Kind: fsck.KindSnapshot, Inject: func(t testing.TB, d *Dir) Damage {
			name := segName(100, ".snapshot")
			d.Write(name, []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
			return none(name, 2)
		}},
		{Name: "bad partition.metadata", Kind: fsck.KindMetadata, Unfixable: true, Inject: func(t testing.TB, d *Dir) Damage {
			d.Write("partition.metadata", []byte("version: 0\ntopic_id: nope\n"))
			return none("partition.metadata", 0)
		}},
	}
}
