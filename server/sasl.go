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
	// loginTimer closes the connection at loginTimeout unless it has
	// authenticated; set before the connection is served.
	loginTimer timer
}

// startLoginTimer arms the login timeout of a new connection with SASL on.
// A login completing as the timer fires may still see its connection
// closed: the client then reconnects, as after any dropped connection.
func (c *conn) startLoginTimer() {
	clk := c.s.cfg.SASL.clock
	if clk == nil {
		clk = realClock{}
	}
	c.sasl.loginTimer = clk.AfterFunc(loginTimeout, func() {
		if c.sasl.authenticated.Load() {
			return
		}
		c.s.logger.Info("server: closing connection", "remote", c.nc.RemoteAddr().String(),
			"reason", fmt.Sprintf("not authenticated within %v", loginTimeout))
		c.nc.Close()
	})
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
// yet. It returns false for a request the ordinary path answers
// (ApiVersions, and anything once authenticated).
func (c *conn) saslGate(frame []byte) (bool, error) {
	st := c.sasl
	if st.authenticated.Load() {
		return false, nil
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
	host := c.remoteIP()
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
		c.authenticated(user)
		return nil, nil
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
		c.authenticated(st.scram.user)
		st.scram = nil
		return out, nil
	}
	return nil, fmt.Errorf("mechanism %s not enabled", st.mech)
}

func (c *conn) authenticated(user string) {
	c.sasl.user = user
	c.sasl.authenticated.Store(true)
	c.stopLoginTimer()
	c.s.logger.Debug("server: SASL authenticated", "remote", c.nc.RemoteAddr().String(), "mechanism", c.sasl.mech, "user", user)
}

// remoteIP is the client's address without its port: what failed logins
// are counted by.
func (c *conn) remoteIP() string {
	if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return c.nc.RemoteAddr().String()
}

// loginLimiter counts failed logins per address in fixed windows and
// refuses an address that failed max times in the current one, so that a
// client guessing passwords is slowed whatever connections it opens. It
// holds at most maxHosts addresses: when full, expired windows are
// dropped, then arbitrary ones, so memory stays bounded under a flood of
// addresses (which costs them their count, not anyone else their
// service).
type loginLimiter struct {
	max    int
	window time.Duration

	mu    sync.Mutex
	hosts map[string]loginWindow
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
	return &loginLimiter{max: max, window: window, hosts: make(map[string]loginWindow)}
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
		if !ok && len(l.hosts) >= maxLimitedHosts {
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
		if len(l.hosts) < maxLimitedHosts {
			break
		}
		delete(l.hosts, h)
	}
}
