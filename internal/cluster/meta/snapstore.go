package meta

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/internal/crc32c"
	"github.com/seglog/seglog/vfs"
)

// ErrBadSnapshot reports a snapshot file whose checksum or trailer does
// not hold: torn by a crash before it was complete, or damaged since.
var ErrBadSnapshot = errors.New("meta: damaged snapshot file")

// Snapshot file names: a complete snapshot is <id>.snap; one being
// written is <id>.tmp until its data is durable, then renamed.
const (
	snapSuffix = ".snap"
	tmpSuffix  = ".tmp"
	// snapTrailer is the meta length and the checksum after the meta.
	snapTrailer = 8
	// maxSnapMeta bounds the JSON meta (the raft configuration of a
	// handful of voters).
	maxSnapMeta = 1 << 20
)

// SnapshotStore is a raft.SnapshotStore that reaches the disk through
// vfs, so MemFS's crash model and vfs.Inject cover snapshots as they
// cover the log (hashicorp's FileSnapshotStore calls package os). Each
// snapshot is one file: the state, the raft meta as JSON, the meta's
// length and a CRC-32C of everything before it. It is written as
// <id>.tmp, synced, renamed to <id>.snap and the directory synced, so a
// crash leaves either no snapshot or a whole one; leftovers are removed
// when the store is opened, and a file that fails its checksum is not
// listed.
type SnapshotStore struct {
	fs     vfs.FS
	dir    string
	retain int
	seq    atomic.Uint64
}

// NewSnapshotStore opens (creating if needed) a snapshot store in dir,
// keeping the retain newest snapshots (at least 1).
func NewSnapshotStore(fsys vfs.FS, dir string, retain int) (*SnapshotStore, error) {
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, err
	}
	names, err := fsys.List(dir)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if strings.HasSuffix(n, tmpSuffix) {
			if err := fsys.Remove(filepath.Join(dir, n)); err != nil {
				return nil, err
			}
		}
	}
	return &SnapshotStore{fs: fsys, dir: dir, retain: max(retain, 1)}, nil
}

// Create starts a snapshot; raft writes the state to the sink and closes
// it.
func (s *SnapshotStore) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("meta: snapshot version %d: only version 1 is written", version)
	}
	// The sequence number keeps two snapshots of one index and
	// millisecond apart.
	id := fmt.Sprintf("%d-%d-%d-%d", term, index, time.Now().UnixMilli(), s.seq.Add(1))
	f, err := s.fs.Create(filepath.Join(s.dir, id+tmpSuffix))
	if err != nil {
		return nil, err
	}
	return &snapSink{s: s, f: f, meta: raft.SnapshotMeta{
		Version: version, ID: id, Index: index, Term: term,
		Configuration: configuration, ConfigurationIndex: configurationIndex,
	}}, nil
}

