package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// The Fetch response is the one message not encoded by kmsg: its record
// sets are file ranges sent with sendfile(2), so the response is byte
// pieces (headers, fields, length prefixes, tag bytes) alternating with
// one file range per partition with data. The total size is known before
// anything is sent, since a slice's length is fixed when it is read.
//
// Layout, versions 4 to 12 (flexible from 12: compact arrays and strings,
// uvarint lengths, a tag section after each partition, topic and the body):
//
//	throttle_ms int32; v7+: error_code int16, session_id int32
//	topics: name, partitions:
//	  partition int32, error_code int16, high_watermark int64,
//	  last_stable_offset int64, v5+: log_start_offset int64,
//	  aborted_transactions (empty array), v11+: preferred_read_replica int32,
//	  records (bytes: never null, librdkafka misreads a null record set)

// fetchFrame is an encoded Fetch response: out holds the size prefix and
// every byte piece; cuts say where a slice's bytes go between them.
type fetchFrame struct {
	out  []byte
	cuts []fetchCut
	size int64 // everything after the size prefix
}

type fetchCut struct {
	at    int // the slice's bytes follow out[:at]
	slice sliceWriter
}

// sliceWriter is what a frame needs of a *seglog.Slice.
type sliceWriter interface {
	Len() int64
	WriteTo(w io.Writer) (int64, error)
}

// encodeFetch builds the frame for a response of the given version.
func encodeFetch(corr int32, version int16, topErr int16, topics []fetchTopic) *fetchFrame {
	flex := version >= 12
	f := &fetchFrame{out: make([]byte, 4, 256)}
	o := binary.BigEndian.AppendUint32(f.out, uint32(corr))
	if flex {
		o = append(o, 0) // response header v1 tags
	}
	o = binary.BigEndian.AppendUint32(o, 0) // throttle
	if version >= 7 {
		o = binary.BigEndian.AppendUint16(o, uint16(topErr))
		o = binary.BigEndian.AppendUint32(o, 0) // session id: never a session
	}
	o = appendArrayLen(o, len(topics), flex)
	var records int64
	for _, t := range topics {
		o = appendString(o, t.name, flex)
		o = appendArrayLen(o, len(t.parts), flex)
		for _, p := range t.parts {
			o = binary.BigEndian.AppendUint32(o, uint32(p.partition))
			o = binary.BigEndian.AppendUint16(o, uint16(p.code))
			o = binary.BigEndian.AppendUint64(o, uint64(p.hwm))
			o = binary.BigEndian.AppendUint64(o, uint64(p.hwm)) // LSO = HWM
			if version >= 5 {
				o = binary.BigEndian.AppendUint64(o, uint64(p.logStart))
			}
			o = appendArrayLen(o, 0, flex) // aborted transactions: none
			if version >= 11 {
				o = binary.BigEndian.AppendUint32(o, 0xffffffff) // preferred read replica -1
			}
			var n int64
			if p.slice != nil {
				n = p.slice.Len()
			}
			if flex {
				o = binary.AppendUvarint(o, uint64(n)+1)
			} else {
				o = binary.BigEndian.AppendUint32(o, uint32(n))
			}
			if n > 0 {
				f.cuts = append(f.cuts, fetchCut{at: len(o), slice: p.slice})
				records += n
			}
			if flex {
				o = append(o, 0) // partition tags
			}
		}
		if flex {
			o = append(o, 0) // topic tags
		}
	}
	if flex {
		o = append(o, 0) // body tags
	}
	f.out = o
	f.size = int64(len(o)-4) + records
	binary.BigEndian.PutUint32(f.out, uint32(f.size))
	return f
}

// writeTo sends the frame: byte pieces with Write, record sets with the
// slices' WriteTo (sendfile on a TCP connection). A slice that cannot send
// all its bytes (the log was truncated under it) fails the write, and the
// caller closes the connection, as Kafka does: fewer bytes would break the
// framing.
func (f *fetchFrame) writeTo(w io.Writer) error {
	prev := 0
	for _, c := range f.cuts {
		if _, err := w.Write(f.out[prev:c.at]); err != nil {
			return err
		}
		n, err := c.slice.WriteTo(w)
		if err != nil {
			return err
		}
		if n != c.slice.Len() {
			return fmt.Errorf("server: fetch sent %d of a %d-byte record set", n, c.slice.Len())
		}
		prev = c.at
	}
	_, err := w.Write(f.out[prev:])
	return err
}

func (c *conn) writeFetch(corr int32, version int16, topErr int16, topics []fetchTopic) error {
	f, ms, _ := c.fetchQuota(encodeFetch(corr, version, topErr, topics), corr, version, topErr)
	return c.sendFetch(f, version, ms)
}

// sendFetch writes an encoded Fetch response carrying a throttle of ms
// (quota_conn.go): clients throttle themselves from version 8 (KIP-219).
func (c *conn) sendFetch(f *fetchFrame, version int16, ms int64) error {
	if f.size > 1<<31-1 {
		return &errCloseConn{reason: "fetch response over 2 GiB"}
	}
	clientWaits := version >= 8
	if err := c.throttleBefore(ms, clientWaits); err != nil {
		return err
	}
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.IdleTimeout))
	var err error
	if c.s.cfg.FetchCopy {
		// Hiding the connection's type is what declines sendfile.
		err = f.writeTo(struct{ io.Writer }{c.nc})
	} else {
		err = f.writeTo(c.nc)
	}
	if err != nil {
		return err
	}
	c.throttleAfter(ms, clientWaits)
	return nil
}

func appendArrayLen(o []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(o, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(o, uint32(n))
}

func appendString(o []byte, s string, flex bool) []byte {
	if flex {
		o = binary.AppendUvarint(o, uint64(len(s))+1)
	} else {
		o = binary.BigEndian.AppendUint16(o, uint16(len(s)))
	}
	return append(o, s...)
}
