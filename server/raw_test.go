package server

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn speaks the protocol by hand, for tests that need exact versions,
// pipelining or malformed frames.
type rawConn struct {
	t    *testing.T
	nc   net.Conn
	corr int32
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{t: t, nc: nc}
}

// frame encodes req at its version with a request header.
func (c *rawConn) frame(req kmsg.Request) ([]byte, int32) {
	c.corr++
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(c.corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, c.corr
}

func (c *rawConn) send(req kmsg.Request) int32 {
	c.t.Helper()
	b, corr := c.frame(req)
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
	return corr
}

// readFrame reads one response frame; err is io.EOF (or a reset) when the
// server closed the connection.
func (c *rawConn) readFrame() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(hdr[:]))
	_, err := io.ReadFull(c.nc, b)
	return b, err
}

// recv reads the response to a request of req's kind sent with corr.
func (c *rawConn) recv(req kmsg.Request, corr int32) kmsg.Response {
	c.t.Helper()
	b, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("reading the response to key %d v%d: %v", req.Key(), req.GetVersion(), err)
	}
	if got := int32(binary.BigEndian.Uint32(b)); got != corr {
		c.t.Fatalf("correlation id %d, want %d", got, corr)
	}
	b = b[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() && req.Key() != apiVersionsKey {
		if len(b) == 0 || b[0] != 0 {
			c.t.Fatalf("flexible response header without an empty tag section")
		}
		b = b[1:]
	}
	if err := resp.ReadFrom(b); err != nil {
		c.t.Fatalf("decoding the response to key %d v%d: %v", req.Key(), req.GetVersion(), err)
	}
	return resp
}

func (c *rawConn) do(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	return c.recv(req, c.send(req))
}

// expectClosed checks that the server closes the connection without
// answering.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := c.readFrame()
	if err == nil {
		c.t.Fatalf("got a %d-byte response, want the connection closed", len(b))
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatalf("connection still open")
	}
}
