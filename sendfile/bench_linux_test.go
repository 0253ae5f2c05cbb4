package sendfile

import (
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchFileSize is large enough that rotating ranges do not resend the same
// bytes back to back, small enough to stay in the page cache.
const benchFileSize = 64 << 20

// BenchmarkSendFile sends the same ranges over loopback TCP by sendfile and
// by the read-and-write fallback, reporting the sending thread's CPU per
// byte next to throughput; then it sweeps sendfile's chunk size.
//
//	go test -run '^$' -bench BenchmarkSendFile -benchtime 2s ./sendfile/
func BenchmarkSendFile(b *testing.B) {
	src, _ := fixture(b, benchFileSize)
	for _, size := range []int64{64 << 10, 1 << 20, 16 << 20} {
		for _, path := range []string{"copy", "sendfile"} {
			b.Run(fmt.Sprintf("size=%s/path=%s", sizeName(size), path), func(b *testing.B) {
				benchRanges(b, src, size, path == "sendfile", 0)
			})
		}
	}
	const size = 16 << 20
	for _, chunk := range []int{64 << 10, 256 << 10, 1 << 20, 4 << 20, size} {
		b.Run(fmt.Sprintf("size=%s/path=sendfile/chunk=%s", sizeName(size), sizeName(int64(chunk))), func(b *testing.B) {
			benchRanges(b, src, size, true, chunk)
		})
	}
}

func benchRanges(b *testing.B, src Source, size int64, sendfile bool, chunk int) {
	snd, rcv := tcpPair(b)
	done := make(chan error, 1)
	go func() {
		_, err := io.CopyBuffer(io.Discard, rcv, make([]byte, 256<<10))
		done <- err
	}()
	var dst io.Writer = snd
	if !sendfile {
		// Hiding the connection behind another writer is exactly what
		// makes SendFile decline, so both paths run through Copy.
		dst = struct{ io.Writer }{snd}
	}
	s := Sender{ChunkSize: chunk}

	// The sender's CPU is the thread's: locking the goroutine to it keeps
	// the receiver's and the runtime's work out of RUSAGE_THREAD.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := threadCPU(b)
	for i := 0; i < b.N; i++ {
		off := (int64(i) * size) % (benchFileSize - size + 1)
		if _, err := s.Copy(dst, src, off, size); err != nil {
			b.Fatal(err)
		}
	}
	cpu := threadCPU(b) - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(int64(b.N)*size), "cpu-ns/B")

	st := s.Stats()
	if sendfile && st.CopyBytes != 0 || !sendfile && st.SendfileBytes != 0 {
		b.Fatalf("wrong path ran: %+v", st)
	}
	snd.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// threadCPU is the user plus system time of the calling OS thread.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sizeName(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}
