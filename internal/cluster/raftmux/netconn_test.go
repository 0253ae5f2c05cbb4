package raftmux

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestNetConnIsTheDialersConn: a dialled connection hands out the very
// connection the Dialer made (a *net.TCPConn by default, on which
// net.Buffers writes with writev), and bytes written on it arrive.
func TestNetConnIsTheDialersConn(t *testing.T) {
	var dialled net.Conn
	m := listen(t, Config{Dialer: func(address string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout("tcp", address, timeout)
		dialled = c
		return c, err
	}})
	l := register(t, m, "g")
	got := accepted(l)
	c, err := l.Dial(raft.ServerAddress(l.Addr().String()), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u, ok := c.(interface{ NetConn() net.Conn })
	if !ok {
		t.Fatalf("a dialled %T has no NetConn", c)
	}
	if u.NetConn() != dialled {
		t.Fatalf("NetConn is %v, the Dialer made %v", u.NetConn(), dialled)
	}
	if _, ok := u.NetConn().(*net.TCPConn); !ok {
		t.Fatalf("NetConn is a %T, want the *net.TCPConn", u.NetConn())
	}
	s := <-got
	if s == nil {
		t.Fatal("Accept failed")
	}
	defer s.Close()
	bufs := net.Buffers{[]byte("pi"), []byte("ng")}
	if _, err := bufs.WriteTo(u.NetConn()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(s, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v", buf, err)
	}
}
