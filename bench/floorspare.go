package bench

import (
	"fmt"
	"sync/atomic"

	"github.com/seglog/seglog/vfs"
)

// FloorSpare measures the design that issue 17's preallocation target
// would need (docs/benchmarks.md, "Preallocation"): segments of
// Options.SegmentBytes whose blocks were written with zeros before the
// appends reach them, without paying for the zeros outside the timed
// part as FloorZeroed does. While the writer appends to one segment file,
// a goroutine writes zeros over the next one (4 MiB writes, then an
// fdatasync), as a log zero-filling its next segment in the background
// would. At a segment boundary the writer takes the zeroed file if it is
// ready, and otherwise creates one preallocated with fallocate mode 0
// (FloorPreallocated's file); either way the zeroer then starts on the
// next. The zeros cost disk bandwidth the appends share: that is what
// FloorZeroed leaves out and this floor measures. (The first spare is
// begun before the round's clock starts, a head start of part of one
// segment's zeros in the floor's favour.)
const FloorSpare = "spare"

// spareFile is FloorSpare's sequence of segment files.
type spareFile struct {
	path    string // segment k is path.k; the spare being zeroed is path.spare
	segSize int64

	seg      vfs.File
	segIndex int
	pos      int64 // in seg
	bytes    int64 // written over all segments

	zeroed, preallocated int // segments started from each kind of file

	ready atomic.Bool // the spare is zeroed and synced
	stop  atomic.Bool // tells the zeroer to give up
	done  chan error  // the zeroer's result; nil when none runs
	zeros []byte
}

func newSpareFile(path string, segSize int64) (*spareFile, error) {
	sf := &spareFile{path: path, segSize: segSize, zeros: make([]byte, 4<<20)}
	f, err := sf.preallocatedSegment()
	if err != nil {
		return nil, err
	}
	sf.seg = f
	sf.startZeroer()
	return sf, nil
}

func (sf *spareFile) segPath(k int) string { return fmt.Sprintf("%s.%d", sf.path, k) }
func (sf *spareFile) sparePath() string    { return sf.path + ".spare" }

// preallocatedSegment creates segment segIndex at full size with fallocate.
func (sf *spareFile) preallocatedSegment() (vfs.File, error) {
	f, err := fs.Create(sf.segPath(sf.segIndex))
	if err != nil {
		return nil, err
	}
	if err := f.Preallocate(0, sf.segSize); err != nil {
		f.Close()
		return nil, err
	}
	sf.preallocated++
	return f, nil
}

// startZeroer zero-fills a new spare file in the background.
func (sf *spareFile) startZeroer() {
	sf.ready.Store(false)
	sf.done = make(chan error, 1)
	go func() {
		err := sf.zeroSpare()
		if err == nil && !sf.stop.Load() {
			sf.ready.Store(true)
		}
		sf.done <- err
	}()
}

func (sf *spareFile) zeroSpare() error {
	f, err := fs.Create(sf.sparePath())
	if err != nil {
		return err
	}
	defer f.Close()
	// stop is looked at after each write, not before: the first write is
	// always tried, so a disk that cannot take the zeros fails the round
	// however soon it ends (a zeroer stopped before its first write
	// would hide the error).
	for off := int64(0); off < sf.segSize; off += int64(len(sf.zeros)) {
		if _, err := f.WriteAt(sf.zeros[:min(int64(len(sf.zeros)), sf.segSize-off)], off); err != nil {
			return err
		}
		if sf.stop.Load() {
			return nil
		}
	}
	return f.Sync()
}

// write appends b, moving to the next segment first when b does not fit.
func (sf *spareFile) write(b []byte) error {
	if sf.pos > 0 && sf.pos+int64(len(b)) > sf.segSize {
		if err := sf.next(); err != nil {
			return err
		}
	}
	if _, err := sf.seg.WriteAt(b, sf.pos); err != nil {
		return err
	}
	sf.pos += int64(len(b))
	sf.bytes += int64(len(b))
	return nil
}

// next closes the full segment (a log would seal it; its blocks are not
// needed again, so it is removed) and opens the next one from the spare
// if it is ready.
func (sf *spareFile) next() error {
	if err := sf.seg.Close(); err != nil {
		return err
	}
	if err := fs.Remove(sf.segPath(sf.segIndex)); err != nil {
		return err
	}
	sf.segIndex++
	sf.pos = 0
	if sf.ready.Load() {
		if err := <-sf.done; err != nil {
			return err
		}
		if err := fs.Rename(sf.sparePath(), sf.segPath(sf.segIndex)); err != nil {
			return err
		}
		f, err := fs.OpenReadWrite(sf.segPath(sf.segIndex))
		if err != nil {
			return err
		}
		sf.seg = f
		sf.zeroed++
		sf.startZeroer()
		return nil
	}
	f, err := sf.preallocatedSegment()
	if err != nil {
		return err
	}
	sf.seg = f
	return nil
}

func (sf *spareFile) sync() error { return sf.seg.Sync() }

// close stops the zeroer and removes every file.
func (sf *spareFile) close() error {
	sf.stop.Store(true)
	var err error
	if sf.done != nil {
		err = <-sf.done
	}
	sf.seg.Close()
	fs.Remove(sf.segPath(sf.segIndex))
	fs.Remove(sf.sparePath())
	return err
}
