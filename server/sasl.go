package server

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASLConfig turns on SASL authentication (Options.SASL): every
// connection must authenticate, with one of Mechanisms and a credential of
// Credentials, before any request but ApiVersions, SaslHandshake and
// SaslAuthenticate; any other request before that closes the
// connection, as Kafka does. With Options.Cluster, Credentials must be
// the cluster's (the replicated metadata), not a node's file: New
// refuses a *Credentials there.
type SASLConfig struct {
	// Mechanisms are those clients may use: PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512.
	Mechanisms []string
	// Credentials are the users: LoadCredentials on the store's
	// directory for a single node, the cluster node's in a cluster.
	// AlterUserScramCredentials changes them.
	Credentials CredentialStore
	// MaxFailures failed logins from one address within FailureWindow
	// make the next ones from it refused without a password being
	// checked (0 means 10 and a minute).
	MaxFailures   int
	FailureWindow time.Duration
	// SessionLifetime is how long a login lasts (Kafka's
	// connections.max.reauth.ms, KIP-368); zero means for the
	// connection's life. SaslAuthenticate v1 and later tell the client,
	// which logs in again on the same connection before it ends (the
	// same user: another closes the connection); a connection whose
	// session ended is closed at its next request, as Kafka does.
	SessionLifetime time.Duration

	// clock runs the login timeout (loginTimeout); nil is the real one.
	// Tests set a fake clock to pass the time without waiting for it.
	clock clock
}

// CheckMechanisms refuses an empty list, a mechanism the server does not
// speak, or one named twice.
func CheckMechanisms(mechs []string) error {
	if len(mechs) == 0 {
		return fmt.Errorf("no SASL mechanism (one or more of %v)", Mechanisms)
	}
	for i, m := range mechs {
		if !slices.Contains(Mechanisms, m) {
			return fmt.Errorf("unknown SASL mechanism %q (one or more of %v)", m, Mechanisms)
		}
		if slices.Contains(mechs[:i], m) {
			return fmt.Errorf("SASL mechanism %s named twice", m)
		}
	}
	return nil
}

// Kafka's SASL API keys (KIP-43, KIP-152) and the SCRAM credential admin
// ones (KIP-554).
const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
	describeSCRAMKey    = 50
	alterSCRAMKey       = 51
)

// maxSASLFrame bounds every frame a connection sends before it has
// authenticated: SASL messages and ApiVersions are a few hundred bytes,
// and an anonymous client must not make the server hold more.
const maxSASLFrame = 64 << 10

// loginTimeout closes a connection that has not authenticated this long
// after it was accepted. A login is a few round trips; without this bound
// an anonymous client could hold a connection, its goroutines and a frame
// for as long as it sends a byte now and then, or for Kafka's general idle
// bound (Options.IdleTimeout, connections.max.idle.ms: ten minutes) if it
// sends nothing. Ten seconds is ample for any client that means to log
// in, even over a slow link with SCRAM's hashing.
const loginTimeout = 10 * time.Second

// securityKeys are the API keys SASL adds to ApiVersions.
func (s *Server) securityKeys() []kmsg.ApiVersionsResponseApiKey {
	if s.cfg.SASL == nil {
		return nil
	}
	return []kmsg.ApiVersionsResponseApiKey{
		{ApiKey: saslHandshakeKey, MinVersion: 0, MaxVersion: 1},
		{ApiKey: saslAuthenticateKey, MinVersion: 0, MaxVersion: 2},
		{ApiKey: describeSCRAMKey, MinVersion: 0, MaxVersion: 0},
		{ApiKey: alterSCRAMKey, MinVersion: 0, MaxVersion: 0},
	}
}

// saslConn is one connection's authentication: none yet, a mechanism
// chosen by SaslHandshake, perhaps a SCRAM exchange half done, then the
// user.
type saslConn struct {
	// authenticated is read by the frame reader, which reads ahead of the
	// request being answered.
	authenticated atomic.Bool
	mech          string // after SaslHandshake
	raw           bool   // SaslHandshake v0: tokens come without Kafka framing
	scram         *scramExchange
	user          string
	// reauth: a re-authentication (KIP-368) is under way, from its
	// SaslHandshake to its SaslAuthenticate's end; the connection stays
	// user's meanwhile.
	reauth bool
	// expires is when the session ends (SASLConfig.SessionLifetime);
	// zero, never.
	expires time.Time
	// loginTimer closes the connection at loginTimeout unless it has
	// authenticated; set before the connection is served.
	loginTimer timer
}

