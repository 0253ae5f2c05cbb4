package meta

import (
	"fmt"
	"slices"
)

// snapshotMagic starts every encoded State, so a file that is not one is
// told apart from a State of an unknown version.
const snapshotMagic = "seglog-meta"

// snapshotVersion is the version EncodeState writes. Version 2 added
// the cluster id after the producer-id blocks, version 3 the SASL
// credentials (credentials.go), the ACLs and the client quotas
// (quotas.go) after it, version 4 the brokers' directory ids after
// those; DecodeState still reads versions 1 to 3 (without what came
// later).
const snapshotVersion = 4

// MaxSnapshotBytes bounds an encoded State Restore reads: far above
// what the metadata of store.MaxPartitions-sized topics needs, and a
// bound on what a damaged snapshot can make a node allocate.
const MaxSnapshotBytes = 1 << 30

// EncodeState returns the whole State's encoding, the raft snapshot of
// the metadata: magic, version, the index, the next producer id, then
// brokers, topics and producer-id blocks, each sorted by key so equal
// states encode equally, the cluster id and the credentials.
func EncodeState(s *State) []byte {
	w := &writer{}
	w.b = append(w.b, snapshotMagic...)
	w.u8(snapshotVersion)
	w.uvarint(s.index)
	w.varint(s.nextPID)
	bs := s.Brokers()
	w.uvarint(uint64(len(bs)))
	for _, b := range bs {
		w.varint(int64(b.ID))
		w.str(b.Host)
		w.varint(int64(b.Port))
		w.str(b.RaftAddr)
		w.uvarint(b.Epoch)
	}
	names := s.TopicNames()
	w.uvarint(uint64(len(names)))
	for _, name := range names {
		t := s.topics[name]
		w.str(t.Name)
		w.b = append(w.b, t.ID[:]...)
		w.strMap(t.Configs)
		writeAssignment(w, t.Replicas)
	}
	ids := make([]int32, 0, len(s.lastBlocks))
	for id := range s.lastBlocks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.uvarint(uint64(len(ids)))
	for _, id := range ids {
		b := s.lastBlocks[id]
		w.varint(int64(b.Broker))
		w.varint(b.First)
		w.varint(b.Size)
	}
	w.str(s.clusterID)
	encodeCredentials(w, s)
	encodeACLs(w, s.acls)
	writeQuotas(w, s)
	writeDirectoryIDs(w, bs)
	return w.b
}

// writeDirectoryIDs writes version 4's section: a count, then broker id
// and directory id for each broker that has one, by broker id.
func writeDirectoryIDs(w *writer, bs []Broker) {
	n := 0
	for _, b := range bs {
		if b.DirectoryID != "" {
			n++
		}
	}
	w.uvarint(uint64(n))
	for _, b := range bs {
		if b.DirectoryID != "" {
			w.varint(int64(b.ID))
			w.str(b.DirectoryID)
		}
	}
}

// readDirectoryIDs reads what writeDirectoryIDs wrote into s's brokers:
// each a registered broker, in order, with a non-empty id.
func readDirectoryIDs(r *reader, s *State) {
	n := r.count(2)
	var prev int32
	for i := 0; i < n && r.err == nil; i++ {
		id, dir := r.int32(), r.str()
		b, ok := s.brokers[id]
		switch {
		case r.err != nil:
		case i > 0 && id <= prev:
			r.fail("directory id of broker %d after %d", id, prev)
		case !ok || dir == "" || len(dir) > MaxDirectoryIDLen:
			r.fail("directory id %q of broker %d", dir, id)
		default:
			b.DirectoryID = dir
			s.brokers[id] = b
		}
		prev = id
	}
}

// DecodeState parses what EncodeState wrote. Keys out of order or
// repeated are refused (ErrBadEncoding), so a decoded State re-encodes
// to the same bytes.
func DecodeState(b []byte) (*State, error) {
	if len(b) > MaxSnapshotBytes {
		return nil, fmt.Errorf("%w: snapshot of %d bytes, the limit is %d", ErrBadEncoding, len(b), MaxSnapshotBytes)
	}
	if len(b) < len(snapshotMagic) || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not a metadata snapshot", ErrBadEncoding)
	}
	r := &reader{b: b[len(snapshotMagic):]}
	v := r.u8()
	if r.err == nil && (v < 1 || v > snapshotVersion) {
		return nil, fmt.Errorf("%w: snapshot version %d (this node reads version %d)", ErrUnsupportedVersion, v, snapshotVersion)
	}
	s := emptyState()
	s.index = r.uvarint()
	s.nextPID = r.varint()
	n := r.count(5)
	var prevID int32
	for i := 0; i < n && r.err == nil; i++ {
		b := Broker{ID: r.int32(), Host: r.str(), Port: r.int32(), RaftAddr: r.str(), Epoch: r.uvarint()}
		if i > 0 && b.ID <= prevID {
			r.fail("broker %d after %d", b.ID, prevID)
		}
		prevID = b.ID
		s.brokers[b.ID] = b
	}
	n = r.count(19)
	prev := ""
	for i := 0; i < n && r.err == nil; i++ {
		t := &Topic{Name: r.str()}
		if len(r.b) < len(t.ID) {
			r.fail("truncated topic id")
			break
		}
		copy(t.ID[:], r.b)
		r.b = r.b[len(t.ID):]
		t.Configs = r.strMap()
		t.Replicas = readAssignment(r)
		if i > 0 && t.Name <= prev {
			r.fail("topic %q after %q", t.Name, prev)
		}
		prev = t.Name
		s.topics[t.Name] = t
	}
	n = r.count(3)
	prevID = 0
	for i := 0; i < n && r.err == nil; i++ {
		b := ProducerIDBlock{Broker: r.int32(), First: r.varint(), Size: r.varint()}
		if i > 0 && b.Broker <= prevID {
			r.fail("producer id block of broker %d after %d", b.Broker, prevID)
		}
		prevID = b.Broker
		s.lastBlocks[b.Broker] = b
	}
	if v >= 2 {
		s.clusterID = r.str()
	}
	if v >= 3 {
		decodeCredentials(r, s)
		s.acls = decodeACLs(r)
		readQuotas(r, s)
	}
	if v >= 4 {
		readDirectoryIDs(r, s)
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("metadata snapshot: %w", err)
	}
	return s, nil
}
