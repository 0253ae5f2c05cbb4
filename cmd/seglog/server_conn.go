package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// serverConn is one connection to the seglog serve that holds a store,
// over which the CLI sends the Kafka requests whose work it does through
// the server (produce, group commits, DeleteRecords; bench restart's
// ListOffsets). kmsg encodes and decodes every message, as it does for the
// server; the connection only frames them, one request at a time, at the
// highest version both sides know. seglog links no Kafka client library
// for this: franz-go's kgo was the largest package of a first build and
// the last one compiled before the binary (docs/benchmarks.md, "The bench
// extras"), and the one broker these requests go to needs no metadata,
// routing or retries.
type serverConn struct {
	addr     string
	nc       net.Conn
	rd       *bufio.Reader
	format   *kmsg.RequestFormatter
	corr     int32
	versions map[int16][2]int16 // the server's [min, max] version per API key
}

// maxServerResponse bounds a response read from the server: the CLI's
// requests are answered in a few KiB, so a larger length is not believed.
const maxServerResponse = 64 << 20

// dialServer connects to the server at addr and asks which versions of
// each request it serves (ApiVersions v0, which every broker answers).
func dialServer(ctx context.Context, addr string) (*serverConn, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, serverTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("connecting to the server at %s: %w", addr, err)
	}
	c := &serverConn{addr: addr, nc: nc, rd: bufio.NewReader(nc), format: kmsg.NewRequestFormatter(kmsg.FormatterClientID("seglog"))}
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(0)
	resp, err := c.exchange(ctx, req)
	if err == nil {
		av := resp.(*kmsg.ApiVersionsResponse)
		if err = kerr.ErrorForCode(av.ErrorCode); err == nil {
			c.versions = make(map[int16][2]int16, len(av.ApiKeys))
			for _, k := range av.ApiKeys {
				c.versions[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
			}
		}
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connecting to the server at %s: ApiVersions: %w", addr, err)
	}
	return c, nil
}

// Close closes the connection.
func (c *serverConn) Close() error { return c.nc.Close() }

// request sends req at the highest version both kmsg and the server know
// and returns the server's response. A request the server does not serve
// is refused before anything is sent.
func (c *serverConn) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	v, ok := c.versions[req.Key()]
	if !ok || v[0] > req.MaxVersion() {
		return nil, fmt.Errorf("the server at %s does not serve %s", c.addr, kmsg.NameForKey(req.Key()))
	}
	req.SetVersion(min(v[1], req.MaxVersion()))
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, serverTimeout)
	defer cancel()
	return c.exchange(ctx, req)
}

// exchange writes req (its version set) and reads its response, within
// ctx's deadline.
func (c *serverConn) exchange(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if dl, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) }) // a cancel interrupts the I/O
	defer stop()
	c.corr++
	if _, err := c.nc.Write(c.format.AppendRequest(nil, req, c.corr)); err != nil {
		return nil, c.ioErr(ctx, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.rd, size[:]); err != nil {
		return nil, c.ioErr(ctx, err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > maxServerResponse {
		return nil, fmt.Errorf("a response of %d bytes from the server at %s", n, c.addr)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.rd, body); err != nil {
		return nil, c.ioErr(ctx, err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		return nil, fmt.Errorf("the server at %s answered request %d with %d", c.addr, c.corr, corr)
	}
	body = body[4:]
	resp := req.ResponseKind()
	// A flexible response header ends with tagged fields, except
	// ApiVersions' (Kafka's KIP-511: a client must read it not knowing the
	// version the broker answered with).
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		rest, err := skipTaggedFields(body)
		if err != nil {
			return nil, fmt.Errorf("%s response header from the server at %s: %w", kmsg.NameForKey(req.Key()), c.addr, err)
		}
		body = rest
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s response from the server at %s: %w", kmsg.NameForKey(req.Key()), c.addr, err)
	}
	return resp, nil
}

// skipTaggedFields returns b after the tagged fields it starts with: a
// count, then per field a tag and a length-prefixed value, all unsigned
// varints.
func skipTaggedFields(b []byte) ([]byte, error) {
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	count, ok := uvarint()
	for i := uint64(0); ok && i < count; i++ {
		var size uint64
		if _, ok = uvarint(); ok {
			if size, ok = uvarint(); ok && size <= uint64(len(b)) {
				b = b[size:]
			} else {
				ok = false
			}
		}
	}
	if !ok {
		return nil, errors.New("tagged fields past the end")
	}
	return b, nil
}

// ioErr is err, or ctx's error when the context ended the I/O.
func (c *serverConn) ioErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("the server at %s: %w", c.addr, context.Cause(ctx))
	}
	return err
}