// startLoginTimer arms the login timeout of a new connection with SASL on.
// A login completing as the timer fires may still see its connection
// closed: the client then reconnects, as after any dropped connection.
func (c *conn) startLoginTimer() {
	c.sasl.loginTimer = c.saslClock().AfterFunc(loginTimeout, func() {
		if c.sasl.authenticated.Load() {
			return
		}
		c.s.logger.Info("server: closing connection", "remote", c.nc.RemoteAddr().String(),
			"reason", fmt.Sprintf("not authenticated within %v", loginTimeout))
		c.nc.Close()
	})
}

// saslClock is the time logins are timed by: SASLConfig.clock in tests.
func (c *conn) saslClock() clock {
	if clk := c.s.cfg.SASL.clock; clk != nil {
		return clk
	}
	return realClock{}
}

// stopLoginTimer disarms the login timeout: the connection authenticated
// or ended, and the timer should not keep it in memory until it fires.
func (c *conn) stopLoginTimer() {
	if c.sasl != nil && c.sasl.loginTimer != nil {
		c.sasl.loginTimer.Stop()
	}
}

// frameBounds are the smallest and largest request sizes the reader
// accepts now: before authentication, SASL's bound (and a v0 raw token
// may be shorter than a request header).
func (c *conn) frameBounds() (int32, int) {
	if c.sasl != nil && !c.sasl.authenticated.Load() {
		return 1, min(maxSASLFrame, c.s.cfg.MaxRequestBytes)
	}
	return 8, c.s.cfg.MaxRequestBytes
}

// saslGate answers a frame of a connection that has not authenticated
// yet, or is authenticating again. It returns false for a request the
// ordinary path answers (ApiVersions, and anything once authenticated).
func (c *conn) saslGate(frame []byte) (bool, error) {
	st := c.sasl
	if st.authenticated.Load() && !st.reauth {
		if !st.expires.IsZero() && !c.saslClock().Now().Before(st.expires) {
			// Kafka's rule (KIP-368): the session ended without the
			// client logging in again, so whatever it sends now, a
			// SaslHandshake included, closes the connection.
			c.s.saslExpired.Add(1)
			return true, &errCloseConn{reason: "sasl: session expired without re-authentication"}
		}
		if h, _, err := parseHeader(frame); err != nil || h.key != saslHandshakeKey {
			return false, nil
		}
		return true, c.saslReauthenticate(frame)
	}
	if st.raw {
		return true, c.saslRawToken(frame)
	}
	h, _, err := parseHeader(frame)
	if err != nil {
		return true, err
	}
	switch h.key {
	case apiVersionsKey:
		return false, nil
	case saslHandshakeKey, saslAuthenticateKey:
	default:
		return true, &errCloseConn{reason: fmt.Sprintf("sasl: api key %d before authentication", h.key)}
	}
	h, req, err := c.decodeRequest(frame)
	if ue, ok := err.(*errUnsupported); ok {
		return true, c.writeKmsg(h.corr, unsupportedResponse(ue.req, ue.parsed))
	}
	if err != nil {
		return true, err
	}
	switch r := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		return true, c.saslHandshake(h, r)
	case *kmsg.SASLAuthenticateRequest:
		return true, c.saslAuthenticate(h, r)
	}
	return true, &errCloseConn{reason: fmt.Sprintf("sasl: api key %d before authentication", h.key)}
}

