package raftlog

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/vfs"
)

// crashEveryOp runs op on a Store over fs and returns the machine's state,
// as a power loss leaves it, at each filesystem operation op performs.
// prepare builds the Store's state first, without crashes.
func crashEveryOp(t *testing.T, prepare, op func(s *Store) error) []*vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	var mu sync.Mutex
	armed := false
	var clones []*vfs.MemFS
	fs := vfs.Inject(mem, vfs.InjectorFunc(func(vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if armed {
			clones = append(clones, mem.CrashClone())
		}
		return nil
	}))
	s := openT(t, fs, "/raft")
	if err := prepare(s); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	armed = true
	mu.Unlock()
	if err := op(s); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	armed = false
	clones = append(clones, mem.CrashClone())
	mu.Unlock()
	s.Close()
	return clones
}

// wantEntries checks that s holds exactly want[first-1 .. last-1].
func wantEntries(t *testing.T, label string, s *Store, want []*raft.Log, first, last uint64) {
	t.Helper()
	f, _ := s.FirstIndex()
	l, _ := s.LastIndex()
	if f != first || l != last {
		t.Fatalf("%s: first/last %d/%d, want %d/%d", label, f, l, first, last)
	}
	for i := first; i <= last; i++ {
		var got raft.Log
		if err := s.GetLog(i, &got); err != nil {
			t.Fatalf("%s: GetLog(%d): %v", label, i, err)
		}
		if !sameLog(&got, want[i-1]) {
			t.Fatalf("%s: GetLog(%d) = %+v, want %+v", label, i, got, *want[i-1])
		}
	}
	var none raft.Log
	if err := s.GetLog(last+1, &none); err != raft.ErrLogNotFound { //nolint:errorlint // identity is the contract
		t.Fatalf("%s: GetLog(%d) past the end = %v", label, last+1, err)
	}
}

// TestSuffixDeleteCrash: a suffix delete inside a batch rewrites the
// batch's first part; a power loss at any point of it leaves a prefix of
// the old log holding at least the kept entries, never less (they may be
// committed), and fsck finds the partition clean. The entries 11..20 are
// two batches (MaxBatchBytes 1 KiB) in two segments, and TruncateTo
// removes the newer segment before it cuts the older one, so a crash
// between the two leaves 1..18: more than the kept prefix, which raft
// treats as the uncommitted suffix it is and deletes again.
func TestSuffixDeleteCrash(t *testing.T) {
	all := concat(entries(1, 10, 1), entries(11, 20, 2))
	prepare := func(s *Store) error {
		if err := s.StoreLogs(all[:10]); err != nil {
			return err
		}
		return s.StoreLogs(all[10:])
	}
	clones := crashEveryOp(t, prepare, func(s *Store) error { return s.DeleteRange(15, 20) })
	if len(clones) < 5 {
		t.Fatalf("only %d filesystem operations in a suffix delete", len(clones))
	}
	sawBefore, sawAfter := false, false
	for k, c := range clones {
		label := fmt.Sprintf("crash at operation %d of %d", k+1, len(clones))
		s := openT(t, c, "/raft")
		last, _ := s.LastIndex()
		switch {
		case last == 20:
			sawBefore = true
		case last == 14:
			sawAfter = true
		case last < 14 || last > 20:
			t.Fatalf("%s: last index %d, want 14 to 20", label, last)
		}
		wantEntries(t, label, s, all, 1, last)
		// The log goes on: the conflicting suffix can be replaced.
		if err := s.DeleteRange(15, last); err != nil && last > 14 {
			t.Fatalf("%s: %v", label, err)
		}
		repl := entries(15, 16, 3)
		if err := s.StoreLogs(repl); err != nil {
			t.Fatalf("%s: append after recovery: %v", label, err)
		}
		wantEntries(t, label+", then appended", s, concat(all[:14], repl), 1, 16)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		checkFsck(t, c, "/raft")
		if _, err := c.Stat("/raft/" + tailFile); err == nil {
			t.Fatalf("%s: %s left behind", label, tailFile)
		}
	}
	if !sawBefore || !sawAfter {
		t.Fatalf("crashes saw the log before the delete: %v, after it: %v", sawBefore, sawAfter)
	}
}

// TestCommitIndexCrash: a staged commit index is on disk only with the
// StoreLogs that followed it. A power loss at any point of that StoreLogs
// finds either the old entries and the old commit index or both new ones.
func TestCommitIndexCrash(t *testing.T) {
	first := entries(1, 8, 1)
	// A new term: the crash also falls between the leader-epoch
	// checkpoint naming it and the batch carrying it.
	more := entries(9, 12, 2)
	prepare := func(s *Store) error {
		if err := s.StageCommitIndex(3); err != nil {
			return err
		}
		if err := s.StoreLogs(first); err != nil {
			return err
		}
		// Staged, never followed by a StoreLogs before the crash below
		// (the first clone): it must not be on disk.
		return s.StageCommitIndex(8)
	}
	clones := crashEveryOp(t, prepare, func(s *Store) error { return s.StoreLogs(more) })
	for k, c := range clones {
		label := fmt.Sprintf("crash at operation %d of %d", k+1, len(clones))
		s := openT(t, c, "/raft")
		last, _ := s.LastIndex()
		commit, err := s.GetCommitIndex()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case last == 8 && commit == 3, last == 12 && commit == 8:
		default:
			t.Fatalf("%s: last index %d with commit index %d; want 8 with 3 or 12 with 8", label, last, commit)
		}
		wantEntries(t, label, s, concat(first, more), 1, last)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		checkFsck(t, c, "/raft")
	}
}

