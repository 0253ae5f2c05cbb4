package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The raft-state file (layout.RaftStateFile) holds raft's HardState and
// ConfState, replaced whole and atomically (vfs.WriteFileAtomic: written,
// synced, renamed, directory synced) on every change:
//
//	"SGRS" uint16 version
//	uint64 term, vote, commit
//	four lists (voters, learners, outgoing voters, incoming learners),
//	  each uint32 count then count uint64 ids
//	uint8 autoLeave
//	uint32 CRC-32C of everything before it
//
// A file that fails its checksum or framing is an error naming the file
// and the byte: raft's vote must never be forgotten silently.
const (
	stateMagic   = "SGRS"
	stateVersion = 1
	// maxStateFile bounds what is read: a configuration of thousands of
	// replicas is far less.
	maxStateFile = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// ErrBadState is a damaged or unreadable raft-state file.
var ErrBadState = errors.New("replica: damaged raft state")

// raftState is the content of the raft-state file.
type raftState struct {
	term, vote, commit uint64
	voters, learners   []uint64
	votersOut, lnext   []uint64
	autoLeave          bool
}

func (st raftState) hardState() *pb.HardState {
	return &pb.HardState{Term: new(st.term), Vote: new(st.vote), Commit: new(st.commit)}
}

func (st raftState) confState() *pb.ConfState {
	return &pb.ConfState{
		Voters:         append([]uint64(nil), st.voters...),
		Learners:       append([]uint64(nil), st.learners...),
		VotersOutgoing: append([]uint64(nil), st.votersOut...),
		LearnersNext:   append([]uint64(nil), st.lnext...),
		AutoLeave:      new(st.autoLeave),
	}
}

func (st *raftState) setConfState(cs *pb.ConfState) {
	st.voters = append([]uint64(nil), cs.GetVoters()...)
	st.learners = append([]uint64(nil), cs.GetLearners()...)
	st.votersOut = append([]uint64(nil), cs.GetVotersOutgoing()...)
	st.lnext = append([]uint64(nil), cs.GetLearnersNext()...)
	st.autoLeave = cs.GetAutoLeave()
}

func (s *Store) statePath() string { return filepath.Join(s.dir, layout.RaftStateFile) }

func (st raftState) encode() []byte {
	b := append([]byte(stateMagic), 0, stateVersion)
	b = binary.BigEndian.AppendUint64(b, st.term)
	b = binary.BigEndian.AppendUint64(b, st.vote)
	b = binary.BigEndian.AppendUint64(b, st.commit)
	for _, ids := range [][]uint64{st.voters, st.learners, st.votersOut, st.lnext} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
		for _, id := range ids {
			b = binary.BigEndian.AppendUint64(b, id)
		}
	}
	if st.autoLeave {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return binary.BigEndian.AppendUint32(b, crcOf(b))
}

// loadState reads the raft-state file; a missing one is the zero state (a
// fresh log).
func loadState(fsys vfs.FS, path string) (raftState, error) {
	data, err := vfs.ReadFileLimit(fsys, path, maxStateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return raftState{}, nil
	}
	if err != nil {
		return raftState{}, fmt.Errorf("replica: reading %s: %w", path, err)
	}
	return decodeState(path, data)
}

// decodeState parses the file's bytes; every count is checked against the
// bytes left before it sizes anything.
func decodeState(path string, data []byte) (raftState, error) {
	var st raftState
	bad := func(pos int, why string) error {
		return fmt.Errorf("%w: %s at byte %d: %s", ErrBadState, path, pos, why)
	}
	const head = len(stateMagic) + 2
	if len(data) < head+24+4*4+1+4 {
		return st, bad(len(data), fmt.Sprintf("file of %d bytes is too short", len(data)))
	}
	body := data[:len(data)-4]
	if want, got := binary.BigEndian.Uint32(data[len(body):]), crcOf(body); want != got {
		return st, bad(len(body), fmt.Sprintf("checksum %08x, the bytes give %08x", want, got))
	}
	if string(body[:4]) != stateMagic {
		return st, bad(0, fmt.Sprintf("magic %q", body[:4]))
	}
	if v := binary.BigEndian.Uint16(body[4:]); v != stateVersion {
		return st, bad(4, fmt.Sprintf("version %d, this build reads %d", v, stateVersion))
	}
	pos := head
	st.term = binary.BigEndian.Uint64(body[pos:])
	st.vote = binary.BigEndian.Uint64(body[pos+8:])
	st.commit = binary.BigEndian.Uint64(body[pos+16:])
	pos += 24
	for _, ids := range []*[]uint64{&st.voters, &st.learners, &st.votersOut, &st.lnext} {
		if len(body)-pos < 4 {
			return st, bad(pos, "cut short")
		}
		n := binary.BigEndian.Uint32(body[pos:])
		pos += 4
		if uint64(n) > uint64(len(body)-pos)/8 {
			return st, bad(pos-4, fmt.Sprintf("a list of %d ids in %d bytes", n, len(body)-pos))
		}
		for range n {
			*ids = append(*ids, binary.BigEndian.Uint64(body[pos:]))
			pos += 8
		}
	}
	if len(body)-pos != 1 || body[pos] > 1 {
		return st, bad(pos, fmt.Sprintf("%d bytes after the lists, want one flag", len(body)-pos))
	}
	st.autoLeave = body[pos] == 1
	return st, nil
}

// saveState writes st and, once it is durable, makes it the state. Called
// with mu.
func (s *Store) saveState(st raftState) error {
	if err := vfs.WriteFileAtomic(s.fs, s.statePath(), st.encode()); err != nil {
		return fmt.Errorf("replica: saving %s: %w", s.statePath(), err)
	}
	s.state = st
	s.commitDirty = false
	return nil
}

// SetHardState records the term, vote and commit index: durably when the
// term or the vote changes, else the commit index is written later (with
// the next such change, or at Close).
func (s *Store) SetHardState(hs *pb.HardState) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	st := s.state
	st.term, st.vote, st.commit = hs.GetTerm(), hs.GetVote(), hs.GetCommit()
	if p := s.pending; p != nil {
		// A snapshot install is under way: its commit index stays on
		// disk, for Open to see the install (snapshot.go).
		st.commit = max(st.commit, p.index)
	}
	if st.term == s.state.term && st.vote == s.state.vote {
		// Only the commit index moved: etcd raft needs no sync for it
		// (raft.MustSync), as a restarted node learns it again from the
		// leader. It is kept in memory and written with the next change
		// of term or vote, or at Close; after a crash the one on disk is
		// older, never past an entry the log holds.
		if st.commit != s.state.commit {
			s.state.commit = st.commit
			s.commitDirty = true
		}
		return nil
	}
	return s.saveState(st)
}

// saveCommit writes a commit index SetHardState kept in memory. Called
// with mu.
func (s *Store) saveCommit() error {
	if !s.commitDirty {
		return nil
	}
	return s.saveState(s.state)
}