// List returns the complete snapshots' metas, newest first.
func (s *SnapshotStore) List() ([]*raft.SnapshotMeta, error) {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return nil, err
	}
	var out []*raft.SnapshotMeta
	for _, n := range names {
		if !strings.HasSuffix(n, snapSuffix) {
			continue
		}
		meta, _, err := s.read(strings.TrimSuffix(n, snapSuffix))
		if err != nil {
			if errors.Is(err, ErrBadSnapshot) || errors.Is(err, fs.ErrNotExist) {
				// Damaged: raft falls back to an older one, or to the
				// log. Gone: removed since the listing.
				continue
			}
			return nil, err
		}
		out = append(out, meta)
	}
	slices.SortFunc(out, func(a, b *raft.SnapshotMeta) int {
		if a.Term != b.Term {
			return cmpDesc(a.Term, b.Term)
		}
		if a.Index != b.Index {
			return cmpDesc(a.Index, b.Index)
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out, nil
}

func cmpDesc(a, b uint64) int {
	if a > b {
		return -1
	}
	return 1
}

// Open returns a snapshot's meta and state.
func (s *SnapshotStore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, data, err := s.read(id)
	if err != nil {
		return nil, nil, err
	}
	return meta, io.NopCloser(bytes.NewReader(data)), nil
}

// read reads and checks one snapshot file.
func (s *SnapshotStore) read(id string) (*raft.SnapshotMeta, []byte, error) {
	if strings.ContainsAny(id, `/\`) || id == "" {
		return nil, nil, fmt.Errorf("meta: snapshot id %q", id)
	}
	name := filepath.Join(s.dir, id+snapSuffix)
	b, err := vfs.ReadFileLimit(s.fs, name, MaxSnapshotBytes+maxSnapMeta+snapTrailer)
	if err != nil {
		return nil, nil, err
	}
	bad := func(why string) (*raft.SnapshotMeta, []byte, error) {
		return nil, nil, fmt.Errorf("%w: %s: %s", ErrBadSnapshot, name, why)
	}
	if len(b) < snapTrailer {
		return bad("shorter than its trailer")
	}
	body, trailer := b[:len(b)-4], b[len(b)-4:]
	if crc32c.Checksum(body) != binary.BigEndian.Uint32(trailer) {
		return bad("checksum mismatch")
	}
	mlen := binary.BigEndian.Uint32(body[len(body)-4:])
	body = body[:len(body)-4]
	if uint64(mlen) > uint64(len(body)) || mlen > maxSnapMeta {
		return bad("meta length past the data")
	}
	var meta raft.SnapshotMeta
	if err := json.Unmarshal(body[len(body)-int(mlen):], &meta); err != nil {
		return bad(err.Error())
	}
	data := body[:len(body)-int(mlen)]
	if meta.ID != id || meta.Size != int64(len(data)) {
		return bad("meta does not describe the file")
	}
	return &meta, data, nil
}

// reap removes the snapshots beyond the retain newest.
func (s *SnapshotStore) reap() error {
	metas, err := s.List()
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for i, m := range metas {
		if i < s.retain {
			keep[m.ID] = true
		}
	}
	names, err := s.fs.List(s.dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if id, ok := strings.CutSuffix(n, snapSuffix); ok && !keep[id] {
			if err := s.fs.Remove(filepath.Join(s.dir, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// snapSink writes one snapshot.
type snapSink struct {
	s    *SnapshotStore
	f    vfs.File
	meta raft.SnapshotMeta
	crc  uint32
	done bool
}

func (k *snapSink) ID() string { return k.meta.ID }

func (k *snapSink) Write(p []byte) (int, error) {
	if k.meta.Size+int64(len(p)) > MaxSnapshotBytes {
		return 0, fmt.Errorf("%w: snapshot over %d bytes", ErrBadEncoding, MaxSnapshotBytes)
	}
	n, err := k.f.Write(p)
	k.crc = crc32c.Update(k.crc, p[:n])
	k.meta.Size += int64(n)
	return n, err
}

// Close completes the snapshot: the meta and trailer written, the file
// synced and renamed into place, the directory synced, older snapshots
// beyond the retained removed.
func (k *snapSink) Close() error {
	if k.done {
		return nil
	}
	k.done = true
	tmp := k.f.Name()
	err := k.finish()
	if cerr := k.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = k.s.fs.Rename(tmp, filepath.Join(k.s.dir, k.meta.ID+snapSuffix))
	}
	if err == nil {
		err = k.s.fs.SyncDir(k.s.dir)
	}
	if err != nil {
		k.s.fs.Remove(tmp)
		return err
	}
	return k.s.reap()
}

func (k *snapSink) finish() error {
	meta, err := json.Marshal(&k.meta)
	if err != nil {
		return err
	}
	tail := binary.BigEndian.AppendUint32(meta, uint32(len(meta)))
	tail = binary.BigEndian.AppendUint32(tail, crc32c.Update(k.crc, tail))
	if _, err := k.f.Write(tail); err != nil {
		return err
	}
	return k.f.Sync()
}

// Cancel abandons the snapshot, removing what was written.
func (k *snapSink) Cancel() error {
	if k.done {
		return nil
	}
	k.done = true
	err := k.f.Close()
	return errors.Join(err, k.s.fs.Remove(k.f.Name()))
}