// TestEpochCheckpointRebuilt: a missing, damaged or stale
// leader-epoch-checkpoint is rebuilt from the batches at Open.
func TestEpochCheckpointRebuilt(t *testing.T) {
	all := concat(entries(1, 5, 1), entries(6, 9, 3), entries(10, 12, 7))
	for name, content := range map[string]string{
		"missing": "",
		"damaged": "0\n2\n1 zero\n",
		"stale":   "0\n1\n1 0\n",
		"order":   "0\n2\n3 5\n1 0\n",
	} {
		t.Run(name, func(t *testing.T) {
			fs := vfs.NewMem()
			s := openT(t, fs, "/raft")
			for _, run := range [][]*raft.Log{all[:5], all[5:9], all[9:]} {
				if err := s.StoreLogs(run); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			path := epochPath("/raft/" + PartitionDir)
			if content == "" {
				if err := fs.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else if err := vfs.WriteFileAtomic(fs, path, []byte(content)); err != nil {
				t.Fatal(err)
			}
			s = openT(t, fs, "/raft")
			wantEntries(t, name, s, all, 1, 12)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			data, err := vfs.ReadFileLimit(fs, path, 1<<10)
			if err != nil || string(data) != "0\n3\n1 0\n3 5\n7 9\n" {
				t.Fatalf("leader-epoch-checkpoint %q, %v", data, err)
			}
			checkFsck(t, fs, "/raft")
		})
	}
}

// TestCommitIndexCapped: GetCommitIndex never exceeds LastIndex, even when
// a suffix delete removed entries below the commit index stored with them.
func TestCommitIndexCapped(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, "/raft")
	if err := s.StageCommitIndex(100); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(1, 10, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(6, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, fs, "/raft")
	defer s.Close()
	if c, _ := s.GetCommitIndex(); c > 5 {
		t.Fatalf("commit index %d above the last index 5", c)
	}
}

// TestStableStore: the StableStore answers as InmemStore does, and keeps
// what it acknowledged across a reopen and a power loss.
func TestStableStore(t *testing.T) {
	fs := vfs.NewMem()
	s := openT(t, fs, "/raft")
	oracle := raft.NewInmemStore()
	check := func(label string, s *Store) {
		t.Helper()
		for _, k := range []string{"CurrentTerm", "LastVoteTerm", "missing"} {
			g, err1 := s.GetUint64([]byte(k))
			w, err2 := oracle.GetUint64([]byte(k))
			if err1 != nil || g != w || (err2 != nil) {
				t.Fatalf("%s: GetUint64(%s) = %d, %v; oracle %d, %v", label, k, g, err1, w, err2)
			}
		}
		for _, k := range []string{"LastVoteCand", "missing", "\xff", "\xfe", "hex:ff"} {
			g, err1 := s.Get([]byte(k))
			w, _ := oracle.Get([]byte(k))
			if err1 != nil || string(g) != string(w) || (g == nil) != (w == nil) {
				t.Fatalf("%s: Get(%s) = %q, %v; oracle %q", label, k, g, err1, w)
			}
		}
	}
	check("fresh", s)
	for i, op := range []func(raft.StableStore) error{
		func(st raft.StableStore) error { return st.SetUint64([]byte("CurrentTerm"), 7) },
		func(st raft.StableStore) error { return st.Set([]byte("LastVoteCand"), []byte("node-2")) },
		func(st raft.StableStore) error { return st.SetUint64([]byte("LastVoteTerm"), 7) },
		func(st raft.StableStore) error { return st.SetUint64([]byte("CurrentTerm"), 1<<63+5) },
		// Binary keys, as raftbench uses, must not collide in the file.
		func(st raft.StableStore) error { return st.Set([]byte{0xff}, []byte("a")) },
		func(st raft.StableStore) error { return st.Set([]byte{0xfe}, []byte("b")) },
		func(st raft.StableStore) error { return st.Set([]byte("hex:ff"), []byte("c")) },
	} {
		if err := op(s); err != nil {
			t.Fatal(err)
		}
		op(oracle)
		check(fmt.Sprintf("set %d", i), s)
		c := openT(t, fs.CrashClone(), "/raft")
		check(fmt.Sprintf("set %d, power loss", i), c)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openT(t, fs, "/raft")
		check(fmt.Sprintf("set %d, reopen", i), s)
	}
	s.Close()
}
