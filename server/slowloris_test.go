package server

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/testutil"
)

// dribblers are clients that each claim a large request and send it a
// byte at a time: one goroutine paces them all, and sees the server close
// them (one each would weigh on the memory the test measures), until
// stop.
type dribblers struct {
	conns  []net.Conn
	closed atomic.Int64 // connections the server closed (a write failed)
	stop   chan struct{}
	wg     sync.WaitGroup
}

// claimRequest is the start of a request claiming size bytes: its size
// and the first bytes of a Metadata v12 header.
func claimRequest(size int) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(size)), 0, 3, 0, 12, 0, 0, 0, 1)
}

// startDribblers dials n connections to addr, sends each start, then one
// more byte on each every tick.
func startDribblers(t *testing.T, addr string, n int, start []byte) *dribblers {
	t.Helper()
	d := &dribblers{stop: make(chan struct{})}
	for range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(start); err != nil {
			t.Fatal(err)
		}
		d.conns = append(d.conns, nc)
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		tick := time.NewTicker(10 * time.Millisecond) // the client's pace, not a wait for a condition
		defer tick.Stop()
		ended := make([]bool, len(d.conns))
		for {
			select {
			case <-d.stop:
				return
			case <-tick.C:
			}
			for i, nc := range d.conns {
				// The server's close makes a write fail (a reset
				// once the first after it arrives).
				if !ended[i] {
					if _, err := nc.Write([]byte{0}); err != nil {
						ended[i] = true
						d.closed.Add(1)
					}
				}
			}
		}
	}()
	t.Cleanup(d.close)
	return d
}

func (d *dribblers) close() {
	select {
	case <-d.stop:
		return
	default:
	}
	close(d.stop)
	for _, nc := range d.conns {
		nc.Close()
	}
	d.wg.Wait()
}

// TestDribblingClientsBounded: clients claiming 1 MiB requests and sending
// them a byte at a time hold about what they sent (not what they
// claimed), and a real client produces and consumes meanwhile.
func TestDribblingClientsBounded(t *testing.T) {
	const n = 200
	ts := startServer(t, "", Options{RequestReadTimeout: 10 * time.Minute})
	m0 := memInUse()
	d := startDribblers(t, ts.addr, n, claimRequest(1<<20))
	testutil.WaitBlocked(t, "the server reads every dribbled request", "server.readGrowing(", n)
	perConn := float64(memInUse()-m0) / n
	t.Logf("%d dribbling clients: %.0f bytes each", n, perConn)
	// An idle connection's ~5.4 KB, readGrowing's first 4 KiB, and the
	// client end in this process; the 1 MiB claimed would be 64 times.
	if perConn > 16<<10 {
		t.Errorf("a dribbling client costs %.0f bytes, more than 16 KiB", perConn)
	}

	cl := ts.client(kgo.AllowAutoTopicCreation())
	want := produceRecords(t, cl, "beside-dribblers", 50, "dribble")
	sameRecords(t, want, consumeAll(t, ts.addr, "beside-dribblers", 50))
	if c := d.closed.Load(); c != 0 {
		t.Fatalf("%d dribbling clients closed within the request read timeout", c)
	}
}

// TestDribblingClientsClosed: a request must arrive whole within
// RequestReadTimeout of its size, however steadily its bytes come: each
// dribbling client is closed, while a connection that waits between
// requests is not (that wait is the idle timeout's).
func TestDribblingClientsClosed(t *testing.T) {
	const n = 50
	ts := startServer(t, "", Options{RequestReadTimeout: 200 * time.Millisecond})
	idle := dialRaw(t, ts.addr)
	idle.do(kmsg.NewPtrApiVersionsRequest())
	d := startDribblers(t, ts.addr, n, claimRequest(1<<20))
	testutil.WaitFor(t, "every dribbling client is closed", func() bool { return d.closed.Load() == n })
	if r := idle.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
		t.Fatalf("the idle connection: metadata with %d brokers", len(r.Brokers))
	}
	testutil.WaitFor(t, "the server ends the dribbling connections", func() bool {
		return ts.srv.metrics.connsOpen.Load() == 1
	})
}

// TestTLSHandshakeBounded: a client that starts a TLS handshake and
// dribbles it is closed at RequestReadTimeout, not left for the idle
// timeout.
func TestTLSHandshakeBounded(t *testing.T) {
	pki := testutil.NewPKI(t)
	ts := startServer(t, "", Options{TLS: serverTLS(t, pki, false), RequestReadTimeout: 200 * time.Millisecond})
	// A handshake record claiming 16 KiB, its bytes to come one by one.
	d := startDribblers(t, ts.addr, 5, []byte{0x16, 0x03, 0x01, 0x40, 0x00, 0x01})
	testutil.WaitFor(t, "every dribbling client is closed", func() bool { return d.closed.Load() == 5 })
	cl := ts.client(kgo.DialTLSConfig(pki.ClientTLS(t, false)))
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatalf("a TLS client beside them: %v", err)
	}
}
