package raftlog

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/seglog/seglog/vfs"
)

// stableState is the quorum-state file: raft's few keys (CurrentTerm,
// LastVoteTerm, LastVoteCand) and whatever else a caller stores, as JSON.
type stableState struct {
	Bytes  map[string][]byte `json:"bytes,omitempty"`
	Uint64 map[string]uint64 `json:"uint64,omitempty"`
}

// maxStableFile bounds the read of a damaged quorum-state file.
const maxStableFile = 16 << 20

// stableKey names key in the JSON file: as itself when it is valid UTF-8
// (raft's keys are words), else in hex behind a prefix that a key shown as
// itself cannot start with, so binary keys neither collide nor get
// replaced by JSON's U+FFFD.
func stableKey(key []byte) string {
	const hexPrefix = "hex:"
	if utf8.Valid(key) && !strings.HasPrefix(string(key), hexPrefix) {
		return string(key)
	}
	return hexPrefix + hex.EncodeToString(key)
}

func (s *Store) stablePath() string { return filepath.Join(s.dir, StableFile) }

func (s *Store) loadStable() error {
	s.stable = stableState{Bytes: map[string][]byte{}, Uint64: map[string]uint64{}}
	data, err := vfs.ReadFileLimit(s.fs, s.stablePath(), maxStableFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("raftlog: reading %s: %w", s.stablePath(), err)
	}
	var st stableState
	if err := json.Unmarshal(data, &st); err != nil {
		// Written atomically, so only damage makes it unreadable; raft must
		// not start with a forgotten vote.
		return fmt.Errorf("raftlog: %s is damaged: %w", s.stablePath(), err)
	}
	for k, v := range st.Bytes {
		s.stable.Bytes[k] = v
	}
	for k, v := range st.Uint64 {
		s.stable.Uint64[k] = v
	}
	return nil
}

// saveStable replaces the file durably; called with stableMu.
func (s *Store) saveStable() error {
	data, err := json.Marshal(&s.stable)
	if err != nil {
		return err
	}
	return vfs.WriteFileAtomic(s.fs, s.stablePath(), data)
}

// Set stores val under key durably.
func (s *Store) Set(key []byte, val []byte) error {
	s.stableMu.Lock()
	defer s.stableMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	old, had := s.stable.Bytes[stableKey(key)]
	s.stable.Bytes[stableKey(key)] = append([]byte{}, val...)
	if err := s.saveStable(); err != nil {
		if had {
			s.stable.Bytes[stableKey(key)] = old
		} else {
			delete(s.stable.Bytes, stableKey(key))
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
	v, ok := s.stable.Bytes[stableKey(key)]
	if !ok {
		return nil, nil
	}
	return append([]byte{}, v...), nil
}

// SetUint64 stores val under key durably.
func (s *Store) SetUint64(key []byte, val uint64) error {
	s.stableMu.Lock()
	defer s.stableMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	old, had := s.stable.Uint64[stableKey(key)]
	s.stable.Uint64[stableKey(key)] = val
	if err := s.saveStable(); err != nil {
		if had {
			s.stable.Uint64[stableKey(key)] = old
		} else {
			delete(s.stable.Uint64, stableKey(key))
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
	return s.stable.Uint64[stableKey(key)], nil
}
