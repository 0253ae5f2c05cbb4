package server

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// conn serves one client connection: one request at a time, answered in
// order. A reader goroutine reads ahead at most one request, so pipelined
// requests wait in the socket and in a one-slot queue: a connection holds
// at most three requests of at most Options.MaxRequestBytes (the one being
// answered, the one queued, the one being read).
//
// An idle connection costs as little as can be (docs/security.md,
// "Hostile clients"): one goroutine waiting for a request header, and no
// frame, response buffer or answering goroutine. A goroutine to answer is
// started when a request arrives and ends when the queue is empty; the
// response buffer is the server's (Server.outs) while it answers.
type conn struct {
	s     *Server
	nc    net.Conn
	coord *coordinator

	ctx    context.Context // ends when the connection or the server does
	cancel context.CancelFunc

	// frames is the one-slot queue from the reader to the answering
	// goroutine.
	frames chan []byte
	// answerers counts the answering goroutine (zero or one), which the
	// reader waits for before it closes the connection.
	answerers sync.WaitGroup

	mu        sync.Mutex
	answering bool // a goroutine answers the queue
	ended     bool // an answer failed: no goroutine is started again
	busy      bool // answering a request
	stopping  bool // Shutdown: close after the current request

	out *[]byte // response buffer, from Server.outs while answering

	// produceFrame is the frame of the Produce being answered, given
	// back to Server.frames once its record sets are stored.
	produceFrame []byte

	clientID string // the last request's header client id, for the coordinator

	sasl *saslConn // nil unless Options.SASL: this connection's login

	// az authorizes the request being answered, merge adds the answers
	// of its parts the ACLs refused, and fetchDenied are a Fetch's
	// (acl_authorize.go).
	az          *authorizer
	merge       func(kmsg.Response)
	fetchDenied []fetchTopic

	quota connQuota // quota_conn.go
}

// remoteHost is the client's address as the coordinator shows it
// (DescribeGroups' client host, Kafka's "/ip").
func (c *conn) remoteHost() string {
	if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		return "/" + a.IP.String()
	}
	return "/" + c.nc.RemoteAddr().String()
}

// Request frames.
//
// A producer's requests are large (hundreds of KiB), and a fresh frame per
// request cost about a sixth of the server's CPU in clearing the
// allocation and collecting it (docs/benchmarks.md, "Request frames
// reused"). A Produce frame is therefore given back to the server's pool
// as soon as its record sets are written to the log (or copied into its
// group commit), before the answer is written: a client that sends its
// next request the moment it reads the answer finds the frame there.
// decodeRequest clones the frame's strings, so nothing refers to it after.
// Only Produce frames are pooled: other requests are small, and their
// decoded forms may alias the frame for as long as they live. The pool is
// the server's (framepool.go), so an idle connection holds no frame.

// minPooledFrame is the smallest frame the pool is used for: requests
// other than Produce are small, and one that took a pooled frame would
// keep it from the producers (only Produce frames go back).
const minPooledFrame = 16 << 10

// getFrame returns a frame of size bytes from the pool, or nil.
func (s *Server) getFrame(size int) []byte {
	if size < minPooledFrame {
		return nil
	}
	return s.frames.get(size)
}

// putFrame gives a frame back to the pool once nothing refers to it.
func (s *Server) putFrame(frame []byte) {
	if cap(frame) >= minPooledFrame {
		s.frames.put(frame)
	}
}

// admitLocked decides whether a connection just accepted is served: not
// when MaxConnections are served already, or MaxConnectionsPerIP from its
// address. Kafka closes such a connection as it accepts it; so does Serve,
// before anything is allocated for it, and counts it. It returns the
// address the connection is counted under, for releaseLocked.
func (s *Server) admitLocked(nc net.Conn) (string, bool) {
	ip := remoteIP(nc)
	if max := s.cfg.MaxConnections; max > 0 && len(s.conns) >= max {
		s.refuse(nc, fmt.Sprintf("%d connections served (max connections)", len(s.conns)))
		return "", false
	}
	if max := s.cfg.MaxConnectionsPerIP; max > 0 {
		if n := s.perIP[ip]; n >= max {
			s.refuse(nc, fmt.Sprintf("%d connections from %s (max connections per ip)", n, ip))
			return "", false
		}
		if s.perIP == nil {
			s.perIP = make(map[string]int)
		}
		s.perIP[ip]++
	}
	return ip, true
}

