package multiraft

import (
	"bufio"
	"bytes"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// encodeFrame is a frame as the sender writes it: roundOut.frame's header,
// then the entries' Data.
func encodeFrame(t testing.TB, gid uint64, m *pb.Message) []byte {
	t.Helper()
	o := &roundOut{}
	hdr, size, ok := o.frame(gid, m)
	if !ok {
		t.Fatalf("message %v does not encode", m)
	}
	out := append([]byte(nil), hdr...)
	for _, e := range m.GetEntries() {
		out = append(out, e.GetData()...)
	}
	if len(out) != size {
		t.Fatalf("frame of %d bytes, its header says %d", len(out), size)
	}
	return out
}

// FuzzFrame reads a peer's bytes as frames. Whatever they are, the reader
// returns an error or messages, never panics, and allocates within the
// frame bound; every message it returns, written again by the sender's
// encoding, reads back equal (entries' Data included, fields unknown to
// this build dropped from entries) for the same group.
func FuzzFrame(f *testing.F) {
	app := &pb.Message{
		Type: pb.MessageType_MsgApp.Enum(), To: new(uint64(2)), From: new(uint64(1)), Term: new(uint64(3)),
		LogTerm: new(uint64(2)), Index: new(uint64(7)), Commit: new(uint64(6)),
		Entries: []*pb.Entry{
			{Term: new(uint64(3)), Index: new(uint64(8)), Data: []byte("a producer batch")},
			{Term: new(uint64(3)), Index: new(uint64(9))},
			{Term: new(uint64(3)), Index: new(uint64(10)), Type: pb.EntryType_EntryConfChange.Enum(), Data: []byte("conf")},
		},
	}
	hb := &pb.Message{Type: pb.MessageType_MsgHeartbeat.Enum(), To: new(uint64(1)), From: new(uint64(2)), Term: new(uint64(3))}
	f.Add(encodeFrame(f, 5, app))
	f.Add(append(encodeFrame(f, 1, hb), encodeFrame(f, 9, app)...))
	f.Add(encodeFrame(f, 1, hb)[:10])
	f.Fuzz(func(t *testing.T, b []byte) {
		n := &Node{cfg: Config{MaxFrame: 1 << 20}}
		r := bufio.NewReader(bytes.NewReader(b))
		var body []byte
		for {
			gid, m, err := n.readFrame(r, &body)
			if err != nil {
				return
			}
			// The sender writes an entry's Term, Index, Type and Data,
			// which are all raft and the Storage keep of it; fields
			// this build does not know are not passed on.
			for _, e := range m.GetEntries() {
				e.ProtoReflect().SetUnknown(nil)
			}
			again := encodeFrame(t, gid, m)
			gid2, m2, err := n.readFrame(bufio.NewReader(bytes.NewReader(again)), new([]byte))
			if err != nil {
				t.Fatalf("a frame written from a message read back fails: %v", err)
			}
			if gid2 != gid || !proto.Equal(m, m2) {
				t.Fatalf("group %d message %v read back as group %d message %v", gid, m, gid2, m2)
			}
		}
	})
}
