package server

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
)

// roundTrip sends req (header v1, non-flexible versions only) on nc and
// reads its answer; it reports errors instead of failing the test, for
// the many goroutines of a flood.
func roundTrip(nc net.Conn, req kmsg.Request) (kmsg.Response, error) {
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	if _, err := nc.Write(b); err != nil {
		return nil, err
	}
	var hdr [4]byte
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	if _, err := io.ReadFull(nc, body); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp, resp.ReadFrom(body[4:])
}

// failSCRAM logs in from ip as alice with SCRAM-SHA-256 and a proof no
// password makes, and checks that the server refuses (at the first
// message once the address is limited, else at the proof) and closes.
func failSCRAM(ip, addr string) error {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = MechanismSCRAMSHA256
	if _, err := roundTrip(nc, hs); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("n,,n=alice,r=floodnonce")
	resp, err := roundTrip(nc, auth)
	if err != nil {
		return fmt.Errorf("client-first: %w", err)
	}
	r := resp.(*kmsg.SASLAuthenticateResponse)
	if r.ErrorCode == 0 {
		nonce, _, _ := strings.Cut(strings.TrimPrefix(string(r.SASLAuthBytes), "r="), ",")
		auth.SASLAuthBytes = []byte("c=biws,r=" + nonce + ",p=" + base64.StdEncoding.EncodeToString(make([]byte, 32)))
		if resp, err = roundTrip(nc, auth); err != nil {
			return fmt.Errorf("client-final: %w", err)
		}
		r = resp.(*kmsg.SASLAuthenticateResponse)
	}
	if r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		return fmt.Errorf("error %d, want SASL_AUTHENTICATION_FAILED", r.ErrorCode)
	}
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		return errors.New("connection still open after a failed login")
	}
	return nil
}

// TestSASLFailedLoginFlood: many connections from many addresses failing
// SCRAM logins at once are all refused and closed; the limiter holds no
// more addresses than its bound, and a flood leaves no memory or
// goroutines behind; a flooding address is refused even with the right
// password, another logs in.
func TestSASLFailedLoginFlood(t *testing.T) {
	const (
		addrs    = 24
		perAddr  = 12
		maxHosts = 16
	)
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	if err := creds.SetPassword("alice", MechanismSCRAMSHA256, "alice-pw", 0); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, "", Options{SASL: &SASLConfig{Mechanisms: Mechanisms, Credentials: creds,
		MaxFailures: 3, FailureWindow: time.Hour}})
	l := ts.srv.logins
	l.mu.Lock()
	l.maxHosts = maxHosts
	l.mu.Unlock()
	// A first flood grows what the server keeps for any connections
	// (its maps, its pools); a second must leave no more behind.
	flood(t, ts, addrs, perAddr)
	g0, h0 := runtime.NumGoroutine(), heapInUse()
	flood(t, ts, addrs, perAddr)
	testutil.WaitFor(t, "the flood's goroutines end", func() bool { return runtime.NumGoroutine() <= g0 })
	grew := heapInUse() - h0
	t.Logf("a second flood of %d failed logins: heap %+d bytes", addrs*perAddr, grew)
	if grew > 64<<10 {
		t.Errorf("%d more failed logins left %d bytes of heap behind", addrs*perAddr, grew)
	}
	l.mu.Lock()
	held := len(l.hosts)
	l.mu.Unlock()
	if held > maxHosts {
		t.Errorf("the limiter holds %d addresses, more than its %d", held, maxHosts)
	}

	// The last address to fail is limited, whatever the password.
	last := "127.0.2.1"
	for range 3 {
		if err := failSCRAM(last, ts.addr); err != nil {
			t.Fatal(err)
		}
	}
	mech := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()
	limited := dialFrom(t, last, ts.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = MechanismSCRAMSHA256
	limited.do(hs)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("n,,n=alice,r=abc")
	if r := limited.do(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != kerr.SaslAuthenticationFailed.Code ||
		r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "too many") {
		t.Fatalf("a limited address: error %d, want refused as too many failures", r.ErrorCode)
	}
	// Another address logs in.
	cl := ts.client(kgo.SASL(mech), kgo.DialTimeout(time.Minute))
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatalf("a login from another address during the flood's window: %v", err)
	}
}

// flood fails SCRAM logins from addrs addresses, perAddr connections
// each, all at once, and waits until the server has ended them.
func flood(t *testing.T, ts *testServer, addrs, perAddr int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, addrs*perAddr)
	for a := range addrs {
		for range perAddr {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := failSCRAM(fmt.Sprintf("127.0.1.%d", a+1), ts.addr); err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	testutil.WaitFor(t, "every flooding connection ends", func() bool {
		return ts.srv.metrics.connsOpen.Load() == 0
	})
}

// heapInUse is the heap in use after collecting garbage. Stacks are left
// out: those of ended goroutines stay cached for the next ones.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// addrConn is a net.Conn with only a remote address, for limiterKey.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// Failed logins are counted per IPv4 address and per IPv6 /64: a host
// hopping between the addresses of its /64 is one to the limiter.
func TestLimiterKey(t *testing.T) {
	key := func(ip string) string {
		return limiterKey(addrConn{remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 9092}})
	}
	if a, b := key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::7"); a != b || a != "2001:db8:1:2::/64" {
		t.Errorf("one /64: keys %q and %q", a, b)
	}
	if a, b := key("2001:db8:1:2::1"), key("2001:db8:1:3::1"); a == b {
		t.Errorf("two /64s share the key %q", a)
	}
	if a, b := key("10.0.0.1"), key("10.0.0.2"); a == b || a != "10.0.0.1" {
		t.Errorf("IPv4 keys %q and %q", a, b)
	}
}