func (s *Server) refuse(nc net.Conn, why string) {
	s.metrics.connsRefused.Add(1)
	// Debug: a flood of refusals must not become a flood of log lines.
	s.logger.Debug("server: refusing connection", "remote", nc.RemoteAddr().String(), "reason", why)
}

// releaseLocked uncounts a connection admitLocked admitted from ip.
func (s *Server) releaseLocked(ip string) {
	if s.cfg.MaxConnectionsPerIP <= 0 {
		return
	}
	if s.perIP[ip]--; s.perIP[ip] <= 0 {
		delete(s.perIP, ip)
	}
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, coord: s.coord, frames: make(chan []byte, 1)}
	if s.cfg.SASL != nil {
		c.sasl = &saslConn{}
		c.startLoginTimer()
	}
	c.ctx, c.cancel = context.WithCancel(s.ctx)
	s.metrics.connsAccepted.Add(1)
	s.metrics.connsOpen.Add(1)
	return c
}

// stopAfterCurrent makes the connection close once the request it is
// answering has been answered, or now if it is idle.
func (c *conn) stopAfterCurrent() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopping = true
	if !c.busy {
		c.nc.Close()
	}
}

// errCloseConn ends a connection without a response: what Kafka does with
// a request it cannot parse or a version it does not speak.
type errCloseConn struct {
	reason   string
	internal bool // a panic was recovered: a bug, never the client's doing
}

func (e *errCloseConn) Error() string { return "closing connection: " + e.reason }

// serve reads the connection's requests until it fails, is closed or
// sends a frame outside the size limits, handing each to the answering
// goroutine; then it cancels the connection's context (a blocked group
// request returns), waits for the answers under way and closes.
func (c *conn) serve() {
	defer c.s.metrics.connsOpen.Add(-1)
	defer c.nc.Close()
	defer c.stopLoginTimer()
	// After the answers: the answering goroutine starts mutes.
	defer c.stopMute()
	defer c.answerers.Wait()
	defer c.cancel()
	if tc, ok := c.nc.(*tls.Conn); ok {
		// The handshake is bounded as a request is: the idle timeout is
		// for a connection waiting between requests, not for a client
		// dribbling its hello.
		tc.SetDeadline(time.Now().Add(c.s.cfg.RequestReadTimeout))
		if err := tc.Handshake(); err != nil {
			c.s.logger.Debug("server: TLS handshake failed", "remote", c.nc.RemoteAddr().String(), "err", err)
			return
		}
	}
	for {
		frame, ok := c.readFrame()
		if !ok {
			return
		}
		select {
		case c.frames <- frame:
		case <-c.ctx.Done():
			return
		}
		c.mu.Lock()
		if c.ended {
			c.mu.Unlock()
			return
		}
		if !c.answering {
			c.answering = true
			c.answerers.Add(1)
			go c.answer()
		}
		c.mu.Unlock()
	}
}

// answer answers the queued requests until the queue is empty, then
// ends: the reader starts another at the next request. An answer that
// fails, or Shutdown, closes the connection, which ends the reader.
func (c *conn) answer() {
	defer c.answerers.Done()
	for {
		var frame []byte
		select {
		case frame = <-c.frames:
		default:
			// Before answering is cleared: the next goroutine may take
			// the buffer's place as soon as it is.
			c.releaseOut()
			c.mu.Lock()
			if len(c.frames) > 0 {
				// Queued since the receive above: the reader saw this
				// goroutine answering and started none.
				c.mu.Unlock()
				continue
			}
			c.answering = false
			c.mu.Unlock()
			return
		}
		// A request read ahead of a mute waits for it to end (KIP-219).
		if !c.waitUnmuted(true) {
			c.mu.Lock()
			c.ended = true
			c.mu.Unlock()
			c.end()
			return
		}
		c.mu.Lock()
		if c.stopping {
			c.ended = true
			c.mu.Unlock()
			c.end()
			return
		}
		c.busy = true
		c.mu.Unlock()
		err := c.handleFrame(frame)
		c.mu.Lock()
		c.busy = false
		stop := c.stopping
		if err != nil || stop {
			c.ended = true
		}
		c.mu.Unlock()
		if err != nil {
			var ce *errCloseConn
			if !errors.As(err, &ce) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				c.s.logger.Debug("server: connection ended", "remote", c.nc.RemoteAddr().String(), "err", err)
			} else if ce != nil {
				c.s.logger.Info("server: closing connection", "remote", c.nc.RemoteAddr().String(), "reason", ce.reason)
			}
		}
		if err != nil || stop {
			c.end()
			return
		}
	}
}

