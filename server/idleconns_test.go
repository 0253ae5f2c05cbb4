package server

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/testutil"
)

// memInUse is the heap in use and the goroutine stacks, after collecting
// garbage: what idle connections cost the server in memory.
func memInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}

// openIdle dials n connections to ts and waits until the server serves
// them all.
func openIdle(tb testing.TB, ts *testServer, n int) []net.Conn {
	tb.Helper()
	base := ts.srv.metrics.connsOpen.Load()
	conns := make([]net.Conn, 0, n)
	for range n {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, nc)
	}
	testutil.WaitFor(tb, "the server serves every connection", func() bool {
		return ts.srv.metrics.connsOpen.Load() == base+int64(n)
	})
	return conns
}

// BenchmarkIdleConnection reports what one idle connection costs the
// server: bytes of heap and stack, and goroutines. Both ends are in this
// process, so the bytes include the client's socket (a few hundred
// bytes); the 10,000-connection test measures the server alone.
// "fresh" connections sent nothing; "used" ones were each answered a
// Metadata request first, as a client's are before it idles.
func BenchmarkIdleConnection(b *testing.B) {
	b.Run("fresh", func(b *testing.B) { benchIdle(b, false) })
	b.Run("used", func(b *testing.B) { benchIdle(b, true) })
}

func benchIdle(b *testing.B, used bool) {
	const n = 1000
	ts := startServer(b, "", Options{})
	var bytes, gs float64
	for range b.N {
		g0, m0 := runtime.NumGoroutine(), memInUse()
		conns := openIdle(b, ts, n)
		if used {
			for _, nc := range conns {
				askMetadata(b, nc)
			}
		}
		m1, g1 := memInUse(), runtime.NumGoroutine()
		bytes += float64(m1-m0) / n
		gs += float64(g1-g0) / n
		for _, c := range conns {
			c.Close()
		}
		testutil.WaitFor(b, "the connections end", func() bool { return ts.srv.metrics.connsOpen.Load() == 0 })
	}
	b.ReportMetric(bytes/float64(b.N), "bytes/conn")
	b.ReportMetric(gs/float64(b.N), "goroutines/conn")
}

// askMetadata sends a Metadata request on nc and reads the answer.
func askMetadata(tb testing.TB, nc net.Conn) {
	tb.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.Version))
	b = binary.BigEndian.AppendUint32(b, 1)
	b = append(b, 0xff, 0xff, 0) // null client id, no tags
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := nc.Write(b); err != nil {
		tb.Fatal(err)
	}
	var hdr [4]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		tb.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(hdr[:]))); err != nil {
		tb.Fatal(err)
	}
}

// raiseFileLimit makes room for need descriptors in this process, raising
// the soft limit up to the hard one. A hard limit too low skips the test
// with the reason, except under CI=true, where it must run.
func raiseFileLimit(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		msg := fmt.Sprintf("needs %d file descriptors, the hard limit (ulimit -Hn) is %d", need, lim.Max)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}

// The child process of TestTenThousandIdleConnections holds the client
// ends, so that each process needs one descriptor a connection (both
// ends in one would need twice the limit most machines have) and the
// parent's memory is the server's alone.
const (
	holdIdleAddr = "SEGLOG_TEST_HOLD_IDLE_ADDR"
	holdIdleN    = "SEGLOG_TEST_HOLD_IDLE_N"
)

// TestHoldIdleChild is the child: it dials the connections, says so on
// standard output, and holds them until its standard input closes.
func TestHoldIdleChild(t *testing.T) {
	addr := os.Getenv(holdIdleAddr)
	if addr == "" {
		t.Skip("the child of TestTenThousandIdleConnections")
	}
	n, err := strconv.Atoi(os.Getenv(holdIdleN))
	if err != nil {
		t.Fatal(err)
	}
	raiseFileLimit(t, uint64(n)+64)
	conns := make([]net.Conn, 0, n)
	for range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d: %v", len(conns), err)
		}
		conns = append(conns, nc)
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
	for _, nc := range conns {
		nc.Close()
	}
}