// saslReauthenticate answers a SaslHandshake on an authenticated
// connection: the start of a re-authentication (KIP-368), with the
// mechanism of the first login, and SaslAuthenticate v1 or later (v0's
// raw tokens cannot be told from requests on a live connection). Anything
// else closes the connection, as in Kafka. Until the SaslAuthenticate
// that ends it, only ApiVersions and SASL requests are answered.
func (c *conn) saslReauthenticate(frame []byte) error {
	st := c.sasl
	h, req, err := c.decodeRequest(frame)
	if ue, ok := err.(*errUnsupported); ok {
		return c.writeKmsg(h.corr, unsupportedResponse(ue.req, ue.parsed))
	}
	if err != nil {
		return err
	}
	r := req.(*kmsg.SASLHandshakeRequest)
	if r.Version == 0 {
		return &errCloseConn{reason: "sasl: re-authentication with SaslHandshake v0"}
	}
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SetVersion(r.Version)
	resp.SupportedMechanisms = c.s.cfg.SASL.Mechanisms
	if r.Mechanism != st.mech {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		if err := c.writeKmsg(h.corr, resp); err != nil {
			return err
		}
		return &errCloseConn{reason: fmt.Sprintf("sasl: re-authentication with %s after a login with %s", r.Mechanism, st.mech)}
	}
	st.reauth = true
	return c.writeKmsg(h.corr, resp)
}

func (c *conn) saslHandshake(h header, r *kmsg.SASLHandshakeRequest) error {
	st := c.sasl
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SetVersion(r.Version)
	resp.SupportedMechanisms = c.s.cfg.SASL.Mechanisms
	if st.mech != "" {
		return &errCloseConn{reason: "sasl: a second SaslHandshake"}
	}
	if !slices.Contains(c.s.cfg.SASL.Mechanisms, r.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return c.writeKmsg(h.corr, resp)
	}
	st.mech = r.Mechanism
	st.raw = r.Version == 0
	return c.writeKmsg(h.corr, resp)
}

func (c *conn) saslAuthenticate(h header, r *kmsg.SASLAuthenticateRequest) error {
	st := c.sasl
	if st.mech == "" || st.raw {
		return &errCloseConn{reason: "sasl: SaslAuthenticate without a SaslHandshake v1"}
	}
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.SetVersion(r.Version)
	out, err := c.saslStep(r.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		// Kafka closes the connection after a failed authentication:
		// one try per connection.
		if werr := c.writeKmsg(h.corr, resp); werr != nil {
			return werr
		}
		return &errCloseConn{reason: "sasl: " + msg}
	}
	resp.SASLAuthBytes = out
	if lt := c.s.cfg.SASL.SessionLifetime; lt > 0 && r.Version >= 1 && st.scram == nil {
		// The exchange is over (SCRAM's first answer has scram set):
		// tell the client how long its login lasts.
		resp.SessionLifetimeMillis = max(lt.Milliseconds(), 1)
	}
	return c.writeKmsg(h.corr, resp)
}

// saslRawToken answers a token sent after SaslHandshake v0: the bytes
// alone, length-prefixed, both ways. A failure closes the connection
// without an answer, which is how such a client learns of it.
func (c *conn) saslRawToken(frame []byte) error {
	out, err := c.saslStep(frame)
	if err != nil {
		return &errCloseConn{reason: "sasl: " + err.Error()}
	}
	if c.sasl.authenticated.Load() && out == nil {
		return nil // PLAIN: success is an empty answer, which v0 does not send
	}
	return c.write(append(binary.BigEndian.AppendUint32(nil, uint32(len(out))), out...))
}

// errAuthFailed is what a client is told of any refused login: which of
// user or password was wrong is not said.
func errAuthFailed(mech string) error {
	return fmt.Errorf("authentication failed: invalid credentials with SASL mechanism %s", mech)
}

// saslStep takes one client message of the chosen mechanism and returns
// the server's answer, marking the connection authenticated when the
// exchange succeeds.
func (c *conn) saslStep(msg []byte) ([]byte, error) {
	st := c.sasl
	cfg := c.s.cfg.SASL
	host := limiterKey(c.nc)
	now := time.Now()
	if st.scram == nil && !c.s.logins.allow(host, now) {
		return nil, fmt.Errorf("too many failed logins from %s: try again later", host)
	}
	fail := func(user, reason string) ([]byte, error) {
		c.s.logins.failed(host, now)
		c.s.logger.Info("server: SASL authentication failed", "remote", c.nc.RemoteAddr().String(),
			"mechanism", st.mech, "user", user, "reason", reason)
		return nil, errAuthFailed(st.mech)
	}
	switch st.mech {
	case MechanismPlain:
		user, password, err := parsePlain(msg)
		if err != nil {
			return fail("", err.Error())
		}
		cred, ok := cfg.Credentials.Lookup(user, MechanismPlain)
		if !ok || !checkPassword(cred, password) {
			return fail(user, "unknown user or wrong password")
		}
		return nil, c.authenticated(user)
	case MechanismSCRAMSHA256, MechanismSCRAMSHA512:
		if st.scram == nil {
			st.scram = &scramExchange{mech: st.mech, lookup: func(user string) (Credential, bool) {
				return cfg.Credentials.Lookup(user, st.mech)
			}}
			out, err := st.scram.first(msg)
			if err != nil {
				return fail(st.scram.user, err.Error())
			}
			return out, nil
		}
		out, err := st.scram.final(msg)
		if err != nil {
			return fail(st.scram.user, err.Error())
		}
		user := st.scram.user
		st.scram = nil
		return out, c.authenticated(user)
	}
	return nil, fmt.Errorf("mechanism %s not enabled", st.mech)
}