// end closes the connection from the answering side, ended being set: no
// other goroutine answers after this one, so the buffer goes back now;
// the context is canceled, for the reader may be blocked handing over a
// request no one will take (the queue full with one no one will answer);
// and closing the socket ends a reader blocked reading.
func (c *conn) end() {
	c.releaseOut()
	c.cancel()
	c.nc.Close()
}

// readFrame reads one length-prefixed request. The wait for its size is
// bounded by Options.IdleTimeout; the rest, once the size has come, by
// Options.RequestReadTimeout, however slowly it dribbles in. It returns
// false when the connection fails or the size is outside the limits.
func (c *conn) readFrame() ([]byte, bool) {
	var hdr [4]byte
	// A throttled client's connection is not read until its mute ends
	// (KIP-219).
	if !c.waitUnmuted(false) {
		return nil, false
	}
	c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return nil, false
	}
	c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.RequestReadTimeout))
	size := int32(binary.BigEndian.Uint32(hdr[:]))
	// A request has at least key, version and correlation id.
	lo, hi := c.frameBounds()
	if size < lo || int64(size) > int64(hi) {
		c.s.logger.Info("server: closing connection", "remote", c.nc.RemoteAddr().String(),
			"reason", fmt.Sprintf("request size %d outside [%d, %d]", size, lo, hi))
		return nil, false
	}
	buf := c.s.getFrame(int(size))
	var err error
	if buf != nil {
		// Memory already held, so a length the client does not go on
		// to send costs nothing new.
		if _, err = io.ReadFull(c.nc, buf); err != nil {
			c.s.putFrame(buf)
		}
	} else {
		c.s.framesMade.Add(1)
		buf, err = readGrowing(c.nc, int(size))
	}
	return buf, err == nil
}

// readGrowing reads size bytes, allocating as they arrive: at most
// firstRead before any byte and then at most eight times what has come,
// so a length a client claims but does not send, or sends a byte at a
// time, costs only about what it sent, and a real large request is copied
// while growing only a few times. A frame the pool may
// keep is made with room for somewhat larger requests (frameCap), within
// the same bounds.
// firstRead is what readGrowing allocates before any byte of a frame has
// come: most requests but Produce fit, and a client that sends only a
// size holds no more.
const firstRead = 4 << 10

func readGrowing(r io.Reader, size int) ([]byte, error) {
	want := size
	if size >= minPooledFrame && size <= maxReusedFrame {
		want = frameCap(size)
	}
	buf := make([]byte, min(size, firstRead), min(want, firstRead))
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	for len(buf) < size {
		n := len(buf)
		grown := make([]byte, min(size, 8*n), min(want, 8*n))
		copy(grown, buf)
		buf = grown
		if _, err := io.ReadFull(r, buf[n:]); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// handleFrame answers one request. A returned error closes the connection.
func (c *conn) handleFrame(frame []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.s.logger.Error("server: panic answering a request", "panic", r, "stack", string(debug.Stack()))
			err = &errCloseConn{reason: fmt.Sprint("internal error: ", r), internal: true}
		}
	}()
	if c.sasl != nil {
		if handled, err := c.saslGate(frame); handled {
			return err
		}
	}
	start := time.Now()
	h, req, err := c.decodeRequest(frame)
	if _, ok := err.(*errUnsupported); ok || err == nil {
		defer c.s.metrics.request(h.key, start)
		c.beginQuota(req)
	}
	if ue, ok := err.(*errUnsupported); ok {
		return c.writeKmsg(h.corr, unsupportedResponse(ue.req, ue.parsed))
	}
	if err != nil {
		return err
	}
	if _, ok := req.(*kmsg.ProduceRequest); ok {
		c.produceFrame = frame
	}
	if req == nil {
		// KIP-511: a client newer than us learns our range from a v0 reply.
		return c.writeResponse(h.corr, downgradeApiVersions(), false)
	}
	c.az = c.authorizer()
	deny, merge := c.authorize(req, c.az)
	if deny != nil {
		return c.writeKmsg(h.corr, deny)
	}
	c.merge = merge
	if c.coord != nil {
		if resp, ok := c.coord.handle(withClientInfo(c.ctx, c.clientID, c.remoteHost()), req); ok {
			return c.writeResponse(h.corr, resp, resp.IsFlexible())
		}
	}
	return c.dispatch(h, req)
}

