package replica

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"path/filepath"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	pb "go.etcd.io/raft/v3/raftpb"
)

// The raft-state file (layout.RaftStateFile) holds raft's HardState and
// ConfState, and a snapshot install under way, replaced whole and
// atomically (vfs.WriteFileAtomic: written, synced, renamed, directory
// synced) on every change:
//
//	"SGRS" uint16 version (1; 2 or 3 with an install)
//	uint64 term, vote, commit
//	a configuration: four lists (voters, learners, outgoing voters,
//	  incoming learners), each uint32 count then count uint64 ids,
//	  then uint8 autoLeave
//	versions 2 and 3, the install (see install):
//	  uint64 index, term, end, from, start; uint8 restart;
//	  the snapshot's configuration, as above
//	version 3 only, uint64 logStart (above 0: a log start of 0 moves
//	  nothing, and is written as version 2)
//	uint32 CRC-32C of everything before it
//
// The install is in this file because it must change in one write with the
// commit index: together they say which raft log the anchors describe and
// what the partition holds past it (snapshot.go). A file with no install is
// version 1, as before installs were kept, so only a directory mid-install
// needs this build to read it; one whose install carries no log start to
// take is version 2, as before it was kept.
//
// A file that fails its checksum or framing is an error naming the file
// and the byte: raft's vote must never be forgotten silently.
const (
	stateMagic      = "SGRS"
	stateVersion    = 1
	installVersion  = 2
	logStartVersion = 3
	// maxStateFile bounds what is read: a configuration of thousands of
	// replicas is far less.
	maxStateFile = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// ErrBadState is a damaged or unreadable raft-state file.
var ErrBadState = errors.New("replica: damaged raft state")

// conf is a ConfState as the file keeps it.
type conf struct {
	voters, learners []uint64
	votersOut, lnext []uint64
	autoLeave        bool
}

// raftState is the content of the raft-state file.
type raftState struct {
	term, vote, commit uint64
	conf
	// inst is the snapshot install under way, nil when none; never
	// changed in place (a new one is saved).
	inst *install
}

// install is a snapshot install under way (snapshot.go), saved before the
// copy changes the partition, so that Open knows what the partition holds:
// the raft log the anchors describe ends at from (the end of the committed
// entries, the uncommitted ones cut first), and the batches past from are
// the sender's, copied at their offsets and checked as they came, no
// entry of this log. The anchors are replaced by the snapshot's (index+1
// at end, after term) only once the copy has reached end, and this install
// is dropped after that, so the anchor file says whether the install was
// taken.
type install struct {
	index, term uint64
	end, from   int64
	// restart says the partition is restarted at start, past from, where
	// the sender's batches begin (its log start, or the base offset of
	// the batch holding it): the copy then begins there (snapshot.go).
	restart bool
	start   int64
	// logStart is the sender's log start, which the partition's start
	// rises to when the install is taken (raiseStart, install.go); 0
	// moves nothing.
	logStart int64
	// cs is the snapshot's configuration, saved when the install is taken.
	cs conf
}

// snapAnchor is the anchor the install's raft log starts with once taken.
func (in *install) snapAnchor() anchor { return anchor{in.index + 1, in.end, in.term} }

func (st raftState) hardState() *pb.HardState {
	return &pb.HardState{Term: new(st.term), Vote: new(st.vote), Commit: new(st.commit)}
}

func (c conf) confState() *pb.ConfState {
	return &pb.ConfState{
		Voters:         append([]uint64(nil), c.voters...),
		Learners:       append([]uint64(nil), c.learners...),
		VotersOutgoing: append([]uint64(nil), c.votersOut...),
		LearnersNext:   append([]uint64(nil), c.lnext...),
		AutoLeave:      new(c.autoLeave),
	}
}

func (c *conf) setConfState(cs *pb.ConfState) {
	c.voters = append([]uint64(nil), cs.GetVoters()...)
	c.learners = append([]uint64(nil), cs.GetLearners()...)
	c.votersOut = append([]uint64(nil), cs.GetVotersOutgoing()...)
	c.lnext = append([]uint64(nil), cs.GetLearnersNext()...)
	c.autoLeave = cs.GetAutoLeave()
}

func (s *Store) statePath() string { return filepath.Join(s.dir, layout.RaftStateFile) }

func (st raftState) encode() []byte {
	version := byte(stateVersion)
	if st.inst != nil {
		version = installVersion
		if st.inst.logStart > 0 {
			version = logStartVersion
		}
	}
	b := append([]byte(stateMagic), 0, version)
	b = binary.BigEndian.AppendUint64(b, st.term)
	b = binary.BigEndian.AppendUint64(b, st.vote)
	b = binary.BigEndian.AppendUint64(b, st.commit)
	b = st.conf.encode(b)
	if in := st.inst; in != nil {
		for _, v := range []uint64{in.index, in.term, uint64(in.end), uint64(in.from), uint64(in.start)} {
			b = binary.BigEndian.AppendUint64(b, v)
		}
		b = appendFlag(b, in.restart)
		b = in.cs.encode(b)
		if version == logStartVersion {
			b = binary.BigEndian.AppendUint64(b, uint64(in.logStart))
		}
	}
	return binary.BigEndian.AppendUint32(b, crcOf(b))
}

func (c conf) encode(b []byte) []byte {
	for _, ids := range [][]uint64{c.voters, c.learners, c.votersOut, c.lnext} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
		for _, id := range ids {
			b = binary.BigEndian.AppendUint64(b, id)
		}
	}
	return appendFlag(b, c.autoLeave)
}

