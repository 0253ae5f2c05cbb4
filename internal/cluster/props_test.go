package cluster

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/cluster/meta"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestPropsDamaged: a damaged meta.properties is ErrDamaged, as the
// node's other files, and layout's typed error naming the file, line and
// byte (layout's tests cover the reader itself).
func TestPropsDamaged(t *testing.T) {
	fs := vfs.NewMem()
	vfstest.WriteFile(t, fs, filepath.Join("/d", layout.MetaPropertiesFile), []byte("node.id=1\ngarbage\n"))
	_, err := readProps(fs, "/d")
	var me *layout.MetaPropertiesError
	if !errors.Is(err, ErrDamaged) || !errors.As(err, &me) || me.Line != 2 || me.Pos != 10 || !strings.Contains(err.Error(), layout.MetaPropertiesFile) {
		t.Errorf("damaged meta.properties: %v, want ErrDamaged and layout's error at line 2, byte 10", err)
	}
}

func TestTopicRecord(t *testing.T) {
	fs := vfs.NewMem()
	r, err := loadTopicRecord(fs, "/d")
	if err != nil || len(r.ids) != 0 {
		t.Fatalf("no record: %v, %v", r, err)
	}
	r.ids["a"] = [16]byte{1, 2}
	r.ids["b.c"] = [16]byte{15: 9}
	if err := r.save(); err != nil {
		t.Fatal(err)
	}
	got, err := loadTopicRecord(fs, "/d")
	if err != nil || len(got.ids) != 2 || got.ids["a"] != r.ids["a"] || got.ids["b.c"] != r.ids["b.c"] {
		t.Fatalf("reloaded %v, %v", got.ids, err)
	}
	if err := vfs.WriteFileAtomic(fs, r.path, []byte("a 0102\nb zz\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := loadTopicRecord(fs, "/d"); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "line 1 (byte 0)") {
		t.Errorf("damaged record: %v, want ErrDamaged at line 1, byte 0", err)
	}
}

// A directory of another cluster is refused once the metadata names the
// cluster: ClusterID answers ErrClusterID.
func TestOtherClusterRefused(t *testing.T) {
	c := newCluster(t, 3)
	ctrl := c.controller()
	ctx := ctxTimeout(t)
	if _, err := ctrl.node.ClusterID(ctx); err != nil {
		t.Fatal(err)
	}
	r := c.follower(ctrl)
	testutil.WaitFor(t, "the follower to learn the cluster id", func() bool {
		select {
		case <-r.node.ready:
			return true
		default:
			return false
		}
	})
	c.stop(r.id)
	p := props{path: filepath.Join(r.dir, layout.MetaPropertiesFile), nodeID: r.id, clusterID: "another-cluster-xxxxxx"}
	if err := p.write(c.fs); err != nil {
		t.Fatal(err)
	}
	c.restart(r.id)
	if _, err := r.node.ClusterID(ctx); !errors.Is(err, ErrClusterID) || !strings.Contains(err.Error(), "another-cluster-xxxxxx") {
		t.Errorf("restarted with another cluster's id: %v, want ErrClusterID", err)
	}
}

// A node that never learned the cluster id (no quorum yet) still keeps
// its node id: a restart under another id is refused. Alone among two
// voters, over an empty DIR, it does not even join the metadata group:
// Start waits for the other voter to answer (checkBlank) until its
// StartContext ends.
func TestNodeIDKeptBeforeClusterID(t *testing.T) {
	c := &tcluster{t: t, fs: vfs.NewMem(), voters: map[int32]string{}, nodes: map[int32]*tnode{}}
	c.configure = func(_ *tnode, cfg *Config) {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		t.Cleanup(cancel)
		cfg.StartContext = ctx
	}
	var lns []net.Listener
	for i := int32(1); i <= 2; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		c.voters[i] = ln.Addr().String()
	}
	lns[1].Close() // node 2 never runs: no quorum, no cluster id
	tn := &tnode{id: 1, dir: "/d", addr: c.voters[1], kafka: "k:1"}
	c.nodes[1] = tn
	if err := c.startWith(tn, 1, lns[0]); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "another voter") {
		t.Fatalf("node 1 alone over an empty DIR: %v, want it waiting for another voter until its StartContext ends", err)
	}
	if _, err := c.fs.Stat("/d/" + meta.DirName + "/quorum-state"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the waiting node wrote raft's state: %v", err)
	}
	if p, err := readProps(c.fs, "/d"); err != nil || p.exists {
		t.Fatalf("meta.properties written before the cluster id is known: %+v, %v", p, err)
	}
	err := c.startWith(&tnode{dir: "/d", addr: c.voters[1], kafka: "k:1"}, 2, nil)
	if !errors.Is(err, ErrNodeID) || !strings.Contains(err.Error(), nodeDirName) {
		t.Errorf("restart as node 2: %v, want ErrNodeID naming %s", err, nodeDirName)
	}
	if err := c.startWith(tn, 1, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("restart as node 1: %v, want the same wait", err)
	}
}
