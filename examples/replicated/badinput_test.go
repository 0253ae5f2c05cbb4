package main

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/raftlog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// listing returns every path under dir, to show that a refused Start
// wrote nothing.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	out := []string{dir}
	names, err := vfs.Default.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := vfs.Default.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			out = append(out, listing(t, p)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// TestBadPeers: a -peers list the example cannot run is refused with
// ErrBadPeers before anything is bound or written.
func TestBadPeers(t *testing.T) {
	for _, c := range []struct{ peers, why string }{
		{"garbage", "want id=raftaddr=httpaddr"},
		{"n0=127.0.0.1:7100", "want id=raftaddr=httpaddr"},
		{"n0=0.0.0.0:7100=127.0.0.1:8100", "127.0.0.1 only"},
		{"n0=localhost:7100=127.0.0.1:8100", "127.0.0.1 only"},
		{"n0=127.0.0.1:abc=127.0.0.1:8100", "port must be a number"},
		{"n0=127.0.0.1:0=127.0.0.1:8100", "port must be a number"},
		{"n0=127.0.0.1:70000=127.0.0.1:8100", "port must be a number"},
		{"n0=127.0.0.1=127.0.0.1:8100", "missing port"},
		{"=127.0.0.1:7100=127.0.0.1:8100", "no ID"},
		{"n0=127.0.0.1:7100=127.0.0.1:8100,n0=127.0.0.1:7101=127.0.0.1:8101", "ID n0 is used twice"},
		{"n0=127.0.0.1:7100=127.0.0.1:8100,n1=127.0.0.1:7100=127.0.0.1:8101", "address 127.0.0.1:7100 is used twice"},
		{"n0=127.0.0.1:7100=127.0.0.1:7100", "address 127.0.0.1:7100 is used twice"},
	} {
		dir := t.TempDir()
		peers, err := parsePeers(c.peers)
		if err == nil {
			_, err = Start(dir, peers[0], peers, true, io.Discard)
		}
		if !errors.Is(err, ErrBadPeers) || !strings.Contains(err.Error(), c.why) {
			t.Fatalf("-peers %s: %v; want ErrBadPeers saying %q", c.peers, err, c.why)
		}
		if got := listing(t, dir); len(got) != 1 {
			t.Fatalf("-peers %s: the refused Start wrote %v", c.peers, got)
		}
	}
	peers, _ := parsePeers("n0=127.0.0.1:7100=127.0.0.1:8100")
	if _, err := Start(t.TempDir(), Peer{ID: "n9", Raft: "127.0.0.1:7109", HTTP: "127.0.0.1:8109"}, peers, true, io.Discard); !errors.Is(err, ErrBadPeers) {
		t.Fatalf("a node not among the peers: %v", err)
	}
}

// TestAddressInUse: with its HTTP or raft address taken, Start fails
// naming which, writes nothing and releases the other address.
func TestAddressInUse(t *testing.T) {
	for _, which := range []string{"HTTP", "raft"} {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		self := Peer{ID: "n0", Raft: freeAddr(t), HTTP: freeAddr(t)}
		other := self.HTTP
		if which == "HTTP" {
			self.HTTP, other = taken.Addr().String(), self.Raft
		} else {
			self.Raft = taken.Addr().String()
		}
		dir := filepath.Join(t.TempDir(), "data")
		_, err = Start(dir, self, []Peer{self}, true, io.Discard)
		taken.Close()
		if err == nil || !strings.Contains(err.Error(), which+" address") || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("%s address in use: %v", which, err)
		}
		if _, err := vfs.Default.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s address in use: the refused Start created %s (%v)", which, dir, err)
		}
		ln, err := net.Listen("tcp", other)
		if err != nil {
			t.Fatalf("%s address in use: the other address is still bound: %v", which, err)
		}
		ln.Close()
	}
}

// TestDirIsALog: -dir naming an existing seglog log is refused (the node's
// directory would be created inside it, making it unopenable), and the
// log is left as it was.
func TestDirIsALog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mylog")
	l, err := seglog.Open(dir, seglog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(record.Record{Value: []byte("mine")}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	before := listing(t, dir)
	self := Peer{ID: "n0", Raft: freeAddr(t), HTTP: freeAddr(t)}
	_, err = Start(dir, self, []Peer{self}, true, io.Discard)
	if !errors.Is(err, raftlog.ErrNotAStore) {
		t.Fatalf("-dir a log: %v, want raftlog.ErrNotAStore", err)
	}
	if after := listing(t, dir); !slices.Equal(before, after) {
		t.Fatalf("the refused Start changed the log directory: %v, then %v", before, after)
	}
	l, err = seglog.Open(dir, seglog.Options{})
	if err != nil {
		t.Fatalf("the log no longer opens: %v", err)
	}
	l.Close()
}

// TestReadParams: /read refuses a from, max or wait that is not a number
// in range, and takes defaults for absent ones.
func TestReadParams(t *testing.T) {
	for q, ok := range map[string]bool{
		"": true, "from=1": true, "from=5&max=10000": true, "wait=7": true, "from=2&wait=3": true,
		"from=abc": false, "from=0": false, "from=-1": false,
		"max=0": false, "max=10001": false, "max=x": false,
		"wait=0": false, "wait=-1": false, "wait=x": false,
	} {
		r, _ := http.NewRequest("GET", "/read?"+q, nil)
		rq, err := readParams(r)
		if (err == nil) != ok {
			t.Fatalf("/read?%s: %+v %v", q, rq, err)
		}
	}
	r, _ := http.NewRequest("GET", "/read", nil)
	if rq, _ := readParams(r); rq != (readQuery{from: 1, limit: 1000}) {
		t.Fatalf("defaults %+v", rq)
	}
}

// TestAppendTooLarge: a value over 1 MiB is refused with 413 and not
// stored (it used to be cut to 1 MiB and acknowledged).
func TestAppendTooLarge(t *testing.T) {
	self := Peer{ID: "n0", Raft: freeAddr(t), HTTP: freeAddr(t)}
	n, err := Start(t.TempDir(), self, []Peer{self}, true, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	for deadline := time.Now().Add(30 * time.Second); !strings.HasPrefix(status(self), "Leader"); {
		if time.Now().After(deadline) {
			t.Fatal("the single node did not become leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
	post := func(v string) int {
		resp, err := client.Post("http://"+self.HTTP+"/append", "text/plain", strings.NewReader(v))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(strings.Repeat("x", maxValue+1)); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a value of %d bytes: %d", maxValue+1, code)
	}
	if code := post("small"); code != http.StatusOK {
		t.Fatalf("a small value: %d", code)
	}
	if got := readPeer(t, self, 1); !slices.Equal(got, []string{"small"}) {
		t.Fatalf("the node holds %q", got)
	}
}