// decodeRequest parses a request frame. A nil request with no error is an
// ApiVersions request above our maximum version, answered with the v0
// downgrade reply. A key or version we do not serve is an *errUnsupported
// (answered with UNSUPPORTED_VERSION in the API's own response) when kmsg
// can encode that response; keys kmsg does not know, versions beyond
// kmsg's, and requests that do not parse are errors that close the
// connection, as in Kafka.
func (c *conn) decodeRequest(frame []byte) (header, kmsg.Request, error) {
	h, body, err := parseHeader(frame)
	if err != nil {
		return h, nil, err
	}
	if h.key == apiVersionsKey && (h.version < 0 || h.version > apiVersionsMax) {
		return h, nil, nil
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		return h, nil, &errCloseConn{reason: fmt.Sprintf("unknown api key %d", h.key)}
	}
	if !c.s.supports(c.coord, h.key, h.version) {
		if h.version < 0 || h.version > req.MaxVersion() {
			// No response of that version can be encoded.
			return h, nil, &errCloseConn{reason: fmt.Sprintf("api key %d version %d not supported", h.key, h.version)}
		}
		req.SetVersion(h.version)
		body, clientID, err := skipHeaderRest(body, req.IsFlexible())
		if err != nil {
			return h, nil, err
		}
		c.clientID = clientID
		// Parsed only to name its entries in the error response.
		return h, req, &errUnsupported{req: req, parsed: req.ReadFrom(body) == nil}
	}
	req.SetVersion(h.version)
	body, clientID, err := skipHeaderRest(body, req.IsFlexible())
	if err != nil {
		return h, nil, err
	}
	c.clientID = clientID
	read := req.ReadFrom
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		// The record sets alias the frame instead of being copied out of
		// it: the produce path writes them to the log, and the frame is
		// then reused for a later request ("Request frames" above).
		read = p.UnsafeReadFrom
	}
	if err := read(body); err != nil {
		return h, nil, &errCloseConn{reason: fmt.Sprintf("api key %d version %d: cannot parse request: %v", h.key, h.version, err)}
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok {
		// Its strings alias the frame too, and a topic name may be kept
		// (a map key, a log line): they are the only bytes worth copying.
		for i := range p.Topics {
			p.Topics[i].Topic = strings.Clone(p.Topics[i].Topic)
		}
		if p.TransactionID != nil {
			id := strings.Clone(*p.TransactionID)
			p.TransactionID = &id
		}
	}
	return h, req, nil
}

