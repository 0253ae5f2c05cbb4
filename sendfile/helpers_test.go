package sendfile

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fixtureSize spans several default chunks and ends off a page boundary.
const fixtureSize = 3*DefaultChunkSize + 12345

// osSource adapts an *os.File, whose Fd has no error result, to Source.
type osSource struct{ *os.File }

func (s osSource) Fd() (uintptr, error) { return s.File.Fd(), nil }

var errNoFd = errors.New("test: no descriptor")

// memSource is a Source without a descriptor, like an in-memory file.
type memSource struct{ *bytes.Reader }

func (memSource) Fd() (uintptr, error) { return 0, errNoFd }

// fixture writes size pseudo-random bytes (fixed seed) to a new file and
// returns it open for reading and writing, with the bytes it holds.
func fixture(t testing.TB, size int) (osSource, []byte) {
	t.Helper()
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{'s', 'e', 'g', 'l', 'o', 'g'}).Read(data)
	f := createFile(t, "fixture", 0)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return osSource{f}, data
}

// createFile creates a file in a fresh temporary directory. sendfile needs a
// real descriptor, and this package may not import seglog's vfs,
// so the tests open files with the os package directly.
func createFile(t testing.TB, name string, extraFlags int) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|extraFlags, 0o600) //vfs:allow sendfile tests need a real fd; importing vfs is forbidden here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (sender, receiver *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	a := <-ch
	if a.err != nil {
		c.Close()
		t.Fatal(a.err)
	}
	t.Cleanup(func() { c.Close(); a.c.Close() })
	return c.(*net.TCPConn), a.c.(*net.TCPConn)
}

// received is what a receiver goroutine saw.
type received struct {
	n   int64
	sum [sha256.Size]byte
	err error
}

// receive reads exactly n bytes from r in the background (all of r until
// EOF if n < 0) and reports their count and SHA-256.
func receive(r io.Reader, n int64) <-chan received {
	ch := make(chan received, 1)
	go func() {
		h := sha256.New()
		var got int64
		var err error
		if n < 0 {
			got, err = io.Copy(h, r)
		} else {
			got, err = io.CopyN(h, r, n)
		}
		var res received
		res.n, res.err = got, err
		h.Sum(res.sum[:0])
		ch <- res
	}()
	return ch
}

// checkReceived fails unless res is exactly want, intact.
func checkReceived(t testing.TB, res received, want []byte) {
	t.Helper()
	if res.err != nil {
		t.Fatalf("receiver: %v", res.err)
	}
	if res.n != int64(len(want)) {
		t.Fatalf("receiver got %d bytes, want %d", res.n, len(want))
	}
	if res.sum != sha256.Sum256(want) {
		t.Fatalf("receiver got %d bytes with a different SHA-256", res.n)
	}
}

// deadline bounds a transfer that a bug could make hang, so the test fails
// instead of timing out.
func deadline() time.Time { return time.Now().Add(20 * time.Second) }

func sha(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}
