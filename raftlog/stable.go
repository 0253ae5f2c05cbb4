package raftlog

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/seglog/seglog/vfs"
)

// stableState is the StableStore: raft's few keys (CurrentTerm,
// LastVoteTerm, LastVoteCand) and whatever else a caller stores, in
// memory, and where the quorum-state file stands (stable_slots.go has its
// format). Everything is under Store.stableMu.
type stableState struct {
	fs   vfs.FS
	path string

	bytes map[string][]byte
	u64   map[string]uint64

	// slot is the slot size of the file on disk, 0 when the next Set must
	// replace the file whole: there is none, it is the older JSON format,
	// or a replacement failed and may or may not have happened.
	slot int
	// f is the file open for in-place Sets, nil until the first one.
	f vfs.File
	// cur is the slot holding the newest durable state; a Set writes the
	// other one. It changes only when a Set succeeds: after a failed
	// write or fdatasync the other slot may be half on disk, so the next
	// Set writes that slot again and never the only good one.
	cur int
	// seq is the highest sequence number written or attempted: a failed
	// attempt's number is not reused.
	seq uint64
	// note says what is wrong with the slot Open passed over, if it is
	// neither valid nor blank; Open logs it.
	note string
	buf  []byte // a slot's bytes as written
}

// jsonState is the older format of quorum-state, before issue 29: JSON,
// each key as itself when it is valid UTF-8 not starting with "hex:",
// else "hex:" and its bytes in hex. It is read, never written.
type jsonState struct {
	Bytes  map[string][]byte `json:"bytes,omitempty"`
	Uint64 map[string]uint64 `json:"uint64,omitempty"`
}

const jsonHexPrefix = "hex:"

func jsonKey(path, k string) (string, error) {
	if !strings.HasPrefix(k, jsonHexPrefix) {
		return k, nil
	}
	b, err := hex.DecodeString(k[len(jsonHexPrefix):])
	if err != nil {
		return "", &StableFileError{Path: path, Reason: fmt.Sprintf("JSON key %q: %v", k, err)}
	}
	return string(b), nil
}

// loadStable reads the quorum-state file: absent is empty, either format
// is read (the slot format starts with its magic; the older JSON one with
// '{'), anything else is a *StableFileError.
func (s *Store) loadStable() error {
	if err := s.stable.load(s.fs, filepath.Join(s.dir, StableFile)); err != nil {
		return err
	}
	if s.stable.note != "" {
		// Expected after a crash during a Set (the slot it was writing is
		// torn, and the Set never returned); anything else is damage the
		// other slot survived. Either way it is overwritten by the next Set.
		s.logger().Warn("raftlog: one quorum-state slot is unreadable; the other holds the state",
			"file", s.stable.path, "fault", s.stable.note, "sequence", s.stable.seq)
	}
	return nil
}

// logger is Options.Logger, or slog.Default as for the partition's own
// messages when that is nil.
func (s *Store) logger() *slog.Logger {
	if s.opts.Logger != nil {
		return s.opts.Logger
	}
	return slog.Default()
}

// load reads the file at path into st, which it resets.
func (st *stableState) load(fsys vfs.FS, path string) error {
	*st = stableState{fs: fsys, path: path, bytes: map[string][]byte{}, u64: map[string]uint64{}}
	data, err := vfs.ReadFileLimit(fsys, path, maxStableFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, vfs.ErrFileTooLarge):
		return &StableFileError{Path: st.path, Pos: maxStableFile, Reason: "larger than a stable-store file can be", Err: err}
	case err != nil:
		return fmt.Errorf("raftlog: reading %s: %w", st.path, err)
	}
	// A torn first slot may start with anything, '{' included, so a file
	// that is not valid JSON is read as slots. JSON never holds the zero
	// bytes every slot header does, so the two cannot be confused.
	if !bytes.HasPrefix(data, []byte(stableMagic)) && bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
		var js jsonState
		jerr := json.Unmarshal(data, &js)
		if jerr == nil {
			return st.fromJSON(&js)
		}
		if !isSlotFileSize(len(data)) {
			e := &StableFileError{Path: st.path, Reason: "neither JSON nor slots: " + jerr.Error(), Err: jerr}
			if se := (*json.SyntaxError)(nil); errors.As(jerr, &se) {
				e.Pos = se.Offset
			}
			return e
		}
	}
	slot, cur, note, err := readSlots(st.path, data)
	if err != nil {
		return err
	}
	st.note = note
	st.bytes, st.u64 = slot.bytes, slot.u64
	st.slot, st.cur, st.seq = len(data)/2, cur, slot.seq
	return nil
}

func (st *stableState) fromJSON(js *jsonState) error {
	for k, v := range js.Bytes {
		key, err := jsonKey(st.path, k)
		if err != nil {
			return err
		}
		st.bytes[key] = append([]byte{}, v...)
	}
	for k, v := range js.Uint64 {
		key, err := jsonKey(st.path, k)
		if err != nil {
			return err
		}
		st.u64[key] = v
	}
	return nil
}