// dispatch answers the keys the server itself handles.
func (c *conn) dispatch(h header, req kmsg.Request) error {
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		return c.writeResponse(h.corr, c.s.apiVersions(c.coord, r), false)
	case *kmsg.MetadataRequest:
		return c.writeKmsg(h.corr, c.s.metadata(withAuthorizer(c.ctx, c.az), r))
	case *kmsg.ProduceRequest:
		resp := c.s.produce(r)
		c.mergeDenied(resp)
		c.produceQuota(len(c.produceFrame))
		// Stored, replicated or refused: nothing refers to the frame
		// any more (a Cluster's Produce lets go of its batch when it
		// returns, whatever the answer).
		c.s.putFrame(c.produceFrame)
		c.produceFrame = nil
		if r.Acks == 0 {
			// acks=0 gets no response at all. A failed one closes the
			// connection instead, as Kafka does, so that the client,
			// which reads nothing, still learns of it.
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 {
						return &errCloseConn{reason: fmt.Sprintf("acks=0 produce to %s-%d failed with error %d", t.Topic, p.Partition, p.ErrorCode)}
					}
				}
			}
			if c.quota.bytes > 0 {
				c.s.quota.counted(quotaProduce, c.quota.bytes)
				c.startMute(c.quota.bytes) // no answer to carry it
			}
			return nil
		}
		return c.writeKmsg(h.corr, resp)
	case *kmsg.FetchRequest:
		return c.fetch(h.corr, r)
	case *kmsg.ListOffsetsRequest:
		return c.writeKmsg(h.corr, c.s.listOffsets(r))
	case *kmsg.OffsetForLeaderEpochRequest:
		return c.writeKmsg(h.corr, c.s.offsetForLeaderEpoch(r))
	case *kmsg.InitProducerIDRequest:
		return c.writeKmsg(h.corr, c.s.initProducerID(c.ctx, r))
	case *kmsg.CreateTopicsRequest:
		return c.writeKmsg(h.corr, c.s.createTopics(c.ctx, r))
	case *kmsg.DeleteTopicsRequest:
		return c.writeKmsg(h.corr, c.s.deleteTopics(c.ctx, r))
	case *kmsg.DeleteRecordsRequest:
		return c.writeKmsg(h.corr, c.s.deleteRecords(c.ctx, r))
	case *kmsg.ElectLeadersRequest:
		return c.writeKmsg(h.corr, c.s.electLeaders(c.ctx, r))
	case *kmsg.CreatePartitionsRequest:
		return c.writeKmsg(h.corr, c.s.createPartitions(r))
	case *kmsg.DescribeClusterRequest:
		return c.writeKmsg(h.corr, c.s.describeCluster(withAuthorizer(c.ctx, c.az), r))
	case *kmsg.DescribeLogDirsRequest:
		return c.writeKmsg(h.corr, c.s.describeLogDirs(r))
	case *kmsg.DescribeConfigsRequest:
		return c.writeKmsg(h.corr, c.s.describeConfigs(r))
	case *kmsg.AlterConfigsRequest:
		return c.writeKmsg(h.corr, c.s.alterConfigs(r))
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.writeKmsg(h.corr, c.s.incrementalAlterConfigs(r))
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return c.writeKmsg(h.corr, c.s.describeUserSCRAM(r))
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return c.writeKmsg(h.corr, c.s.alterUserSCRAM(r))
	case *kmsg.DescribeACLsRequest:
		return c.writeKmsg(h.corr, c.s.describeACLs(r))
	case *kmsg.CreateACLsRequest:
		return c.writeKmsg(h.corr, c.s.createACLs(c.ctx, r))
	case *kmsg.DeleteACLsRequest:
		return c.writeKmsg(h.corr, c.s.deleteACLs(c.ctx, r))
	case *kmsg.DescribeClientQuotasRequest:
		return c.writeKmsg(h.corr, c.s.describeClientQuotas(r))
	case *kmsg.AlterClientQuotasRequest:
		return c.writeKmsg(h.corr, c.s.alterClientQuotas(c.ctx, r))
	}
	return &errCloseConn{reason: fmt.Sprintf("api key %d not handled", h.key)}
}

func (c *conn) writeKmsg(corr int32, resp kmsg.Response) error {
	return c.writeResponse(corr, resp, resp.IsFlexible())
}

// writeResponse frames resp: size, correlation id, and, for flexible
// versions, the response header's empty tag section. ApiVersions replies
// never carry it (header v0 even at v3+), so callers pass tagged false.
func (c *conn) writeResponse(corr int32, resp kmsg.Response, tagged bool) error {
	c.mergeDenied(resp)
	ms, clientWaits := c.throttleResponse(resp)
	if c.out == nil {
		c.out = c.s.outs.Get().(*[]byte)
	}
	out := append((*c.out)[:0], 0, 0, 0, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	if tagged {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	if cap(out) <= maxKeptOut {
		*c.out = out
	}
	if err := c.throttleBefore(ms, clientWaits); err != nil {
		return err
	}
	if err := c.write(out); err != nil {
		return err
	}
	c.throttleAfter(ms, clientWaits)
	return nil
}

// maxKeptOut bounds the response buffers kept for reuse: a larger
// response (a big Metadata) is made afresh each time.
const maxKeptOut = 1 << 20

// newOut makes an empty response buffer for Server.outs.
func newOut() any { return new([]byte) }

// releaseOut gives the response buffer back to the server when the
// connection has nothing more to answer, so that an idle connection holds
// none.
func (c *conn) releaseOut() {
	if c.out != nil {
		c.s.outs.Put(c.out)
		c.out = nil
	}
}

func (c *conn) write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	_, err := c.nc.Write(b)
	return err
}