// authenticated ends a successful exchange: the connection is user's,
// until SASLConfig.SessionLifetime from now. A re-authentication must be
// of the connection's user: another is refused (Kafka: a principal does
// not change on a connection), and the caller closes the connection.
func (c *conn) authenticated(user string) error {
	st := c.sasl
	if st.reauth {
		st.reauth = false
		if user != st.user {
			return fmt.Errorf("re-authentication as %q on a connection of %q: a connection's user does not change", user, st.user)
		}
		c.s.saslReauths.Add(1)
	}
	st.user = user
	if lt := c.s.cfg.SASL.SessionLifetime; lt > 0 {
		st.expires = c.saslClock().Now().Add(lt)
	}
	st.authenticated.Store(true)
	c.stopLoginTimer()
	c.s.logger.Debug("server: SASL authenticated", "remote", c.nc.RemoteAddr().String(), "mechanism", st.mech, "user", user)
	return nil
}

// remoteIP is the client's address without its port: what failed logins
// and connections per address are counted by.
func remoteIP(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return nc.RemoteAddr().String()
}

// limiterKey is what failed logins are counted by: the client's IPv4
// address, or its IPv6 /64, since one host commonly has a whole /64 and
// could otherwise start afresh from each of its addresses.
func limiterKey(nc net.Conn) string {
	a, ok := nc.RemoteAddr().(*net.TCPAddr)
	if !ok || a.IP.To4() != nil {
		return remoteIP(nc)
	}
	return (&net.IPNet{IP: a.IP.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

// loginLimiter counts failed logins per address in fixed windows and
// refuses an address that failed max times in the current one, so that a
// client guessing passwords is slowed whatever connections it opens. It
// holds at most maxHosts addresses: when full, expired windows are
// dropped, then arbitrary ones down to seven eighths of it, so memory
// stays bounded under a flood of addresses (which costs them their count,
// not anyone else their service) and a flood does not pay a walk of the
// whole map for each new address.
type loginLimiter struct {
	max    int
	window time.Duration

	mu       sync.Mutex
	hosts    map[string]loginWindow
	maxHosts int // maxLimitedHosts; tests lower it
}

type loginWindow struct {
	start    time.Time
	failures int
}

const maxLimitedHosts = 10000

func newLoginLimiter(max int, window time.Duration) *loginLimiter {
	if max <= 0 {
		max = 10
	}
	if window <= 0 {
		window = time.Minute
	}
	return &loginLimiter{max: max, window: window, hosts: make(map[string]loginWindow), maxHosts: maxLimitedHosts}
}

// allow says whether host may try a login at now.
func (l *loginLimiter) allow(host string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.hosts[host]
	return !ok || now.Sub(w.start) >= l.window || w.failures < l.max
}

// failed counts a failed login of host at now.
func (l *loginLimiter) failed(host string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.hosts[host]
	if !ok || now.Sub(w.start) >= l.window {
		if !ok && len(l.hosts) >= l.maxHosts {
			l.evictLocked(now)
		}
		w = loginWindow{start: now}
	}
	w.failures++
	l.hosts[host] = w
}

func (l *loginLimiter) evictLocked(now time.Time) {
	for h, w := range l.hosts {
		if now.Sub(w.start) >= l.window {
			delete(l.hosts, h)
		}
	}
	for h := range l.hosts {
		if len(l.hosts) <= l.maxHosts-max(l.maxHosts/8, 1) {
			break
		}
		delete(l.hosts, h)
	}
}
