package replica

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/vfs"
)

const crashDir = "/data/topic-0"

// crashEveryOp runs op on a Store over a fresh FS after prepare, and
// returns the machine's state as a power loss leaves it at each
// filesystem operation op performs, with torn tails kept at random.
func crashEveryOp(t *testing.T, seed uint64, prepare, op func(s *Store) error) []*vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	rng := rand.New(rand.NewPCG(seed, 1))
	var mu sync.Mutex
	armed := false
	var clones []*vfs.MemFS
	crash := func() {
		clones = append(clones, mem.CrashCloneWith(vfs.CrashOptions{Rand: rng, KeepUnsynced: 0.5}))
	}
	fs := vfs.Inject(mem, vfs.InjectorFunc(func(vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		if armed {
			crash()
		}
		return nil
	}))
	s := openT(t, fs, crashDir)
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
	crash()
	mu.Unlock()
	s.Close()
	return clones
}

// outcome is a state a crash may leave: the entries of log from first
// to a last in [minLast, maxLast]; an empty log when log is nil.
type outcome struct {
	log              map[uint64]*raft.Log
	first            uint64
	minLast, maxLast uint64
}

func logOf(parts ...[]*raft.Log) map[uint64]*raft.Log {
	m := map[uint64]*raft.Log{}
	for _, p := range parts {
		for _, l := range p {
			m[l.Index] = l
		}
	}
	return m
}

// matches reports whether s holds one of the outcomes.
func matches(s *Store, outs []outcome) error {
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
next:
	for _, o := range outs {
		if o.log == nil {
			if first == 0 && last == 0 {
				return nil
			}
			continue
		}
		if first != o.first || last < o.minLast || last > o.maxLast {
			continue
		}
		for i := first; i <= last; i++ {
			var got raft.Log
			if err := s.GetLog(i, &got); err != nil {
				return fmt.Errorf("GetLog(%d): %w", i, err)
			}
			if sameEntry(&got, o.log[i]) != nil {
				continue next
			}
		}
		return nil
	}
	return fmt.Errorf("[%d, %d] is none of the states a crash may leave", first, last)
}

// TestCrashCampaign: a power loss at every filesystem operation of each
// write (an append that starts the log and rolls segments, suffix and
// prefix deletes, deleting everything and restarting at a new index, a
// follower's conflict: suffix then append of a new term) leaves the store
// in a state raft accepts: the old log, the new one, or, for what was not
// acknowledged, one between; it reopens, appends, and fsck finds its
// partition clean.
func TestCrashCampaign(t *testing.T) {
	base := entries(t, 1, 40, 1)
	fill := func(s *Store) error { return s.StoreLogs(base) }
	conflict := entries(t, 25, 35, 2)
	restart := entries(t, 1000, 1010, 2)
	cases := []struct {
		name     string
		prepare  func(*Store) error
		op       func(*Store) error
		outcomes []outcome
	}{
		{"first append", func(*Store) error { return nil }, fill,
			[]outcome{{}, {logOf(base), 1, 1, 40}}},
		{"suffix delete", fill, func(s *Store) error { return s.DeleteRange(25, 40) },
			[]outcome{{logOf(base), 1, 24, 40}}},
		{"prefix delete", fill, func(s *Store) error { return s.DeleteRange(1, 30) },
			[]outcome{{logOf(base), 1, 40, 40}, {logOf(base), 31, 40, 40}}},
		{"everything, then a new index", fill, func(s *Store) error {
			if err := s.DeleteRange(1, 40); err != nil {
				return err
			}
			return s.StoreLogs(restart)
		}, []outcome{{logOf(base), 1, 40, 40}, {}, {logOf(restart), 1000, 1000, 1010}}},
		{"follower conflict", fill, func(s *Store) error {
			if err := s.DeleteRange(25, 40); err != nil {
				return err
			}
			return s.StoreLogs(conflict)
		}, []outcome{{logOf(base), 1, 24, 40}, {logOf(base[:24], conflict), 1, 24, 35}}},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clones := crashEveryOp(t, uint64(ci), c.prepare, c.op)
			if len(clones) < 3 {
				t.Fatalf("only %d crash points", len(clones))
			}
			for i, fs := range clones {
				label := fmt.Sprintf("crash %d of %d", i, len(clones))
				s := openT(t, fs, crashDir)
				if err := matches(s, c.outcomes); err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				checkEpochs(t, label, fs, s)
				// It goes on as raft would: the next entries, with a
				// newer term, after whatever it holds.
				last, _ := s.LastIndex()
				next := last + 1
				if last == 0 {
					next = 5000
				}
				more := entries(t, next, next+2, 3)
				if err := s.StoreLogs(more); err != nil {
					t.Fatalf("%s: appending at %d: %v", label, next, err)
				}
				oracle := raft.NewInmemStore()
				copyInto(t, s, oracle)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = openT(t, fs, crashDir)
				compareStores(t, label+", appended and reopened", s, oracle)
				checkEpochs(t, label+", appended and reopened", fs, s)
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				rep, err := fsck.Check(fs, crashDir, fsck.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if !rep.Clean() {
					t.Fatalf("%s: fsck: %+v", label, rep.Problems)
				}
			}
		})
	}
}
