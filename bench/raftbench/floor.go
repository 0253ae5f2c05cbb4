package raftbench

import (
	"encoding/binary"
	"errors"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/vfs"
)

// PeerFloor names FloorPeer.
const PeerFloor = "floor"

// FloorPeer is not a store but the least a durable StoreLogs can cost on
// this disk, for the StoreLogs shapes' floor in the same run: each call
// writes its entries (index, term, length, data) with one pwrite at the
// end of a file whose 64 MiB were allocated when it was created, as
// raftlog's and raft-wal's segments are, then calls fdatasync once. No
// framing beyond that, no checksum, no index, no lock. Every other method
// fails with errFloorOnly, so its other shapes show "refused".
var FloorPeer = Peer{PeerFloor, openFloor}

var errFloorOnly = errors.New("the floor stores logs only")

type floorStore struct {
	f   vfs.File
	off int64
	buf []byte
}

func openFloor(dir string) (Store, error) {
	if err := vfs.Default.MkdirAll(dir); err != nil {
		return nil, err
	}
	f, err := vfs.Default.Create(filepath.Join(dir, "floor.log"))
	if err != nil {
		return nil, err
	}
	if err := f.Preallocate(0, 64<<20); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return &floorStore{f: f}, nil
}

func (s *floorStore) StoreLogs(logs []*raft.Log) error {
	s.buf = s.buf[:0]
	for _, l := range logs {
		s.buf = binary.BigEndian.AppendUint64(s.buf, l.Index)
		s.buf = binary.BigEndian.AppendUint64(s.buf, l.Term)
		s.buf = binary.BigEndian.AppendUint32(s.buf, uint32(len(l.Data)))
		s.buf = append(s.buf, l.Data...)
	}
	if _, err := s.f.WriteAt(s.buf, s.off); err != nil {
		return err
	}
	s.off += int64(len(s.buf))
	return s.f.Sync()
}

func (s *floorStore) StoreLog(l *raft.Log) error       { return s.StoreLogs([]*raft.Log{l}) }
func (s *floorStore) FirstIndex() (uint64, error)      { return 0, errFloorOnly }
func (s *floorStore) LastIndex() (uint64, error)       { return 0, errFloorOnly }
func (s *floorStore) GetLog(uint64, *raft.Log) error   { return errFloorOnly }
func (s *floorStore) DeleteRange(uint64, uint64) error { return errFloorOnly }
func (s *floorStore) Set([]byte, []byte) error         { return errFloorOnly }
func (s *floorStore) Get([]byte) ([]byte, error)       { return nil, errFloorOnly }
func (s *floorStore) SetUint64([]byte, uint64) error   { return errFloorOnly }
func (s *floorStore) GetUint64([]byte) (uint64, error) { return 0, errFloorOnly }
func (s *floorStore) Close() error                     { return s.f.Close() }
