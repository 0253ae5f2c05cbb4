package server

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// loadMeta reads dir's meta.properties (layout.MetaPropertiesFile, which
// a Kafka broker keeps in every log dir: the node and cluster ids survive
// restarts, so clients that cached them see the same cluster) through
// fsys, the store's filesystem. On first start it makes one with nodeID
// and a new random cluster id (22 characters of URL-safe base64, as
// Kafka's Uuid.randomUuid().toString() gives), written only if write is
// set: a read-only store's directory is never written, and its id lasts
// as long as the server. A file without cluster.id is refused: the server
// has no other source for it.
func loadMeta(fsys vfs.FS, dir string, nodeID int32, write bool) (layout.MetaProperties, error) {
	path := filepath.Join(dir, layout.MetaPropertiesFile)
	m, err := layout.ReadMetaProperties(fsys, path)
	if errors.Is(err, fs.ErrNotExist) {
		m := layout.MetaProperties{NodeID: nodeID, ClusterID: layout.NewID()}
		if !write {
			return m, nil
		}
		if err := layout.WriteMetaProperties(fsys, path, m); err != nil {
			return layout.MetaProperties{}, err
		}
		return m, nil
	}
	if err != nil {
		return layout.MetaProperties{}, err
	}
	if m.ClusterID == "" {
		return layout.MetaProperties{}, &layout.MetaPropertiesError{Path: path, Reason: "no cluster.id"}
	}
	return m, nil
}
