package server

import (
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"testing"

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
