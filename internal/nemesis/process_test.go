//go:build linux

package nemesis

import (
	"slices"
	"strings"
	"testing"
)

// TestWithListen: a restart listens where the first run did, whichever
// way --listen was spelled, or was left out.
func TestWithListen(t *testing.T) {
	const addr = "127.0.0.1:4242"
	for _, c := range []struct{ in, want []string }{
		{[]string{"serve", "d", "--listen", "127.0.0.1:0", "--grace", "1s"}, []string{"serve", "d", "--listen", addr, "--grace", "1s"}},
		{[]string{"serve", "d", "--listen=127.0.0.1:0"}, []string{"serve", "d", "--listen=" + addr}},
		{[]string{"serve", "d"}, []string{"serve", "d", "--listen", addr}},
	} {
		in := slices.Clone(c.in)
		if got := withListen(in, addr); !slices.Equal(got, c.want) {
			t.Errorf("withListen(%q) = %q, want %q", c.in, got, c.want)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("withListen changed its argument to %q", in)
		}
	}
}

// TestTailBuffer: the buffer keeps the last outputKept bytes, and since
// finds what was written after a mark even once older output is dropped,
// which is how a restart finds its own "listening on" line and not the
// previous run's.
func TestTailBuffer(t *testing.T) {
	var b tailBuffer
	b.Write([]byte("seglog serve: listening on 127.0.0.1:1, node 0\n"))
	m := b.mark()
	if got := b.since(m); got != "" {
		t.Fatalf("since the mark before anything new: %q", got)
	}
	b.Write([]byte(strings.Repeat("x", outputKept) + "\n"))
	b.Write([]byte("seglog serve: listening on 127.0.0.1:2, node 0\n"))
	if got := listening.FindStringSubmatch(b.since(m)); got == nil || got[1] != "127.0.0.1:2" {
		t.Fatalf("since the mark: %v", got)
	}
	if n := len(b.String()); n != outputKept {
		t.Fatalf("%d bytes kept, want %d", n, outputKept)
	}
}
