package layout

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestMetaPropertiesRoundTrip: what WriteMetaProperties writes reads back
// the same, with or without a cluster or directory id; Kafka's own file (a dated
// comment, broker.id from a ZooKeeper broker, other keys) reads too.
func TestMetaPropertiesRoundTrip(t *testing.T) {
	fsys := vfs.NewMem()
	path := "/" + MetaPropertiesFile // the root is there: no directory to make
	if _, err := ReadMetaProperties(fsys, path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no file: %v, want fs.ErrNotExist", err)
	}
	for _, p := range []MetaProperties{{NodeID: 3, ClusterID: "AAAAAAAAAAAAAAAAAAAAAA"}, {NodeID: 0}, {NodeID: 2, ClusterID: "c", DirectoryID: "7dQ8Bq3XRUu8pVhTjT2zvA"}, {NodeID: 1<<31 - 1, ClusterID: "x"}} {
		if err := WriteMetaProperties(fsys, path, p); err != nil {
			t.Fatal(err)
		}
		if got, err := ReadMetaProperties(fsys, path); err != nil || got != p {
			t.Errorf("wrote %+v, read %+v, %v", p, got, err)
		}
	}
	for _, bad := range []MetaProperties{{NodeID: 1, ClusterID: "a\nnode.id=2"}, {NodeID: 1, ClusterID: " a"}, {NodeID: 1, DirectoryID: "a\rb"}, {NodeID: -1}} {
		if err := WriteMetaProperties(fsys, path, bad); !errors.Is(err, ErrBadMetaProperties) {
			t.Errorf("writing %+v: %v, want ErrBadMetaProperties", bad, err)
		}
	}
	if got, err := ReadMetaProperties(fsys, path); err != nil || got.NodeID != 1<<31-1 {
		t.Errorf("after refused writes: %+v, %v; want the last good file", got, err)
	}
	kafka := "#\n#Thu Dec 04 10:00:00 UTC 2026\r\nversion=1\nbroker.id = 7\ndirectory.id=abc\n\ncluster.id=q1Sh-9_ISia_zwGINzRvyQ\n"
	want := MetaProperties{NodeID: 7, ClusterID: "q1Sh-9_ISia_zwGINzRvyQ", DirectoryID: "abc"}
	if got, err := ParseMetaProperties(path, []byte(kafka)); err != nil || got != want {
		t.Errorf("Kafka's file: %+v, %v; want %+v", got, err, want)
	}
}

// TestMetaPropertiesDamaged: a file that does not parse is a
// *MetaPropertiesError matching ErrBadMetaProperties, naming the file and
// the line and byte at fault; one too large is refused without reading it
// whole.
func TestMetaPropertiesDamaged(t *testing.T) {
	const path = "/d/meta.properties"
	for _, c := range []struct {
		body      string
		line, pos int
		says      string
	}{
		{"node.id=x\ncluster.id=a\n", 1, 0, `bad node id "x"`},
		{"version=1\nnode.id=-1\n", 2, 10, "bad node id"},
		{"node.id=2147483648\n", 1, 0, "bad node id"},
		{"#c\ngarbage\n", 2, 3, "no '='"},
		{"cluster.id=a\n", 0, 0, "no node.id"},
		{"", 0, 0, "no node.id"},
	} {
		_, err := ParseMetaProperties(path, []byte(c.body))
		var me *MetaPropertiesError
		if !errors.As(err, &me) || !errors.Is(err, ErrBadMetaProperties) {
			t.Errorf("%q: %v, want a *MetaPropertiesError", c.body, err)
			continue
		}
		if me.Path != path || me.Line != c.line || me.Pos != c.pos || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: %+v (%v), want line %d byte %d saying %q", c.body, me, err, c.line, c.pos, c.says)
		}
	}

	fsys := vfs.NewMem()
	big := append([]byte("node.id=1\n#"), bytes.Repeat([]byte("x"), MaxMetaPropertiesBytes)...)
	vfstest.WriteFile(t, fsys, path, big)
	if _, err := ReadMetaProperties(fsys, path); !errors.Is(err, ErrBadMetaProperties) || !errors.Is(err, vfs.ErrFileTooLarge) {
		t.Errorf("a file over %d bytes: %v, want ErrBadMetaProperties and vfs.ErrFileTooLarge", MaxMetaPropertiesBytes, err)
	}
}

// FuzzMetaProperties: any bytes parse to ids or a *MetaPropertiesError
// whose position lies in the input, never a panic; ids parsed write and
// read back the same.
func FuzzMetaProperties(f *testing.F) {
	f.Add([]byte("version=1\nnode.id=1\ncluster.id=abc\n"))
	f.Add([]byte("#c\r\nbroker.id = 7\n\n"))
	f.Add([]byte("node.id=\n="))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseMetaProperties("/m", data)
		if err != nil {
			var me *MetaPropertiesError
			if !errors.As(err, &me) || me.Pos < 0 || me.Pos > len(data) {
				t.Fatalf("%q: %v", data, err)
			}
			return
		}
		fsys := vfs.NewMem()
		if err := WriteMetaProperties(fsys, "/m", p); err != nil {
			// Only a value no file line can hold is refused.
			if !strings.ContainsAny(p.ClusterID, "\r\n") {
				t.Fatalf("%q: parsed %+v, and writing it: %v", data, p, err)
			}
			return
		}
		back, err := ReadMetaProperties(fsys, "/m")
		if err != nil || back != p {
			t.Fatalf("%q: parsed %+v, written and read back %+v, %v", data, p, back, err)
		}
	})
}