// TestTenThousandIdleConnections: ten thousand connections that send
// nothing cost the server one goroutine and a few KB each, well under 16
// KiB (heap and stacks after a collection), and a real client produces
// and consumes meanwhile.
func TestTenThousandIdleConnections(t *testing.T) {
	const n = 10000
	raiseFileLimit(t, n+512)
	ts := startServer(t, "", Options{MaxConnections: n + 100, MaxConnectionsPerIP: n + 100})
	g0, m0 := runtime.NumGoroutine(), memInUse()
	child := exec.Command(os.Args[0], "-test.run=^TestHoldIdleChild$", "-test.v")
	child.Env = append(os.Environ(), holdIdleAddr+"="+ts.addr, holdIdleN+"="+strconv.Itoa(n))
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		child.Wait()
	})
	held := false
	for sc := bufio.NewScanner(stdout); sc.Scan(); {
		if sc.Text() == "held" {
			held = true
			break
		}
	}
	if !held {
		t.Fatalf("the child did not hold its connections: %v", child.Wait())
	}
	go io.Copy(io.Discard, stdout)
	testutil.WaitFor(t, "the server serves every connection", func() bool {
		return ts.srv.metrics.connsOpen.Load() == n
	})
	m1, g1 := memInUse(), runtime.NumGoroutine()
	perConn := float64(m1-m0) / n
	t.Logf("%d idle connections: %.0f bytes and %.3f goroutines each", n, perConn, float64(g1-g0)/n)
	if perConn > 16<<10 {
		t.Errorf("an idle connection costs %.0f bytes, more than 16 KiB", perConn)
	}
	if g1-g0 > n+n/100 {
		t.Errorf("%d goroutines for %d idle connections, want one each", g1-g0, n)
	}

	cl := ts.client(kgo.AllowAutoTopicCreation())
	want := produceRecords(t, cl, "beside-idle", 50, "idle")
	sameRecords(t, want, consumeAll(t, ts.addr, "beside-idle", 50))

	stdin.Close()
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	cl.Close()
	testutil.WaitFor(t, "every connection ends", func() bool {
		return ts.srv.metrics.connsOpen.Load() == 0
	})
}

// dialFrom connects to addr from the loopback address ip (127.0.0.0/8 is
// all loopback on Linux), as if from another host.
func dialFrom(t *testing.T, ip, addr string) *rawConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

// TestMaxConnections: a connection over MaxConnectionsPerIP from its
// address, or over MaxConnections in all, is closed as it is accepted and
// counted; the others are served, and a connection closing makes room.
func TestMaxConnections(t *testing.T) {
	ts := startServer(t, "", Options{MaxConnections: 4, MaxConnectionsPerIP: 2})
	served := func(c *rawConn) {
		t.Helper()
		askMetadata(t, c.nc)
	}
	a1, a2 := dialFrom(t, "127.0.0.1", ts.addr), dialFrom(t, "127.0.0.1", ts.addr)
	served(a1)
	served(a2)
	dialFrom(t, "127.0.0.1", ts.addr).expectClosed() // a third from one address
	b1, b2 := dialFrom(t, "127.0.0.2", ts.addr), dialFrom(t, "127.0.0.2", ts.addr)
	served(b1)
	served(b2)
	dialFrom(t, "127.0.0.3", ts.addr).expectClosed() // a fifth in all
	if m := ts.srv.Metrics(); m.ConnectionsRefused != 2 || m.ConnectionsOpen != 4 {
		t.Fatalf("%d refused, %d open; want 2 and 4", m.ConnectionsRefused, m.ConnectionsOpen)
	}
	a1.nc.Close()
	testutil.WaitFor(t, "the closed connection is uncounted", func() bool {
		return ts.srv.metrics.connsOpen.Load() == 3
	})
	served(dialFrom(t, "127.0.0.1", ts.addr))
	served(a2)
}
