package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/seglog/seglog/vfs"
)

// reauthServer serves with every mechanism, users alice and bob (passwords
// "alice-pw" and "bob-pw"), and logins lasting lifetime, timed by clk (nil:
// the real clock).
func reauthServer(t *testing.T, lifetime time.Duration, clk clock) *testServer {
	t.Helper()
	creds, err := LoadCredentials(vfs.NewMem(), "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"alice", "bob"} {
		for _, m := range Mechanisms {
			if err := creds.SetPassword(user, m, user+"-pw", 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Super users: ACLs, which SASL turns on, are not what these tests
	// are about.
	return startServer(t, "", Options{SASL: &SASLConfig{Mechanisms: Mechanisms, Credentials: creds,
		SessionLifetime: lifetime, clock: clk}, SuperUsers: []string{"alice", "bob"}})
}

// plainLogin logs c in with PLAIN (SaslHandshake v1, SaslAuthenticate v2)
// and returns the answers; the handshake's error, if any, is returned in
// a nil authenticate answer.
func plainLogin(c *rawConn, mech, user, pw string) (*kmsg.SASLHandshakeResponse, *kmsg.SASLAuthenticateResponse) {
	c.t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = mech
	hr := c.do(hs).(*kmsg.SASLHandshakeResponse)
	if hr.ErrorCode != 0 {
		return hr, nil
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 2
	auth.SASLAuthBytes = []byte("\x00" + user + "\x00" + pw)
	return hr, c.do(auth).(*kmsg.SASLAuthenticateResponse)
}

func metadataServed(c *rawConn) {
	c.t.Helper()
	if r := c.do(kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse); len(r.Brokers) != 1 {
		c.t.Fatalf("metadata: %d brokers", len(r.Brokers))
	}
}

// TestSASLReauthentication (KIP-368): SaslAuthenticate tells the client
// the session's lifetime; logging in again on the connection, as the same
// user, renews it; a connection whose session ended is closed at its next
// request; logging in again as another user, or with another mechanism,
// closes the connection.
func TestSASLReauthentication(t *testing.T) {
	clk := newFakeClock()
	ts := reauthServer(t, time.Minute, clk)

	// Another user: refused, and the connection closed.
	other := dialRaw(t, ts.addr)
	if _, r := plainLogin(other, MechanismPlain, "alice", "alice-pw"); r.ErrorCode != 0 {
		t.Fatalf("login: error %d", r.ErrorCode)
	}
	if _, r := plainLogin(other, MechanismPlain, "bob", "bob-pw"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("re-authentication as another user: error %d, want SASL_AUTHENTICATION_FAILED", r.ErrorCode)
	}
	other.expectClosed()

	// Another mechanism: refused at the handshake, and closed.
	mech := dialRaw(t, ts.addr)
	plainLogin(mech, MechanismPlain, "alice", "alice-pw")
	if hr, _ := plainLogin(mech, MechanismSCRAMSHA256, "alice", "alice-pw"); hr.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("re-authentication with another mechanism: error %d, want ILLEGAL_SASL_STATE", hr.ErrorCode)
	}
	mech.expectClosed()

	c := dialRaw(t, ts.addr)
	_, r := plainLogin(c, MechanismPlain, "alice", "alice-pw")
	if r.ErrorCode != 0 || r.SessionLifetimeMillis != time.Minute.Milliseconds() {
		t.Fatalf("login: error %d, session lifetime %d ms; want 0 and a minute", r.ErrorCode, r.SessionLifetimeMillis)
	}
	metadataServed(c)
	clk.Advance(time.Minute - time.Second)
	metadataServed(c)
	if _, r := plainLogin(c, MechanismPlain, "alice", "alice-pw"); r.ErrorCode != 0 || r.SessionLifetimeMillis != time.Minute.Milliseconds() {
		t.Fatalf("re-authentication: error %d, session lifetime %d ms", r.ErrorCode, r.SessionLifetimeMillis)
	}
	if n := ts.srv.saslReauths.Load(); n != 1 {
		t.Fatalf("%d re-authentications counted, want 1", n)
	}
	// Past the first login's end, within the second's.
	clk.Advance(time.Minute - time.Second)
	metadataServed(c)
	clk.Advance(time.Second)
	c.send(kmsg.NewPtrMetadataRequest())
	c.expectClosed()
	if n := ts.srv.saslExpired.Load(); n != 1 {
		t.Fatalf("%d connections closed for an ended session, want 1", n)
	}

	// Ended, a SaslHandshake is too late as well: the client logs in
	// again before the end, as KIP-368 asks.
	late := dialRaw(t, ts.addr)
	plainLogin(late, MechanismPlain, "alice", "alice-pw")
	clk.Advance(time.Minute)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = MechanismPlain
	late.send(hs)
	late.expectClosed()
}

// Without a lifetime, a login lasts as long as the connection, and
// SaslAuthenticate says nothing of one.
func TestSASLNoSessionLifetime(t *testing.T) {
	clk := newFakeClock()
	ts := reauthServer(t, 0, clk)
	c := dialRaw(t, ts.addr)
	if _, r := plainLogin(c, MechanismPlain, "alice", "alice-pw"); r.ErrorCode != 0 || r.SessionLifetimeMillis != 0 {
		t.Fatalf("login: error %d, session lifetime %d ms; want 0 and none", r.ErrorCode, r.SessionLifetimeMillis)
	}
	clk.Advance(1000 * time.Hour)
	metadataServed(c)
}

// TestSASLReauthenticationKgo: kgo logs in again by itself before the
// session the broker gave it ends, on the same connection, and a
// long-lived producer goes on producing across several lifetimes.
func TestSASLReauthenticationKgo(t *testing.T) {
	// kgo logs in again a second before the end (its least margin), so
	// a two-second lifetime has it do so every second or so.
	ts := reauthServer(t, 2*time.Second, nil)
	mech := scram.Auth{User: "alice", Pass: "alice-pw"}.AsSha256Mechanism()
	cl := ts.client(kgo.SASL(mech), kgo.AllowAutoTopicCreation())
	ctx := testCtx(t)
	var want []*kgo.Record
	produce := func() {
		t.Helper()
		r := &kgo.Record{Topic: "reauth", Value: fmt.Appendf(nil, "r%d", len(want)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("reauth")}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("record %d: %v", len(want), err)
		}
		want = append(want, r)
	}
	produce()
	accepted := ts.srv.metrics.connsAccepted.Load()
	for ts.srv.saslReauths.Load() < 3 {
		produce()
	}
	if n := ts.srv.metrics.connsAccepted.Load(); n != accepted {
		t.Errorf("%d connections accepted while producing, want none: kgo logged in again on new ones", n-accepted)
	}
	if n := ts.srv.saslExpired.Load(); n != 0 {
		t.Errorf("%d connections closed for an ended session", n)
	}
	sameRecords(t, want, consumeAll(t, ts.addr, "reauth", len(want), kgo.SASL(mech)))
}
