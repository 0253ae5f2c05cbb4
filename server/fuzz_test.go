package server

import (
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// discardConn is a connection whose writes vanish, for driving a conn
// without a socket.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error)         { return len(b), nil }
func (discardConn) Close() error                        { return nil }
func (discardConn) SetWriteDeadline(time.Time) error    { return nil }
func (discardConn) SetReadDeadline(time.Time) error     { return nil }
func (discardConn) RemoteAddr() net.Addr                { return &net.TCPAddr{} }
func (discardConn) Read([]byte) (int, error)            { return 0, io.EOF }
func (discardConn) LocalAddr() net.Addr                 { return &net.TCPAddr{} }
func (discardConn) SetDeadline(time.Time) error         { return nil }
func (discardConn) ReadFrom(r io.Reader) (int64, error) { return io.Copy(io.Discard, r) }

// requestSeeds are valid request frames (without the size prefix) of every
// key the server answers, at their lowest and highest versions.
func requestSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	for _, k := range advertised {
		for _, v := range []int16{k.MinVersion, k.MaxVersion} {
			req := kmsg.RequestForKey(k.ApiKey)
			req.SetVersion(v)
			switch r := req.(type) {
			case *kmsg.ProduceRequest:
				r.Acks = -1
				r.Topics = []kmsg.ProduceRequestTopic{{Topic: "f", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: corpusBatches(tb)[0]}}}}
			case *kmsg.FetchRequest:
				r.MinBytes = 1
				r.Topics = []kmsg.FetchRequestTopic{{Topic: "f", Partitions: []kmsg.FetchRequestTopicPartition{{PartitionMaxBytes: 1 << 20}}}}
			case *kmsg.MetadataRequest:
				r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("f")}}
			case *kmsg.ListOffsetsRequest:
				r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "f", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -3}}}}
			case *kmsg.CreateTopicsRequest:
				r.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "g", NumPartitions: 1, ReplicationFactor: 1}}
			case *kmsg.ElectLeadersRequest:
				r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "f", Partitions: []int32{0, 5}}}
			case *kmsg.DeleteRecordsRequest:
				r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "f", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Offset: 1}}}}
			}
			b := binary.BigEndian.AppendUint16(nil, uint16(k.ApiKey))
			b = binary.BigEndian.AppendUint16(b, uint16(v))
			b = binary.BigEndian.AppendUint32(b, 7)
			b = binary.BigEndian.AppendUint16(b, 0xffff)
			if req.IsFlexible() {
				b = append(b, 0)
			}
			out = append(out, req.AppendTo(b))
		}
	}
	return out
}

// FuzzRequest decodes and answers arbitrary request frames against a
// real store: nothing may panic (a recovered panic is reported as an
// internal error, which fails the target), and every frame is either
// answered or refused with a closed connection.
func FuzzRequest(f *testing.F) {
	for _, s := range requestSeeds(f) {
		f.Add(s)
	}
	st, err := store.Open(f.TempDir(), store.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	if err := st.CreateTopic("f", 2, store.DefaultTopicConfig()); err != nil {
		f.Fatal(err)
	}
	// Topic creation is left out (CreateTopics and CreatePartitions are
	// only decoded, auto creation is off): an input asking for 100,000
	// partitions is a valid request that is merely slow to carry out.
	off := false
	srv, err := New(st, Options{AutoCreateTopics: &off, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	srv.host, srv.port = "127.0.0.1", 9092
	// A stopped server: a parked fetch answers at once.
	srv.cancel()
	f.Fuzz(func(t *testing.T, frame []byte) {
		c := newConn(srv, discardConn{})
		var err error
		if len(frame) >= 2 && (binary.BigEndian.Uint16(frame) == 19 || binary.BigEndian.Uint16(frame) == 37) {
			_, _, err = c.decodeRequest(frame)
		} else {
			err = c.handleFrame(frame)
		}
		if ce, ok := err.(*errCloseConn); ok && ce.internal {
			t.Fatalf("panic answering a request: %s", ce.reason)
		}
	})
}
