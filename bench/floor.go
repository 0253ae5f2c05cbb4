package bench

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// Floors are the write baselines WriteConfig.Floor selects. Each is the
// least a writer of the same records can do with one system call per
// append call; they differ in what they write and in how the file's blocks
// are allocated:
//
//   - FloorPlain appends the pre-built batches to a growing file: the
//     filesystem allocates blocks as the file grows (and, with fsync, each
//     fdatasync commits a new size).
//   - FloorReserved builds each batch from the call's records as the
//     engine does (framing, varints, CRC-32C) and pwrites it into blocks
//     reserved ahead with fallocate(KEEP_SIZE), the trick the engine's
//     Options-independent block reservation uses: exactly the engine's
//     bytes, with none of its log logic.
//   - FloorPayload gathers only the records' values into one buffer and
//     pwrites that, with the same reservation: no framing, no CRC.
//   - FloorPreallocated is FloorReserved into a file preallocated to its
//     full size with fallocate mode 0 (what Options.Preallocate does), so
//     an fdatasync has no size to commit.
//   - FloorZeroed is FloorReserved into a file whose blocks were written
//     with zeros and synced before the round (untimed), so an fdatasync
//     has no size and no extent to commit: fallocate leaves its blocks
//     unwritten, and ext4 records each write's conversion to written in
//     its journal, which is what a pre-zeroed file saves (PostgreSQL
//     zero-fills new WAL files for this reason). It is a floor only: the
//     engine does not zero-fill.
const (
	FloorPlain        = "plain"
	FloorReserved     = "reserved"
	FloorPayload      = "payload"
	FloorPreallocated = "preallocated"
	FloorZeroed       = "zeroed"
)

// floorZeroedBytes is how much of the zeroed floor's file is zero-filled
// before each round: more than a synced round of at least a second
// writes on the disks measured (about 300 MB/s at most). Writes past it
// grow the file as the plain floor does. A variable so that tests can
// make it small.
var floorZeroedBytes int64 = 512 << 20

// floorReserveChunk is how far ahead the reserved floors reserve blocks:
// the engine's reservation chunk.
const floorReserveChunk = 16 << 20

// floorPreallocBytes is the size the preallocated floor's file gets up
// front, and again whenever it fills (one extra fallocate per GiB).
const floorPreallocBytes = 1 << 30

func floorDescription(floor string, o seglog.Options) string {
	switch floor {
	case FloorReserved:
		return "reserved floor: the same batch built per call (framing + CRC) and pwritten into blocks reserved by fallocate(KEEP_SIZE)" + syncNote(o)
	case FloorPayload:
		return "payload floor: only the records' values gathered per call and pwritten into blocks reserved by fallocate(KEEP_SIZE)" + syncNote(o)
	case FloorPreallocated:
		return "preallocated floor: the same batch built per call and pwritten into a file fallocated (mode 0) to 1 GiB" + syncNote(o)
	case FloorZeroed:
		return "zeroed floor: the same batch built per call and pwritten into a file whose first 512 MiB were written with zeros and synced before the round" + syncNote(o)
	case FloorSpare:
		return "spare floor: the same batch built per call and pwritten into segment files of --segment-bytes, each zero-filled in the background while the one before it is written (fallocate mode 0 when the zeros are not ready)" + syncNote(o)
	}
	return "plain file append of the same batch bytes, one write per batch" + syncNote(o)
}

func checkFloor(floor string) error {
	switch floor {
	case FloorPlain, FloorReserved, FloorPayload, FloorPreallocated, FloorZeroed, FloorSpare:
		return nil
	}
	return invalid("floor %q: want %s, %s, %s, %s, %s or %s", floor, FloorPlain, FloorReserved, FloorPayload, FloorPreallocated, FloorZeroed, FloorSpare)
}

// floorFile is a file written with pwrite at a tracked position, with
// blocks reserved or preallocated ahead as its floor says.
type floorFile struct {
	f      vfs.File
	floor  string
	pos    int64
	ahead  int64 // reserved or preallocated up to here
	failed bool  // reservation failed once: stop trying (a hint)
}

func (ff *floorFile) write(b []byte) error {
	end := ff.pos + int64(len(b))
	if end > ff.ahead && !ff.failed {
		switch ff.floor {
		case FloorReserved, FloorPayload:
			n := max(floorReserveChunk, end-ff.ahead)
			if err := ff.f.Reserve(ff.ahead, n); err != nil {
				ff.failed = true
			}
			ff.ahead += n
		case FloorPreallocated:
			n := max(floorPreallocBytes, end-ff.ahead)
			if err := ff.f.Preallocate(ff.ahead, n); err != nil {
				return err
			}
			ff.ahead += n
		}
	}
	if _, err := ff.f.WriteAt(b, ff.pos); err != nil {
		return err
	}
	ff.pos = end
	return nil
}

