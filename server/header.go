package server

import (
	"encoding/binary"
	"fmt"
)

// header is the start of a request header (v1/v2): the fields read before
// the request's version is known to be one we speak.
type header struct {
	key     int16
	version int16
	corr    int32
}

// parseHeader reads key, version and correlation id.
func parseHeader(frame []byte) (header, []byte, error) {
	if len(frame) < 8 {
		return header{}, nil, &errCloseConn{reason: fmt.Sprintf("request of %d bytes has no header", len(frame))}
	}
	h := header{
		key:     int16(binary.BigEndian.Uint16(frame)),
		version: int16(binary.BigEndian.Uint16(frame[2:])),
		corr:    int32(binary.BigEndian.Uint32(frame[4:])),
	}
	return h, frame[8:], nil
}

// skipHeaderRest reads the client id (a non-compact nullable string even in
// flexible versions), skips the header's tag section of flexible versions,
// and returns the request body. The client id names members in the group
// coordinator's answers.
func skipHeaderRest(b []byte, flexible bool) (body []byte, clientID string, err error) {
	bad := func(what string) error {
		return &errCloseConn{reason: "malformed request header: " + what}
	}
	if len(b) < 2 {
		return nil, "", bad("no client id")
	}
	n := int(int16(binary.BigEndian.Uint16(b)))
	b = b[2:]
	if n > 0 {
		if n > len(b) {
			return nil, "", bad("client id longer than the request")
		}
		clientID = string(b[:n])
		b = b[n:]
	} else if n < -1 {
		return nil, "", bad("negative client id length")
	}
	if !flexible {
		return b, clientID, nil
	}
	count, b, ok := uvarint(b)
	if !ok {
		return nil, "", bad("tag count")
	}
	for range count {
		var size uint64
		if _, b, ok = uvarint(b); !ok {
			return nil, "", bad("tag")
		}
		if size, b, ok = uvarint(b); !ok || size > uint64(len(b)) {
			return nil, "", bad("tag size")
		}
		b = b[size:]
	}
	return b, clientID, nil
}

func uvarint(b []byte) (uint64, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > 1<<31 {
		return 0, nil, false
	}
	return v, b[n:], true
}
