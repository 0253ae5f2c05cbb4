package server

import (
	"context"
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
type conn struct {
	s     *Server
	nc    net.Conn
	coord *coordinator

	ctx    context.Context // ends when the connection or the server does
	cancel context.CancelFunc

	mu       sync.Mutex
	busy     bool // answering a request
	stopping bool // Shutdown: close after the current request

	out []byte // response buffer, reused

	// produceFrame is the frame of the Produce being answered, given
	// back to Server.frames once its record sets are stored.
	produceFrame []byte

	clientID string // the last request's header client id, for the coordinator

	sasl *saslConn // nil unless Options.SASL: this connection's login

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

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{s: s, nc: nc, coord: s.coord}
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

func (c *conn) serve() {
	defer c.s.metrics.connsOpen.Add(-1)
	defer c.nc.Close()
	defer c.stopLoginTimer()
	defer c.cancel()
	defer c.stopMute()
	frames := make(chan []byte, 1)
	go c.readFrames(frames)
	for frame := range frames {
		if !c.waitUnmuted(true) {
			return
		}
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			return
		}
		c.busy = true
		c.mu.Unlock()
		err := c.handleFrame(frame)
		c.mu.Lock()
		c.busy = false
		stop := c.stopping
		c.mu.Unlock()
		if err != nil {
			var ce *errCloseConn
			if !errors.As(err, &ce) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
				c.s.logger.Debug("server: connection ended", "remote", c.nc.RemoteAddr().String(), "err", err)
			} else if ce != nil {
				c.s.logger.Info("server: closing connection", "remote", c.nc.RemoteAddr().String(), "reason", ce.reason)
			}
			return
		}
		if stop {
			return
		}
	}
}

// readFrames reads length-prefixed requests until the connection fails or
// sends a frame outside the size limits, then closes frames and cancels
// the connection's context (a blocked group request then returns).
func (c *conn) readFrames(frames chan<- []byte) {
	defer close(frames)
	defer c.cancel()
	var hdr [4]byte
	for {
		// A throttled client's connection is not read until its mute
		// ends (KIP-219).
		if !c.waitUnmuted(false) {
			return
		}
		c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
		if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
			return
		}
		size := int32(binary.BigEndian.Uint32(hdr[:]))
		// A request has at least key, version and correlation id.
		lo, hi := c.frameBounds()
		if size < lo || int64(size) > int64(hi) {
			c.s.logger.Info("server: closing connection", "remote", c.nc.RemoteAddr().String(),
				"reason", fmt.Sprintf("request size %d outside [%d, %d]", size, lo, hi))
			return
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
		if err != nil {
			return
		}
		select {
		case frames <- buf:
		case <-c.ctx.Done():
			return
		}
	}
}

// readGrowing reads size bytes, allocating as they arrive: at most 1 MiB
// before any byte and then at most eight times what has come, so a length
// a client claims but does not send costs little, and a real large
// request is copied while growing only a few times. A frame the pool may
// keep is made with room for somewhat larger requests (frameCap), within
// the same bounds.
func readGrowing(r io.Reader, size int) ([]byte, error) {
	want := size
	if size >= minPooledFrame && size <= maxReusedFrame {
		want = frameCap(size)
	}
	buf := make([]byte, min(size, 1<<20), min(want, 1<<20))
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
		return c.writeKmsg(h.corr, c.s.metadata(c.ctx, r))
	case *kmsg.ProduceRequest:
		resp := c.s.produce(r)
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
	case *kmsg.CreatePartitionsRequest:
		return c.writeKmsg(h.corr, c.s.createPartitions(r))
	case *kmsg.DescribeClusterRequest:
		return c.writeKmsg(h.corr, c.s.describeCluster(r))
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
	ms, clientWaits := c.throttleResponse(resp)
	out := append(c.out[:0], 0, 0, 0, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	if tagged {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	if cap(out) <= 1<<20 {
		c.out = out
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

func (c *conn) write(b []byte) error {
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	_, err := c.nc.Write(b)
	return err
}
