package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// metaFile is Kafka's meta.properties, which a broker keeps in every log
// dir: the node and cluster ids survive restarts, so clients that cached
// them see the same cluster.
const metaFile = layout.MetaPropertiesFile

type meta struct {
	nodeID    int32
	clusterID string
}

// loadMeta reads dir's meta.properties through fsys (the store's
// filesystem), or on first start makes one with nodeID and a new random
// cluster id (22 characters of URL-safe base64, as Kafka's
// Uuid.randomUuid().toString() gives), written only if write is set: a
// read-only store's directory is never written, and its id lasts as long
// as the server.
func loadMeta(fsys vfs.FS, dir string, nodeID int32, write bool) (meta, error) {
	path := filepath.Join(dir, metaFile)
	data, err := vfs.ReadFileLimit(fsys, path, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		var id [16]byte
		rand.Read(id[:])
		m := meta{nodeID: nodeID, clusterID: base64.RawURLEncoding.EncodeToString(id[:])}
		if !write {
			return m, nil
		}
		body := fmt.Sprintf("#written by seglog serve\nversion=1\nnode.id=%d\ncluster.id=%s\n", m.nodeID, m.clusterID)
		if err := vfs.WriteFileAtomic(fsys, path, []byte(body)); err != nil {
			return meta{}, err
		}
		return m, nil
	}
	if err != nil {
		return meta{}, err
	}
	return parseMeta(path, data)
}

func parseMeta(path string, data []byte) (meta, error) {
	var m meta
	var haveNode bool
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return meta{}, fmt.Errorf("server: %s line %d: no '='", path, i+1)
		}
		switch strings.TrimSpace(k) {
		case "node.id", "broker.id":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil || n < 0 {
				return meta{}, fmt.Errorf("server: %s line %d: bad node id %q", path, i+1, v)
			}
			m.nodeID, haveNode = int32(n), true
		case "cluster.id":
			m.clusterID = strings.TrimSpace(v)
		}
	}
	if !haveNode || m.clusterID == "" {
		return meta{}, fmt.Errorf("server: %s: needs node.id and cluster.id", path)
	}
	return m, nil
}
