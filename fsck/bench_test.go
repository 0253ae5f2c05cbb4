package fsck

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// benchDirMiB is the size of the benchmark directory; FSCK_BENCH_MIB
// overrides the default 1 GiB.
func benchDirMiB() int {
	if v, err := strconv.Atoi(os.Getenv("FSCK_BENCH_MIB")); err == nil && v > 0 {
		return v
	}
	return 1024
}

func writeBenchDir(fsys vfs.FS, dir string, total int64) error {
	bld := record.NewBuilder(record.None)
	val := make([]byte, 160)
	for i := range val {
		val[i] = byte('a' + i%26)
	}
	for i := 0; i < 100; i++ {
		if err := bld.AddRecord(int32(i), int64(i), []byte(fmt.Sprintf("key-%03d", i)), val, nil); err != nil {
			return err
		}
	}
	tmpl, err := bld.Build()
	if err != nil {
		return err
	}
	const segBytes = 256 << 20
	per := int64(segBytes / len(tmpl))
	next := int64(0)
	for written := int64(0); written < total; {
		base := next
		ib := newIndexBuilder(base, 0)
		buf := make([]byte, 0, per*int64(len(tmpl)))
		for k := int64(0); k < per && written < total; k++ {
			pos := int64(len(buf))
			buf = append(buf, tmpl...)
			bt := record.Batch(buf[pos:])
			binary.BigEndian.PutUint64(bt, uint64(next)) // outside the CRC
			ib.add(pos, bt.LastOffset(), bt.MaxTimestamp(), int64(len(tmpl)))
			next = bt.NextOffset()
			written += int64(len(tmpl))
		}
		off, tim := ib.finish()
		for name, data := range map[string][]byte{
			layout.FileName(base, ".log"): buf, layout.FileName(base, ".index"): off, layout.FileName(base, ".timeindex"): tim,
		} {
			f, err := fsys.Create(filepath.Join(dir, name))
			if err != nil {
				return err
			}
			if _, err := f.Write(data); err != nil {
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkCheck measures a CRC-only check of a directory in the page
// cache, beside the baseline of reading the same .log bytes in the same
// chunk size and computing their CRC-32C, with no parsing.
func BenchmarkCheck(b *testing.B) {
	// A benchmark with sub-benchmarks runs its body once, so the directory
	// is built once and lives until the sub-benchmarks are done.
	dir := b.TempDir()
	if err := writeBenchDir(vfs.Default, dir, int64(benchDirMiB())<<20); err != nil {
		b.Fatal(err)
	}
	size := LogBytes(vfs.Default, []string{dir})
	b.Run("fsck", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			r, err := Check(vfs.Default, dir, Options{})
			if err != nil || !r.Clean() {
				b.Fatalf("%v %s", err, dumpProblems(r))
			}
		}
	})
	b.Run("baseline-read-crc32c", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		buf := make([]byte, 4<<20) // the segment scanner's read size
		tab := crc32.MakeTable(crc32.Castagnoli)
		for b.Loop() {
			names, _ := vfs.Default.List(dir)
			var sum uint32
			for _, n := range names {
				if filepath.Ext(n) != ".log" {
					continue
				}
				f, err := vfs.Default.Open(filepath.Join(dir, n))
				if err != nil {
					b.Fatal(err)
				}
				for off := int64(0); ; {
					k, err := f.ReadAt(buf, off)
					sum = crc32.Update(sum, tab, buf[:k])
					off += int64(k)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				f.Close()
			}
			_ = sum
		}
	})
	b.Run("fsck-deep", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Check(vfs.Default, dir, Options{Deep: true}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