// save writes the state in memory durably: into the slot not holding the
// newest state, with one WriteAt and one fdatasync; or, when there is no
// slot file yet or the state outgrew its slots, by replacing the file
// whole (vfs.WriteFileAtomic), which a crash leaves old or new.
func (st *stableState) save() error {
	st.buf = appendState(append(st.buf[:0], make([]byte, slotHeader)...), st.bytes, st.u64)
	if len(st.buf) > maxSlot {
		return fmt.Errorf("raftlog: the stable store's keys and values take %d bytes, more than the %d a %s slot holds", len(st.buf)-slotHeader, maxSlot-slotHeader, StableFile)
	}
	if st.slot == 0 || len(st.buf) > st.slot {
		return st.replace()
	}
	if st.f == nil {
		f, err := st.fs.OpenReadWrite(st.path)
		if err != nil {
			return err
		}
		st.f = f
	}
	st.seq++
	putSlotHeader(st.buf, st.slot, st.seq)
	next := 1 - st.cur
	if _, err := st.f.WriteAt(st.buf, int64(next*st.slot)); err != nil {
		return err
	}
	if err := st.f.Sync(); err != nil {
		return err
	}
	st.cur = next
	return nil
}

// replace writes a new file whose two slots both hold the state (the same
// bytes, the same sequence number: Open takes the first, so the second is
// written next, and until then a damaged first slot still leaves the
// state) with slots big enough for it, and puts it in place of the old
// file, JSON or slots, atomically.
func (st *stableState) replace() error {
	size := slotSizeFor(st.slot, len(st.buf))
	if size == 0 {
		// slotSizeFor stops at maxSlot, which save checked.
		return fmt.Errorf("raftlog: no slot size holds %d bytes", len(st.buf))
	}
	st.seq++
	putSlotHeader(st.buf, size, st.seq)
	img := make([]byte, 2*size)
	copy(img, st.buf)
	copy(img[size:], st.buf)
	// The open file is the one being replaced: whether the replacement
	// succeeds or fails (perhaps after its rename), it must not be
	// written again.
	st.closeFile()
	if err := vfs.WriteFileAtomic(st.fs, st.path, img); err != nil {
		st.slot = 0
		return err
	}
	st.slot, st.cur = size, 0
	return nil
}

// closeFile closes the file of in-place Sets, if open. Its error is
// dropped: the file was only written through Sync, whose errors Set
// returned.
func (st *stableState) closeFile() {
	if st.f != nil {
		st.f.Close()
		st.f = nil
	}
}

// Set stores val under key durably. A failed Set leaves the value it
// replaced in memory; on disk, either may be there.
func (s *Store) Set(key []byte, val []byte) error {
	s.stableMu.Lock()
	defer s.stableMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	st := &s.stable
	old, had := st.bytes[string(key)]
	st.bytes[string(key)] = append([]byte{}, val...)
	if err := st.save(); err != nil {
		if had {
			st.bytes[string(key)] = old
		} else {
			delete(st.bytes, string(key))
		}
		return err
	}
	return nil
}

// Get returns the value stored under key; an unset key is nil and no
// error. That is what raft.StableStore's doc asks ("an empty byte slice
// if key was not found"), and all raft needs: raft v1.8.0 reads
// LastVoteCand with Get when it is asked for a vote and takes a nil value
// with no error as no vote. It also accepts an error whose text is exactly
// "not found" (what raft's InmemStore.Get answers for an unset key); any
// other error makes it refuse the vote. A closed Store answers ErrClosed.
func (s *Store) Get(key []byte) ([]byte, error) {
	s.stableMu.Lock()
	defer s.stableMu.Unlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	v, ok := s.stable.bytes[string(key)]
	if !ok {
		return nil, nil
	}
	return append([]byte{}, v...), nil
}

// SetUint64 stores val under key durably. A failed SetUint64 leaves the
// value it replaced in memory; on disk, either may be there.
func (s *Store) SetUint64(key []byte, val uint64) error {
	s.stableMu.Lock()
	defer s.stableMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	st := &s.stable
	old, had := st.u64[string(key)]
	st.u64[string(key)] = val
	if err := st.save(); err != nil {
		if had {
			st.u64[string(key)] = old
		} else {
			delete(st.u64, string(key))
		}
		return err
	}
	return nil
}

// GetUint64 returns the value stored under key, 0 and no error when
// unset, as raft.StableStore's doc asks and raft's InmemStore answers.
// raft v1.8.0 reads CurrentTerm this way in NewRaft and HasExistingState
// and LastVoteTerm when asked for a vote; it accepts no error but one whose
// text is exactly "not found", so NewRaft fails on any other. A closed
// Store answers ErrClosed.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	s.stableMu.Lock()
	defer s.stableMu.Unlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return s.stable.u64[string(key)], nil
}