// floorWriteRound is baselineWriteRound for the reserved, payload and
// preallocated floors: each call builds (or gathers) its bytes from the
// writer's values, as the engine's Append does, then writes them with one
// pwrite and, under SyncAlways, one fdatasync. Writers take turns on the
// file; each builds outside the lock.
func floorWriteRound(r *runner, cfg WriteConfig, path string, curs []*valueCursor, lat *recorder, timedRound bool) (st roundStat, err error) {
	var ff floorWriter
	if cfg.Floor == FloorSpare {
		segBytes := cfg.Options.SegmentBytes
		if segBytes <= 0 {
			segBytes = seglog.DefaultSegmentBytes
		}
		sf, serr := newSpareFile(path, segBytes)
		if serr != nil {
			return roundStat{}, serr
		}
		defer func() { // sets the named results: a zeroer's error is the round's
			if cerr := sf.close(); err == nil {
				err = cerr
			}
			st.zeroedSegs, st.preallocatedSegs = sf.zeroed, sf.preallocated
		}()
		ff = sf
	} else {
		f, err := fs.Create(path)
		if err != nil {
			return roundStat{}, err
		}
		defer fs.Remove(path)
		defer f.Close()
		if cfg.Floor == FloorZeroed {
			if err := zeroFill(f, floorZeroedBytes); err != nil {
				return roundStat{}, err
			}
		}
		ff = &floorFile{f: f, floor: cfg.Floor}
	}
	var mu sync.Mutex
	lats := make([]*recorder, cfg.Writers)
	var records, stored atomic.Int64
	st.wall, st.cpu, err = timed(func() error {
		bud := cfg.budget()
		return runWriters(cfg.Writers, func(w int) error {
			lats[w] = newRecorder()
			cur := *curs[w] // the engine's values, in the same order
			bld := record.NewBuilder(cfg.Options.Compression)
			buf := make([]byte, 0, cfg.Batch*cfg.RecordSize)
			var rec record.Record
			var n, bytes int64
			defer func() { records.Add(n * int64(cfg.Batch)); stored.Add(bytes) }()
			for ; bud.more(n); n++ {
				t := time.Now()
				var b []byte
				if cfg.Floor == FloorPayload {
					buf = buf[:0]
					for range cfg.Batch {
						buf = append(buf, cur.next()...)
					}
					b = buf
				} else {
					bld.Reset()
					now := time.Now().UnixMilli()
					for j := range cfg.Batch {
						// AddAt, the builder's fastest path (the engine's).
						rec.Value = cur.next()
						if err := bld.AddAt(int64(j), now, &rec); err != nil {
							return err
						}
					}
					built, err := bld.Build()
					if err != nil {
						return err
					}
					b = built
				}
				mu.Lock()
				err := ff.write(b)
				if err == nil && cfg.Options.Sync == seglog.SyncAlways {
					err = ff.sync()
				}
				mu.Unlock()
				lats[w].record(time.Since(t))
				if err != nil {
					return err
				}
				bytes += int64(len(b))
				r.add(int64(cfg.Batch), int64(cfg.Batch*cfg.RecordSize))
			}
			return nil
		})
	})
	if err != nil {
		return st, err
	}
	r.idle()
	st.records = records.Load()
	st.bytes = st.records * int64(cfg.RecordSize)
	st.stored = stored.Load()
	if st.stored != ff.written() {
		return st, verifyErr("floor file written to byte %d, wrote %d bytes", ff.written(), st.stored)
	}
	if timedRound {
		for _, x := range lats {
			lat.merge(x)
		}
	}
	return st, ff.sync()
}

// floorWriter is what floorWriteRound writes to: a floorFile, or the spare
// floor's segment files.
type floorWriter interface {
	write(b []byte) error
	sync() error
	written() int64
}

func (ff *floorFile) sync() error    { return ff.f.Sync() }
func (ff *floorFile) written() int64 { return ff.pos }
func (sf *spareFile) written() int64 { return sf.bytes }

// floorName is the floor's label in a phase title.
func floorName(floor string) string {
	if floor == "" || floor == FloorPlain {
		return ""
	}
	return fmt.Sprintf(", %s floor", floor)
}

// zeroFill writes n zero bytes at the start of f and syncs them, so that
// its blocks are allocated and written before the timed part.
func zeroFill(f vfs.File, n int64) error {
	zeros := make([]byte, 4<<20)
	for off := int64(0); off < n; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), n-off)], off); err != nil {
			return err
		}
	}
	return f.Sync()
}
