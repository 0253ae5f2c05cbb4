package seglog

import (
	"io"
	"net"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/sendfile"
	"github.com/seglog/seglog/vfs"
)

// fetchLog is the log BenchmarkFetch reads: built once per process, 1 GiB
// (64 MiB under -short, for CI's smoke run), removed by TestMain.
var fetchLog struct {
	once   sync.Once
	log    *Log
	ranges []fetchRange
	bytes  int64
	err    error
}

// fetchRange is one 1 MiB fetch: what Read returns, as a plain file range.
type fetchRange struct {
	offset int64 // the offset asked for
	file   vfs.File
	pos, n int64
}

// benchCleanups run after all tests and benchmarks (see TestMain).
var benchCleanups []func()

func buildFetchLog(b *testing.B) {
	f := &fetchLog
	f.once.Do(func() {
		size := int64(1 << 30)
		if testing.Short() {
			size = 64 << 20
		}
		dir := filepath.Join(b.TempDir()+"-fetchlog", "log")
		benchCleanups = append(benchCleanups, func() { vfs.RemoveAll(vfs.Default, filepath.Dir(dir)) })
		l, err := Open(dir, Options{Logger: discardLogger()})
		if err != nil {
			f.err = err
			return
		}
		recs := make([]record.Record, 100)
		for i := range recs {
			recs[i] = record.Record{Key: []byte("k"), Value: make([]byte, 1024), Timestamp: 1}
		}
		for l.Size() < size {
			if _, err := l.Append(recs...); err != nil {
				f.err = err
				return
			}
		}
		if err := l.Sync(); err != nil {
			f.err = err
			return
		}
		for off := l.StartOffset(); off < l.EndOffset(); {
			s, err := l.Read(off, 1<<20, ReadOptions{})
			if err != nil {
				f.err = err
				return
			}
			file, err := vfs.Default.Open(s.File())
			if err != nil {
				f.err = err
				return
			}
			benchCleanups = append(benchCleanups, func() { file.Close() })
			f.ranges = append(f.ranges, fetchRange{offset: off, file: file, pos: s.Position(), n: s.Len()})
			f.bytes += s.Len()
			off = s.LastOffset() + 1
			s.Close()
		}
		f.log = l
		benchCleanups = append(benchCleanups, func() { l.Close() })
	})
	if f.err != nil {
		b.Fatal(f.err)
	}
}

// BenchmarkFetch sends a log over loopback TCP in 1 MiB fetches three
// ways, in the same run: Log.Read + Slice.WriteTo (the engine), sendfile
// of the same file ranges with no log logic (the floor), and ReadAt +
// Write through a buffer (the copy path). cpu-s/GB is the sending
// thread's user+system CPU per GB sent.
func BenchmarkFetch(b *testing.B) {
	buildFetchLog(b)
	f := &fetchLog
	avg := f.bytes / int64(len(f.ranges))
	b.Run("log", func(b *testing.B) {
		runFetch(b, avg, func(conn *net.TCPConn, i int) (int64, error) {
			r := f.ranges[i%len(f.ranges)]
			s, err := f.log.Read(r.offset, 1<<20, ReadOptions{})
			if err != nil {
				return 0, err
			}
			defer s.Close()
			return s.WriteTo(conn)
		})
	})
	b.Run("sendfile", func(b *testing.B) {
		var snd sendfile.Sender
		runFetch(b, avg, func(conn *net.TCPConn, i int) (int64, error) {
			r := f.ranges[i%len(f.ranges)]
			return snd.Copy(conn, r.file, r.pos, r.n)
		})
	})
	b.Run("copy", func(b *testing.B) {
		buf := make([]byte, 128<<10)
		runFetch(b, avg, func(conn *net.TCPConn, i int) (int64, error) {
			r := f.ranges[i%len(f.ranges)]
			var sent int64
			for sent < r.n {
				n, err := r.file.ReadAt(buf[:min(int64(len(buf)), r.n-sent)], r.pos+sent)
				if err != nil {
					return sent, err
				}
				if _, err := conn.Write(buf[:n]); err != nil {
					return sent, err
				}
				sent += int64(n)
			}
			return sent, nil
		})
	})
}

func runFetch(b *testing.B, avg int64, send func(conn *net.TCPConn, i int) (int64, error)) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		_, err = io.CopyBuffer(io.Discard, c, make([]byte, 256<<10))
		c.Close()
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	conn := c.(*net.TCPConn)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.SetBytes(avg)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := threadCPU(b)
	var total int64
	for i := 0; i < b.N; i++ {
		n, err := send(conn, i)
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	cpu := threadCPU(b) - cpu0
	b.StopTimer()
	b.ReportMetric(cpu.Seconds()/(float64(total)/1e9), "cpu-s/GB")
	conn.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
