package layout

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/seglog/seglog/vfs"
)

// MetaProperties is a broker's meta.properties (MetaPropertiesFile), in
// the format Kafka's KRaft keeps it: the node id and the cluster id,
// which survive restarts so that clients that cached them see the same
// cluster. seglog serve keeps one in its store directory; a cluster node
// writes it once the replicated metadata names the cluster, and keeps
// the node id alone in a file of the same format before that.
type MetaProperties struct {
	// NodeID is node.id (or broker.id, the key of Kafka's ZooKeeper
	// brokers).
	NodeID int32
	// ClusterID is cluster.id, "" when the file has none.
	ClusterID string
	// DirectoryID is directory.id (Kafka's KIP-858): a random id a
	// cluster node gives its DIR when it first makes it, so the cluster
	// can tell the directory a node registered from from a wiped or
	// replaced one; "" when the file has none.
	DirectoryID string
}

// NewID returns a random id as Kafka writes its Uuids (a cluster.id, a
// directory.id): 16 random bytes as 22 characters of URL-safe base64
// without padding.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ErrBadMetaProperties reports a meta.properties that does not parse.
var ErrBadMetaProperties = errors.New("layout: malformed meta.properties")

// MetaPropertiesError is a meta.properties that does not parse (it
// matches ErrBadMetaProperties): where, and why.
type MetaPropertiesError struct {
	Path string
	// Line is the 1-based line at fault, 0 for the file as a whole (too
	// large, or a key missing); Pos the byte position where it starts.
	Line, Pos int
	Reason    string
	// Err is the underlying error, if any (vfs.ErrFileTooLarge).
	Err error
}

// Error names the file, the line and byte, and the fault.
func (e *MetaPropertiesError) Error() string {
	where := e.Path
	if e.Line > 0 {
		where = fmt.Sprintf("%s line %d, at byte %d", e.Path, e.Line, e.Pos)
	}
	return fmt.Sprintf("%v: %s: %s", ErrBadMetaProperties, where, e.Reason)
}

// Unwrap makes the error match ErrBadMetaProperties, and Err.
func (e *MetaPropertiesError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrBadMetaProperties, e.Err}
	}
	return []error{ErrBadMetaProperties}
}

// MaxMetaPropertiesBytes bounds how much of a meta.properties is read: it
// holds a few short lines, and a damaged or hostile file must not make
// its reader allocate by its size.
const MaxMetaPropertiesBytes = 64 << 10

// ReadMetaProperties reads the meta.properties at path. A missing file
// returns an error matching fs.ErrNotExist; one that does not parse, or
// is larger than MaxMetaPropertiesBytes, a *MetaPropertiesError.
func ReadMetaProperties(fsys vfs.FS, path string) (MetaProperties, error) {
	data, err := vfs.ReadFileLimit(fsys, path, MaxMetaPropertiesBytes)
	if errors.Is(err, vfs.ErrFileTooLarge) {
		return MetaProperties{}, &MetaPropertiesError{Path: path, Reason: err.Error(), Err: err}
	}
	if err != nil {
		return MetaProperties{}, err
	}
	return ParseMetaProperties(path, data)
}

// ParseMetaProperties parses the contents of a meta.properties: lines
// "key=value", blank lines and "#" comments skipped, keys other than
// node.id (or broker.id), cluster.id and directory.id ignored, as Java's Properties
// files go. node.id is required, a number from 0 to 2^31-1; cluster.id is
// not (a caller that needs it checks ClusterID). path is used only in
// errors.
func ParseMetaProperties(path string, data []byte) (MetaProperties, error) {
	var p MetaProperties
	haveNode := false
	for pos, i := 0, 1; pos < len(data); i++ {
		at := pos
		line := data[pos:]
		if n := bytes.IndexByte(line, '\n'); n >= 0 {
			line = line[:n]
		}
		pos += len(line) + 1
		bad := func(format string, args ...any) error {
			return &MetaPropertiesError{Path: path, Line: i, Pos: at, Reason: fmt.Sprintf(format, args...)}
		}
		s := strings.TrimSpace(string(line))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return MetaProperties{}, bad("no '='")
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "node.id", "broker.id":
			id, err := strconv.ParseInt(v, 10, 32)
			if err != nil || id < 0 {
				return MetaProperties{}, bad("bad node id %q", v)
			}
			p.NodeID, haveNode = int32(id), true
		case "cluster.id":
			p.ClusterID = v
		case "directory.id":
			p.DirectoryID = v
		}
	}
	if !haveNode {
		return MetaProperties{}, &MetaPropertiesError{Path: path, Reason: "no node.id"}
	}
	return p, nil
}

// formatMetaProperties renders p as a meta.properties: a comment, the
// version line Kafka writes (1, KRaft's), node.id and, when p has them,
// cluster.id and directory.id.
func formatMetaProperties(p MetaProperties) []byte {
	body := fmt.Sprintf("#written by seglog serve\nversion=1\nnode.id=%d\n", p.NodeID)
	if p.ClusterID != "" {
		body += "cluster.id=" + p.ClusterID + "\n"
	}
	if p.DirectoryID != "" {
		body += "directory.id=" + p.DirectoryID + "\n"
	}
	return []byte(body)
}

// WriteMetaProperties writes p to path atomically (a temporary file
// renamed over it), so a crash leaves the old file or the new one. A
// negative node id, or a cluster or directory id that would not read back as written
// (a line break, which would also let it add lines of its own, or spaces
// around it), is refused with a *MetaPropertiesError and nothing written.
func WriteMetaProperties(fsys vfs.FS, path string, p MetaProperties) error {
	if p.NodeID < 0 {
		return &MetaPropertiesError{Path: path, Reason: fmt.Sprintf("node id %d is negative", p.NodeID)}
	}
	for _, v := range []struct{ name, id string }{{"cluster id", p.ClusterID}, {"directory id", p.DirectoryID}} {
		if strings.ContainsAny(v.id, "\r\n") || strings.TrimSpace(v.id) != v.id {
			return &MetaPropertiesError{Path: path, Reason: fmt.Sprintf("%s %q would not read back", v.name, v.id)}
		}
	}
	return vfs.WriteFileAtomic(fsys, path, formatMetaProperties(p))
}
