package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seglog/seglog/vfs"
)

// saslServer serves with every mechanism on, and users alice (password
// "alice-pw") for each mechanism.
func saslServer(t *testing.T) (*testServer, *Credentials) {
	t.Helper()
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range Mechanisms {
		if err := creds.SetPassword("alice", m, "alice-pw", 0); err != nil {
			t.Fatal(err)
		}
	}
	ts := startServer(t, "", Options{SASL: &SASLConfig{Mechanisms: Mechanisms, Credentials: creds}, SuperUsers: []string{"alice"}})
	return ts, creds
}

func TestSASLProduceConsume(t *testing.T) {
	ts, _ := saslServer(t)
	for _, c := range []struct {
		name string
		mech sasl.Mechanism
	}{
		{"plain", plain.Auth{User: "alice", Pass: "alice-pw"}.AsMechanism()},
		{"scram-sha-256", scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()},
		{"scram-sha-512", scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism()},
	} {
		t.Run(c.name, func(t *testing.T) {
			topic := "sasl-" + c.name
			cl := ts.client(kgo.SASL(c.mech), kgo.AllowAutoTopicCreation())
			want := produceRecords(t, cl, topic, 10, c.name)
			sameRecords(t, want, consumeAll(t, ts.addr, topic, 10, kgo.SASL(c.mech)))
		})
	}
}

func TestSASLWrongPasswordRefused(t *testing.T) {
	ts, _ := saslServer(t)
	for _, mech := range []sasl.Mechanism{
		plain.Auth{User: "alice", Pass: "wrong"}.AsMechanism(),
		scram.Auth{User: "alice", Pass: "wrong"}.AsSha256Mechanism(),
		scram.Auth{User: "alice", Pass: "wrong"}.AsSha512Mechanism(),
		scram.Auth{User: "mallory", Pass: "alice-pw"}.AsSha256Mechanism(),
	} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.SASL(mech), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = cl.Ping(ctx)
		cancel()
		cl.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Errorf("%s: ping = %v, want SASL_AUTHENTICATION_FAILED", mech.Name(), err)
		}
	}
}

// A request other than ApiVersions and SASL's before authentication
// closes the connection unanswered; ApiVersions is answered and lists the
// SASL keys.
func TestSASLRequestBeforeAuthRefused(t *testing.T) {
	ts, _ := saslServer(t)
	c := dialRaw(t, ts.addr)
	av := c.do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	found := 0
	for _, k := range av.ApiKeys {
		if k.ApiKey == saslHandshakeKey || k.ApiKey == saslAuthenticateKey {
			found++
		}
	}
	if found != 2 {
		t.Fatalf("ApiVersions lists %d of the two SASL keys", found)
	}
	c.send(kmsg.NewPtrMetadataRequest())
	c.expectClosed()

	// Authenticate before a handshake: closed too.
	c = dialRaw(t, ts.addr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-pw")
	c.send(auth)
	c.expectClosed()
}

// SaslHandshake v0 (before KIP-152): the tokens then go unframed.
func TestSASLHandshakeV0PlainRaw(t *testing.T) {
	ts, _ := saslServer(t)
	c := dialRaw(t, ts.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 0
	hs.Mechanism = MechanismPlain
	if r := c.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: error %d", r.ErrorCode)
	}
	token := []byte("\x00alice\x00alice-pw")
	if _, err := c.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...)); err != nil {
		t.Fatal(err)
	}
	// PLAIN's success has no answer in v0; the next request is served.
	if r := c.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
		t.Fatalf("metadata after a v0 PLAIN login: %d brokers", len(r.Brokers))
	}
}

func TestSASLUnsupportedMechanism(t *testing.T) {
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, "", Options{SASL: &SASLConfig{Mechanisms: []string{MechanismSCRAMSHA512}, Credentials: creds}})
	c := dialRaw(t, ts.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = MechanismPlain
	r := c.do(hs).(*kmsg.SASLHandshakeResponse)
	if r.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(r.SupportedMechanisms) != 1 || r.SupportedMechanisms[0] != MechanismSCRAMSHA512 {
		t.Fatalf("handshake for a mechanism not enabled: %+v", r)
	}
}

