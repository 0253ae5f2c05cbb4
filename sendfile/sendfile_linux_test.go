package sendfile

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ranges returns the fixed edge cases plus seeded random ranges of a file of
// the given size.
func ranges(size int64) []struct{ off, n int64 } {
	rs := []struct{ off, n int64 }{
		{0, size},
		{0, 1},
		{size - 1, 1},
		{size, 0},
		{4095, 4097},
		{DefaultChunkSize - 1, DefaultChunkSize + 2}, // straddles chunk boundaries
		{DefaultChunkSize, DefaultChunkSize},
		{1, size - 2},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 24 {
		off := rng.Int64N(size)
		rs = append(rs, struct{ off, n int64 }{off, rng.Int64N(size - off + 1)})
	}
	return rs
}

// Ranges at many offsets and lengths reach a TCP peer intact, all by
// sendfile, one range after another on the same connection.
func TestSendFileRangesTCP(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	snd, rcv := tcpPair(t)
	snd.SetWriteDeadline(deadline())
	var s Sender
	for _, r := range ranges(fixtureSize) {
		before := s.Stats()
		got := receive(rcv, r.n)
		written, handled, err := s.SendFile(snd, src, r.off, r.n)
		if err != nil || !handled || written != r.n {
			t.Fatalf("SendFile(off=%d, n=%d) = %d, %v, %v", r.off, r.n, written, handled, err)
		}
		checkReceived(t, <-got, data[r.off:r.off+r.n])
		if d := s.Stats().Sub(before); d.SendfileBytes != r.n || d.CopyBytes != 0 || d.Declined != 0 {
			t.Fatalf("SendFile(off=%d, n=%d) stats %+v: want every byte by sendfile", r.off, r.n, d)
		}
	}
	// Nothing beyond the ranges was sent.
	snd.Close()
	if rest := <-receive(rcv, -1); rest.n != 0 || rest.err != nil {
		t.Fatalf("%d stray bytes after the last range (err %v)", rest.n, rest.err)
	}
}

// Goroutines sending different ranges of one descriptor at once each get
// their own range: offsets are explicit, the shared position is not used.
func TestSendFileConcurrentRangesOneFd(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	// Move the shared position somewhere arbitrary; sendfile must neither
	// read from it nor move it.
	const pos = 4321
	if _, err := src.Seek(pos, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var s Sender
	const senders, perSender = 4, 6
	var total int64
	var wg sync.WaitGroup
	for g := range senders {
		snd, rcv := tcpPair(t)
		snd.SetWriteDeadline(deadline())
		rng := rand.New(rand.NewPCG(uint64(g), 7))
		rs := make([]struct{ off, n int64 }, perSender)
		for i := range rs {
			rs[i].off = rng.Int64N(fixtureSize)
			rs[i].n = rng.Int64N(fixtureSize - rs[i].off + 1)
			total += rs[i].n
		}
		wg.Go(func() {
			for _, r := range rs {
				got := receive(rcv, r.n)
				written, err := s.Copy(snd, src, r.off, r.n)
				if err != nil || written != r.n {
					t.Errorf("sender %d: Copy(off=%d, n=%d) = %d, %v", g, r.off, r.n, written, err)
					return
				}
				res := <-got
				want := data[r.off : r.off+r.n]
				if res.err != nil || res.n != r.n || !bytes.Equal(res.sum[:], sha(want)) {
					t.Errorf("sender %d: range off=%d n=%d arrived damaged (%d bytes, err %v)", g, r.off, r.n, res.n, res.err)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.SendfileBytes != total || st.CopyBytes != 0 {
		t.Fatalf("stats %+v: want all %d bytes by sendfile", st, total)
	}
	if got, err := src.Seek(0, io.SeekCurrent); err != nil || got != pos {
		t.Fatalf("shared file position is %d (%v), want it untouched at %d", got, err, pos)
	}
}

// A peer that closes while data is in flight makes the sender stop with
// EPIPE or ECONNRESET, wrapped, and not hang.
func TestSendFilePeerClosesEarly(t *testing.T) {
	src, _ := fixture(t, fixtureSize)
	snd, rcv := tcpPair(t)
	snd.SetWriteDeadline(deadline())
	closed := make(chan struct{})
	go func() {
		// Closing with unread data makes the kernel answer with a
		// reset rather than a graceful FIN.
		var b [1]byte
		io.ReadFull(rcv, b[:])
		rcv.Close()
		close(closed)
	}()
	var s Sender
	var err error
	// The first ranges may still fit in the socket buffers; the reset
	// shows on a later write. 100 full-file sends is far more than any
	// buffer holds.
	for i := 0; i < 100 && err == nil; i++ {
		_, err = s.Copy(snd, src, 0, fixtureSize)
		if i == 0 {
			<-closed
		}
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("err = %v, want EPIPE or ECONNRESET", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Op != "sendfile" {
		t.Fatalf("err = %#v, want *Error from sendfile", err)
	}
	if st := s.Stats(); st.CopyBytes != 0 || st.Declined != 0 {
		t.Fatalf("stats %+v: a broken connection must not fall back to copying", st)
	}
}

// A reader that never reads fills the socket buffers; the sender parks on
// the poller until its write deadline, which surfaces as
// os.ErrDeadlineExceeded with an exact count of what was sent.
func TestSendFileSlowReaderDeadline(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	snd, rcv := tcpPair(t)
	rcv.SetReadBuffer(4096)
	snd.SetWriteBuffer(4096)
	snd.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	var s Sender
	const off = 99
	written, handled, err := s.SendFile(snd, src, off, fixtureSize-off)
	if !handled || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("SendFile = %d, %v, %v; want handled os.ErrDeadlineExceeded", written, handled, err)
	}
	if written <= 0 || written >= fixtureSize-off {
		t.Fatalf("written = %d, want a partial transfer", written)
	}
	// A thread spinning on EAGAIN would make thousands of calls in 200ms;
	// parking on the poller makes a handful.
	if calls := s.Stats().SendfileCalls; calls > 100 {
		t.Fatalf("%d sendfile calls while the peer read nothing: busy loop", calls)
	}
	// What the sender counted is exactly what the peer gets.
	snd.Close()
	checkReceived(t, <-receive(rcv, -1), data[off:off+written])
}

// A reader slower than the sender, behind a small send buffer, gets the whole range:
// the sender waits for writability and resumes where the kernel stopped.
func TestSendFileSlowReader(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	snd, rcv := tcpPair(t)
	// Only the send buffer is small: a tiny receive window would stall
	// loopback TCP on delayed ACKs and the persist timer for seconds.
	snd.SetWriteBuffer(4096)
	snd.SetWriteDeadline(deadline())
	const off, n = 3, DefaultChunkSize
	got := make(chan received, 1)
	go func() {
		// 512-byte reads keep the sender's buffer full most of the time.
		var buf bytes.Buffer
		_, err := io.CopyBuffer(&buf, io.LimitReader(struct{ io.Reader }{rcv}, n), make([]byte, 512))
		got <- received{n: int64(buf.Len()), sum: [32]byte(sha(buf.Bytes())), err: err}
	}()
	var s Sender
	written, handled, err := s.SendFile(snd, src, off, n)
	if err != nil || !handled || written != n {
		t.Fatalf("SendFile = %d, %v, %v", written, handled, err)
	}
	checkReceived(t, <-got, data[off:off+n])
	if calls := s.Stats().SendfileCalls; calls < 2 {
		t.Fatalf("%d sendfile calls: a 1 MiB range cannot fit a 4 KiB send buffer at once, so the wait path never ran", calls)
	}
}

func TestSendFileDeadlinePassed(t *testing.T) {
	src, _ := fixture(t, 1000)
	snd, _ := tcpPair(t)
	snd.SetWriteDeadline(time.Now().Add(-time.Second))
	written, handled, err := (&Sender{}).SendFile(snd, src, 0, 1000)
	if !handled || written != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("SendFile = %d, %v, %v; want handled os.ErrDeadlineExceeded", written, handled, err)
	}
}

func TestSendFileClosedConn(t *testing.T) {
	src, _ := fixture(t, 1000)
	snd, _ := tcpPair(t)
	snd.Close()
	written, err := (&Sender{}).Copy(snd, src, 0, 1000)
	if written != 0 || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Copy to a closed conn = %d, %v; want net.ErrClosed", written, err)
	}
}

// A range past the end of the file sends what exists, then reports
// io.ErrUnexpectedEOF instead of waiting for bytes that will not come.
func TestSendFileShortSource(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	snd, rcv := tcpPair(t)
	snd.SetWriteDeadline(deadline())
	const off = fixtureSize - 10
	written, handled, err := (&Sender{}).SendFile(snd, src, off, 100)
	if !handled || !errors.Is(err, io.ErrUnexpectedEOF) || written != 10 {
		t.Fatalf("SendFile = %d, %v, %v; want 10 bytes then io.ErrUnexpectedEOF", written, handled, err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Off != fixtureSize {
		t.Fatalf("err = %v, want *Error at offset %d", err, fixtureSize)
	}
	snd.Close()
	checkReceived(t, <-receive(rcv, -1), data[off:])
}

// The file shrinks between ranges; the next range over the lost tail stops
// with io.ErrUnexpectedEOF rather than hang or send stale bytes.
func TestSendFileTruncatedSource(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	snd, rcv := tcpPair(t)
	snd.SetWriteDeadline(deadline())
	const cut = DefaultChunkSize + 7
	if err := src.Truncate(cut); err != nil {
		t.Fatal(err)
	}
	written, err := (&Sender{}).Copy(snd, src, 0, fixtureSize)
	if !errors.Is(err, io.ErrUnexpectedEOF) || written != cut {
		t.Fatalf("Copy = %d, %v; want %d bytes then io.ErrUnexpectedEOF", written, err, cut)
	}
	snd.Close()
	checkReceived(t, <-receive(rcv, -1), data[:cut])
}

func TestSendFileUnixSocket(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	addr := &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"}
	ln, err := net.ListenUnix("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	snd, err := net.DialUnix("unix", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	rcv, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	snd.SetWriteDeadline(deadline())

	var s Sender
	const off, n = 1000, 2*DefaultChunkSize + 1
	got := receive(rcv, n)
	written, handled, err := s.SendFile(snd, src, off, n)
	if err != nil || !handled || written != n {
		t.Fatalf("SendFile = %d, %v, %v", written, handled, err)
	}
	checkReceived(t, <-got, data[off:off+n])
	if st := s.Stats(); st.SendfileBytes != n {
		t.Fatalf("stats %+v: want every byte by sendfile", st)
	}
}

// A datagram socket would cut the range into messages at chunk boundaries:
// SendFile declines it.
func TestSendFileDeclinesUnixgram(t *testing.T) {
	src, _ := fixture(t, 1000)
	addr := &net.UnixAddr{Name: filepath.Join(t.TempDir(), "g"), Net: "unixgram"}
	rcv, err := net.ListenUnixgram("unixgram", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	snd, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	var s Sender
	if written, handled, err := s.SendFile(snd, src, 0, 100); handled || written != 0 || err != nil {
		t.Fatalf("SendFile to unixgram = %d, %v, %v; want a decline", written, handled, err)
	}
	if st := s.Stats(); st.SendfileCalls != 0 {
		t.Fatalf("stats %+v: sendfile ran on a datagram socket", st)
	}
}

// A writer that wraps a connection (as a TLS connection does) declines even
// though the connection underneath could take sendfile.
func TestSendFileDeclinesWrappedConn(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	snd, rcv := tcpPair(t)
	snd.SetWriteDeadline(deadline())
	var s Sender
	wrapped := struct{ io.Writer }{snd}
	const off, n = 5, 300000
	got := receive(rcv, n)
	written, err := s.Copy(wrapped, src, off, n)
	if err != nil || written != n {
		t.Fatalf("Copy = %d, %v", written, err)
	}
	checkReceived(t, <-got, data[off:off+n])
	if st := s.Stats(); st.SendfileCalls != 0 || st.Declined != 1 || st.CopyBytes != n {
		t.Fatalf("stats %+v: want the wrapped writer served by copy alone", st)
	}
}

// A pipe takes sendfile; its 64 KiB buffer forces many waits on the poller.
func TestSendFilePipe(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	w.SetWriteDeadline(deadline())
	var s Sender
	const off, n = 17, fixtureSize - 17
	got := receive(r, n)
	written, handled, err := s.SendFile(w, src, off, n)
	if err != nil || !handled || written != n {
		t.Fatalf("SendFile = %d, %v, %v", written, handled, err)
	}
	checkReceived(t, <-got, data[off:off+n])
	if st := s.Stats(); st.SendfileBytes != n {
		t.Fatalf("stats %+v: want every byte by sendfile", st)
	}
}

// A regular file destination is written at, and advanced from, its own
// position, exactly as Write would.
func TestSendFileRegularFile(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	dst := createFile(t, "dst", 0)
	if _, err := dst.Write([]byte("hdr")); err != nil {
		t.Fatal(err)
	}
	var s Sender
	const off, n = 4096, 2*DefaultChunkSize + 5
	written, handled, err := s.SendFile(dst, src, off, n)
	if err != nil || !handled || written != n {
		t.Fatalf("SendFile = %d, %v, %v", written, handled, err)
	}
	if pos, err := dst.Seek(0, io.SeekCurrent); err != nil || pos != 3+n {
		t.Fatalf("destination position %d (%v), want %d", pos, err, 3+n)
	}
	got := make([]byte, 3+n)
	if _, err := dst.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if string(got[:3]) != "hdr" || !bytes.Equal(got[3:], data[off:off+n]) {
		t.Fatal("destination file holds different bytes")
	}
	if st := s.Stats(); st.SendfileBytes != n {
		t.Fatalf("stats %+v: want every byte by sendfile", st)
	}
}

// The kernel refuses sendfile into an O_APPEND file with EINVAL on the first
// call: SendFile declines cleanly and Copy appends by writing.
func TestSendFileAppendOnlyFileFallsBack(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	dst := createFile(t, "dst", os.O_APPEND)
	var s Sender
	const off, n = 10, 200000
	written, err := s.Copy(dst, src, off, n)
	if err != nil || written != n {
		t.Fatalf("Copy = %d, %v", written, err)
	}
	got := make([]byte, n)
	if _, err := dst.ReadAt(got, 0); err != nil || !bytes.Equal(got, data[off:off+n]) {
		t.Fatalf("destination holds different bytes (%v)", err)
	}
	if st := s.Stats(); st.SendfileBytes != 0 || st.SendfileCalls != 1 || st.Declined != 1 || st.CopyBytes != n {
		t.Fatalf("stats %+v: want one refused sendfile call, then all bytes copied", st)
	}
}

// injectSendfile replaces the system call for one test.
func injectSendfile(t *testing.T, fn func(out, in int, off *int64, count int) (int, error)) {
	t.Helper()
	orig := sendfileFn
	sendfileFn = fn
	t.Cleanup(func() { sendfileFn = orig })
}

// Every call asks for at most one chunk, and full chunks are asked for.
func TestSendFileChunks(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	for _, chunk := range []int{0, 64 << 10, 1<<20 + 1} {
		want := chunk
		if chunk == 0 {
			want = DefaultChunkSize
		}
		var maxAsked, fullAsks int
		injectSendfile(t, func(out, in int, off *int64, count int) (int, error) {
			maxAsked = max(maxAsked, count)
			if count == want {
				fullAsks++
			}
			return unix.Sendfile(out, in, off, count)
		})
		dst := createFile(t, "dst", 0)
		s := Sender{ChunkSize: chunk}
		if written, err := s.Copy(dst, src, 1, fixtureSize-1); err != nil || written != fixtureSize-1 {
			t.Fatalf("chunk %d: Copy = %d, %v", chunk, written, err)
		}
		if maxAsked != want || fullAsks != (fixtureSize-1)/want {
			t.Fatalf("chunk %d: largest call asked %d bytes, %d full calls; want %d and %d", chunk, maxAsked, fullAsks, want, (fixtureSize-1)/want)
		}
		got := make([]byte, fixtureSize-1)
		if _, err := dst.ReadAt(got, 0); err != nil || !bytes.Equal(got, data[1:]) {
			t.Fatalf("chunk %d: destination differs (%v)", chunk, err)
		}
	}
}

// EINTR is retried without losing or repeating bytes.
func TestSendFileRetriesEINTR(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	calls := 0
	injectSendfile(t, func(out, in int, off *int64, count int) (int, error) {
		calls++
		if calls%2 == 1 {
			return -1, unix.EINTR
		}
		return unix.Sendfile(out, in, off, count)
	})
	snd, rcv := tcpPair(t)
	snd.SetWriteDeadline(deadline())
	got := receive(rcv, fixtureSize)
	written, handled, err := (&Sender{}).SendFile(snd, src, 0, fixtureSize)
	if err != nil || !handled || written != fixtureSize {
		t.Fatalf("SendFile = %d, %v, %v", written, handled, err)
	}
	checkReceived(t, <-got, data)
}

// ENOSYS (no sendfile in the kernel) on the first call declines; Copy then
// delivers by the fallback.
func TestSendFileENOSYSFallsBack(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	injectSendfile(t, func(out, in int, off *int64, count int) (int, error) {
		return -1, unix.ENOSYS
	})
	snd, rcv := tcpPair(t)
	snd.SetWriteDeadline(deadline())
	var s Sender
	const off, n = 3, 500000
	got := receive(rcv, n)
	written, err := s.Copy(snd, src, off, n)
	if err != nil || written != n {
		t.Fatalf("Copy = %d, %v", written, err)
	}
	checkReceived(t, <-got, data[off:off+n])
	if st := s.Stats(); st.SendfileBytes != 0 || st.Declined != 1 || st.CopyBytes != n {
		t.Fatalf("stats %+v: want a decline and a full copy", st)
	}
}

// EINVAL after bytes went out cannot fall back (the peer already has a
// prefix): it is an error at the exact offset reached.
func TestSendFileEINVALAfterProgress(t *testing.T) {
	src, data := fixture(t, fixtureSize)
	calls := 0
	injectSendfile(t, func(out, in int, off *int64, count int) (int, error) {
		calls++
		if calls > 1 {
			return -1, unix.EINVAL
		}
		return unix.Sendfile(out, in, off, count)
	})
	snd, rcv := tcpPair(t)
	snd.SetWriteDeadline(deadline())
	var s Sender
	const off = 5
	written, err := s.Copy(snd, src, off, fixtureSize-off)
	if !errors.Is(err, syscall.EINVAL) || written != DefaultChunkSize {
		t.Fatalf("Copy = %d, %v; want one chunk then EINVAL", written, err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Op != "sendfile" || e.Off != off+DefaultChunkSize {
		t.Fatalf("err = %v, want *Error at offset %d", err, off+DefaultChunkSize)
	}
	if st := s.Stats(); st.CopyBytes != 0 || st.Declined != 0 {
		t.Fatalf("stats %+v: must not fall back after progress", st)
	}
	snd.Close()
	checkReceived(t, <-receive(rcv, -1), data[off:off+DefaultChunkSize])
}