func appendFlag(b []byte, f bool) []byte {
	if f {
		return append(b, 1)
	}
	return append(b, 0)
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
	v := binary.BigEndian.Uint16(body[4:])
	if v < stateVersion || v > logStartVersion {
		return st, bad(4, fmt.Sprintf("version %d, this build reads %d to %d", v, stateVersion, logStartVersion))
	}
	pos := head
	st.term = binary.BigEndian.Uint64(body[pos:])
	st.vote = binary.BigEndian.Uint64(body[pos+8:])
	st.commit = binary.BigEndian.Uint64(body[pos+16:])
	pos += 24
	pos, err := st.conf.decode(body, pos, bad)
	if err != nil {
		return st, err
	}
	if v >= installVersion {
		in := &install{}
		if pos, err = in.decode(body, pos, bad); err != nil {
			return st, err
		}
		if v == logStartVersion {
			if len(body)-pos < 8 {
				return st, bad(pos, "an install's log start cut short")
			}
			ls := binary.BigEndian.Uint64(body[pos:])
			if ls == 0 || ls > uint64(in.end) {
				return st, bad(pos, fmt.Sprintf("an install's log start %d, its snapshot ends at %d", ls, in.end))
			}
			in.logStart = int64(ls)
			pos += 8
		}
		st.inst = in
	}
	if pos != len(body) {
		return st, bad(pos, fmt.Sprintf("%d bytes after the state", len(body)-pos))
	}
	return st, nil
}

// decode reads a configuration at pos and returns the position after it.
func (c *conf) decode(body []byte, pos int, bad func(int, string) error) (int, error) {
	for _, ids := range []*[]uint64{&c.voters, &c.learners, &c.votersOut, &c.lnext} {
		if len(body)-pos < 4 {
			return pos, bad(pos, "cut short")
		}
		n := binary.BigEndian.Uint32(body[pos:])
		pos += 4
		if uint64(n) > uint64(len(body)-pos)/8 {
			return pos, bad(pos-4, fmt.Sprintf("a list of %d ids in %d bytes", n, len(body)-pos))
		}
		for range n {
			*ids = append(*ids, binary.BigEndian.Uint64(body[pos:]))
			pos += 8
		}
	}
	if len(body)-pos < 1 || body[pos] > 1 {
		return pos, bad(pos, "no autoLeave flag")
	}
	c.autoLeave = body[pos] == 1
	return pos + 1, nil
}

// decode reads an install at pos and returns the position after it; its
// offsets must be in order (from <= end, and start in (from, end] for a
// restart), as the Store saves them.
func (in *install) decode(body []byte, pos int, bad func(int, string) error) (int, error) {
	if len(body)-pos < 5*8+1 {
		return pos, bad(pos, "an install cut short")
	}
	var v [5]uint64
	for i := range v {
		v[i] = binary.BigEndian.Uint64(body[pos+8*i:])
	}
	if v[1] > math.MaxInt32 || v[2] > math.MaxInt64 || v[3] > v[2] || v[4] > v[2] {
		return pos, bad(pos, fmt.Sprintf("an install at index %d, term %d, offsets %d, %d, %d", v[0], v[1], v[2], v[3], v[4]))
	}
	in.index, in.term, in.end, in.from, in.start = v[0], v[1], int64(v[2]), int64(v[3]), int64(v[4])
	pos += 5 * 8
	if body[pos] > 1 || body[pos] == 1 && in.start <= in.from {
		return pos, bad(pos, fmt.Sprintf("restart flag %d, the partition from %d restarted at %d", body[pos], in.from, in.start))
	}
	in.restart = body[pos] == 1
	return in.cs.decode(body, pos+1, bad)
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