// Hostile frames before authentication: oversized, malformed SCRAM, a
// length longer than what is sent. Each closes the connection (after a
// SASL_AUTHENTICATION_FAILED answer for a message that parses as a
// request), nothing panics, and the server still serves.
func TestSASLHostileFrames(t *testing.T) {
	ts, _ := saslServer(t)
	// Larger than SASL's bound: closed before it is read.
	c := dialRaw(t, ts.addr)
	c.nc.Write(binary.BigEndian.AppendUint32(nil, maxSASLFrame+1))
	c.expectClosed()

	for _, msg := range [][]byte{
		nil,
		[]byte("p=tls-unique,,n=alice,r=abc"),
		[]byte("n,,n=alice"),
		[]byte("n,,n=al=ZZice,r=abc"),
		[]byte("n,,m=x,n=alice,r=abc"),
		bytes.Repeat([]byte{0xff}, 1000),
	} {
		c := dialRaw(t, ts.addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version = 1
		hs.Mechanism = MechanismSCRAMSHA256
		c.do(hs)
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = msg
		r := c.do(auth).(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Errorf("client-first %q: error %d, want SASL_AUTHENTICATION_FAILED", msg, r.ErrorCode)
		}
		c.expectClosed()
	}

	// A SaslAuthenticate whose body does not parse.
	c = dialRaw(t, ts.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = MechanismPlain
	c.do(hs)
	b, _ := c.frame(kmsg.NewPtrSASLAuthenticateRequest())
	b = append(b[:len(b)-4], 0x7f, 0xff, 0xff) // the bytes' length claims more than follows
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.nc.Write(b)
	c.expectClosed()

	// The server still answers a good login.
	cl := ts.client(kgo.SASL(scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()))
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// A SCRAM client-final message with a proof made from the wrong
// password, or a nonce other than the server's, fails.
func TestSCRAMExchangeRefusals(t *testing.T) {
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	if err := creds.SetPassword("bob", MechanismSCRAMSHA256, "pw", 0); err != nil {
		t.Fatal(err)
	}
	lookup := func(u string) (Credential, bool) { return creds.Lookup(u, MechanismSCRAMSHA256) }
	x := &scramExchange{mech: MechanismSCRAMSHA256, lookup: lookup}
	sf, err := x.first([]byte("n,,n=bob,r=clientnonce"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(sf), "r=clientnonce") || !strings.Contains(string(sf), ",i=4096") {
		t.Fatalf("server-first %q", sf)
	}
	if _, err := x.final([]byte("c=biws,r=clientnonce-other,p=AAAA")); err == nil || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("a foreign nonce: %v", err)
	}
	if _, err := x.final([]byte("c=biws,r=" + x.nonce + ",p=" + strings.Repeat("A", 43) + "=")); err == nil || !strings.Contains(err.Error(), "wrong password") {
		t.Fatalf("a wrong proof: %v", err)
	}
	if _, err := x.final([]byte("c=eSws,r=" + x.nonce + ",p=AAAA")); err == nil || !strings.Contains(err.Error(), "channel binding") {
		t.Fatalf("a channel binding other than the first message's: %v", err)
	}
}

// The limiter refuses an address after max failures in a window, lets it
// try again in the next window, and counts addresses apart.
func TestLoginLimiter(t *testing.T) {
	l := newLoginLimiter(3, time.Minute)
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if !l.allow("10.0.0.1", t0) {
			t.Fatalf("refused after %d failures", i)
		}
		l.failed("10.0.0.1", t0.Add(time.Duration(i)*time.Second))
	}
	if l.allow("10.0.0.1", t0.Add(10*time.Second)) {
		t.Fatal("allowed after 3 failures in the window")
	}
	if !l.allow("10.0.0.2", t0.Add(10*time.Second)) {
		t.Fatal("another address refused")
	}
	if !l.allow("10.0.0.1", t0.Add(time.Minute)) {
		t.Fatal("refused in the next window")
	}
	// Bounded: a flood of addresses never grows the map past its cap.
	for i := range maxLimitedHosts + 100 {
		l.failed(string(rune(i))+"x", t0)
	}
	if len(l.hosts) > maxLimitedHosts {
		t.Fatalf("%d addresses held, more than %d", len(l.hosts), maxLimitedHosts)
	}
}

// A server's limiter refuses logins once an address has failed enough,
// even with the right password.
func TestSASLLoginsRateLimited(t *testing.T) {
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	if err := creds.SetPassword("alice", MechanismPlain, "alice-pw", 0); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, "", Options{SASL: &SASLConfig{Mechanisms: Mechanisms, Credentials: creds, MaxFailures: 2, FailureWindow: time.Hour}})
	login := func(pw string) (int16, string) {
		c := dialRaw(t, ts.addr)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version = 1
		hs.Mechanism = MechanismPlain
		c.do(hs)
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.SASLAuthBytes = []byte("\x00alice\x00" + pw)
		r := c.do(auth).(*kmsg.SASLAuthenticateResponse)
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return r.ErrorCode, msg
	}
	if code, _ := login("alice-pw"); code != 0 {
		t.Fatalf("right password: error %d", code)
	}
	login("bad")
	login("bad")
	if code, msg := login("alice-pw"); code != kerr.SaslAuthenticationFailed.Code || !strings.Contains(msg, "too many") {
		t.Fatalf("after two failures: error %d %q, want refused as too many", code, msg)
	}
}

// The 64 KiB bound holds only before authentication: a logged-in
// producer's large request is served.
func TestSASLLargeRequestAfterAuth(t *testing.T) {
	ts, _ := saslServer(t)
	mech := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha512Mechanism()
	cl := ts.client(kgo.SASL(mech), kgo.AllowAutoTopicCreation(), kgo.ProducerBatchMaxBytes(2<<20))
	big := &kgo.Record{Topic: "big", Value: bytes.Repeat([]byte("v"), 1<<20)}
	if err := cl.ProduceSync(testCtx(t), big).FirstErr(); err != nil {
		t.Fatalf("a 1 MiB record after authentication: %v", err)
	}
	got := consumeAll(t, ts.addr, "big", 1, kgo.SASL(mech))
	if len(got[0].Value) != 1<<20 {
		t.Fatalf("read back %d bytes", len(got[0].Value))
	}
}

// TestSASLLoginTimeout: with SASL on, a connection that has not logged in
// loginTimeout after it was accepted is closed, whether it sent nothing,
// only ApiVersions, or half a frame; one that logged in stays.
func TestSASLLoginTimeout(t *testing.T) {
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	if err := creds.SetPassword("alice", MechanismPlain, "alice-pw", 0); err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	ts := startServer(t, "", Options{SASL: &SASLConfig{Mechanisms: Mechanisms, Credentials: creds, clock: clk}})

	silent := dialRaw(t, ts.addr)
	asked := dialRaw(t, ts.addr)
	asked.do(kmsg.NewPtrApiVersionsRequest())
	partial := dialRaw(t, ts.addr)
	if _, err := partial.nc.Write([]byte{0, 0, 0, 100, 0, 17}); err != nil {
		t.Fatal(err)
	}
	in := dialRaw(t, ts.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1 // the token then goes in SaslAuthenticate
	hs.Mechanism = MechanismPlain
	if r := in.do(hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("handshake: error %d", r.ErrorCode)
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SASLAuthBytes = []byte("\x00alice\x00alice-pw")
	if r := in.do(auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
		t.Fatalf("authenticate: error %d", r.ErrorCode)
	}
	// The three that have not logged in have their timers armed; the
	// logged-in one's is stopped.
	clk.WaitForTimers(t, 3)

	clk.Advance(loginTimeout - time.Nanosecond)
	asked.do(kmsg.NewPtrApiVersionsRequest()) // not yet
	clk.Advance(time.Nanosecond)
	for name, c := range map[string]*rawConn{"silent": silent, "asked": asked, "partial": partial} {
		t.Run(name, func(t *testing.T) { c.t = t; c.expectClosed() })
	}
	if r := in.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
		t.Fatalf("metadata after the login timeout on a logged-in connection: %d brokers", len(r.Brokers))
	}
	if n := len(clk.Pending()); n != 0 {
		t.Errorf("%d timers still armed", n)
	}
}
