package multiraft

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	hraft "github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/cluster/raftmux"
	"github.com/seglog/seglog/internal/testutil"
)

// snapPeer is a fake peer's snapshot port: each pull it accepts is
// answered by answer, after the request is read.
func snapPeer(t *testing.T, answer func(conn net.Conn, req []byte)) string {
	t.Helper()
	mux, err := raftmux.Listen("127.0.0.1:0", raftmux.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mux.Close() })
	layer, err := mux.Register(DefaultGroup + "-snap")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			conn, err := layer.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				var hdr [4]byte
				if _, err := io.ReadFull(conn, hdr[:]); err != nil {
					return
				}
				req := make([]byte, binary.BigEndian.Uint32(hdr[:]))
				if _, err := io.ReadFull(conn, req); err != nil {
					return
				}
				answer(conn, req)
			}()
		}
	}()
	return mux.Addr().String()
}

// nodeWithPeer is node 1 whose one peer, node 2, is at addr.
func nodeWithPeer(t *testing.T, addr string) *Node {
	t.Helper()
	mux, err := raftmux.Listen("127.0.0.1:0", raftmux.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(Config{ID: 1, Mux: mux, Peers: map[uint64]string{2: addr}, MaxFrame: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.Close()
		mux.Close()
	})
	return n
}

func answerFrame(conn net.Conn, kind byte, payload []byte) {
	h := binary.BigEndian.AppendUint32(nil, uint32(1+len(payload)))
	_, _ = conn.Write(append(append(h, kind), payload...))
}

// A pull hands on the sender's payloads in order and ends at its end
// frame; a failure frame is the pull's error, with the reason; a frame
// announced longer than MaxFrame, or of an unknown kind, ends the pull
// before anything is read for it.
func TestFetchFrames(t *testing.T) {
	cases := map[string]struct {
		answer func(conn net.Conn)
		want   string // "" for success
		got    []string
	}{
		"payloads then end": {answer: func(c net.Conn) {
			answerFrame(c, snapData, []byte("one"))
			answerFrame(c, snapData, []byte("two"))
			answerFrame(c, snapEnd, nil)
		}, got: []string{"one", "two"}},
		"failure": {answer: func(c net.Conn) {
			answerFrame(c, snapData, []byte("one"))
			answerFrame(c, snapFail, []byte("no such range"))
		}, want: "no such range", got: []string{"one"}},
		"frame too long": {answer: func(c net.Conn) {
			_, _ = c.Write(append(binary.BigEndian.AppendUint32(nil, 1<<30), snapData))
		}, want: "a frame of 1073741824 bytes"},
		"empty frame": {answer: func(c net.Conn) {
			_, _ = c.Write(append(binary.BigEndian.AppendUint32(nil, 0), snapData))
		}, want: "a frame of 0 bytes"},
		"unknown kind": {answer: func(c net.Conn) { answerFrame(c, 9, nil) }, want: "frame kind 9"},
		"hang up": {answer: func(c net.Conn) {
			answerFrame(c, snapData, []byte("one"))
		}, want: "EOF", got: []string{"one"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reqs := make(chan []byte, 1)
			addr := snapPeer(t, func(conn net.Conn, req []byte) {
				reqs <- req
				tc.answer(conn)
			})
			n := nodeWithPeer(t, addr)
			var got []string
			err := n.fetch(context.Background(), 2, 7, []byte("want"), func(p []byte) error {
				got = append(got, string(p))
				return nil
			})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("fetch: %v, want %q", err, tc.want)
			}
			if strings.Join(got, ",") != strings.Join(tc.got, ",") {
				t.Fatalf("payloads %q, want %q", got, tc.got)
			}
			gotReq := <-reqs
			if len(gotReq) != 12 || binary.BigEndian.Uint64(gotReq) != 7 || string(gotReq[8:]) != "want" {
				t.Fatalf("the sender got the request %q", gotReq)
			}
		})
	}
}

// The serving side answers a pull for a group it does not run with a
// failure frame naming it, and closes a connection whose request frame
// is out of bounds without answering.
func TestServeSnapshotRefuses(t *testing.T) {
	c := newCluster(t, 3, 1, Config{})
	target := c.members[1]
	mux, err := raftmux.Listen("127.0.0.1:0", raftmux.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer mux.Close()
	layer, err := mux.Register(DefaultGroup + "-snap")
	if err != nil {
		t.Fatal(err)
	}
	dial := func(req []byte) net.Conn {
		t.Helper()
		conn, err := layer.Dial(hraft.ServerAddress(target.addr), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(req); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(testutil.WaitTimeout))
		return conn
	}
	req := binary.BigEndian.AppendUint32(nil, 8+4)
	req = binary.BigEndian.AppendUint64(req, 999)
	conn := dial(append(req, "want"...))
	answer, err := io.ReadAll(conn)
	conn.Close()
	if err != nil || len(answer) < 5 || answer[4] != snapFail || !strings.Contains(string(answer[5:]), "group 999") {
		t.Fatalf("answer %q (%v), want a failure naming group 999", answer, err)
	}
	conn = dial(binary.BigEndian.AppendUint32(nil, 1<<30))
	answer, err = io.ReadAll(conn)
	conn.Close()
	if err != nil || len(answer) != 0 {
		t.Fatalf("a request frame of 1 GiB: answered %q (%v), want the connection closed", answer, err)
	}
}
