package raftlog

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/vfs"
)

// getLogOpts: batches of up to a few dozen entries and segments of a few
// batches, so random reads go through entry tables of many batches and
// deletes cross segments.
func getLogOpts(fs vfs.FS) Options {
	return Options{FS: fs, SegmentBytes: 8 << 10, MaxBatchBytes: 2 << 10, Logger: quiet}
}

// checkRandom compares GetLog of random indexes (in and around the log,
// each read twice so the second goes through the table the first built)
// and of a short sequential run with the oracle.
func checkRandom(t *testing.T, label string, rng *rand.Rand, s *Store, oracle *raft.InmemStore) {
	t.Helper()
	first, _ := oracle.FirstIndex()
	last, _ := oracle.LastIndex()
	lo := max(first, 3) - 3
	span := int(last-lo) + 6
	check := func(i uint64) {
		t.Helper()
		compareGetLog(t, label, s, oracle, i)
	}
	for range 60 {
		i := lo + uint64(rng.IntN(span))
		check(i)
		check(i)
	}
	from := lo + uint64(rng.IntN(span))
	for i := from; i < from+20; i++ {
		check(i)
	}
}

// TestGetLogRandomModel drives StoreLogs, prefix and suffix deletes,
// delete-everything with a restart elsewhere, and reopens at random,
// comparing random and sequential GetLog with raft's InmemStore after
// every step.
//
// -soak.scale multiplies the seeds (4 each) and -soak.seed moves them, for
// runs longer than CI's.
func TestGetLogRandomModel(t *testing.T) {
	for r := range uint64(4 * soak.Scale()) {
		seed := soak.Seed()<<32 | r
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 29))
			fs := vfs.NewMem()
			const dir = "/raft"
			s, err := Open(dir, getLogOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			oracle := raft.NewInmemStore()
			term, next := uint64(1), uint64(1)
			for step := range 150 {
				first, _ := oracle.FirstIndex()
				last, _ := oracle.LastIndex()
				var op string
				var do func(raft.LogStore) error
				switch k := rng.IntN(20); {
				case k < 11 || last == 0:
					if rng.IntN(4) == 0 {
						term++
					}
					ls := entries(next, next+uint64(rng.IntN(40)), term)
					op, do = fmt.Sprintf("store [%d, %d]", next, ls[len(ls)-1].Index), store(ls)
					next += uint64(len(ls))
				case k < 14:
					hi := first + uint64(rng.IntN(int(last-first)+1))
					if hi == last {
						hi--
					}
					op, do = fmt.Sprintf("prefix [%d, %d]", first, hi), deleteRange(first, hi)
					if hi < first {
						op, do = "nothing", nothing
					}
				case k < 18:
					lo := first + uint64(rng.IntN(int(last-first)+1))
					if lo == first {
						lo++
					}
					op, do = fmt.Sprintf("suffix [%d, %d]", lo, last), deleteRange(lo, last)
					if lo > last {
						op, do = "nothing", nothing
					} else {
						next = lo
						term++ // a new leader's entries replace the cut ones
					}
				case k < 19:
					op, do = "delete everything", deleteRange(first, last)
					next = next - uint64(rng.IntN(int(next))/2) + uint64(rng.IntN(500))
					term++
				default:
					op, do = "reopen", nothing
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					if s, err = Open(dir, getLogOpts(fs)); err != nil {
						t.Fatal(err)
					}
				}
				label := fmt.Sprintf("step %d (%s)", step, op)
				if err := do(oracle); err != nil {
					t.Fatalf("%s: oracle: %v", label, err)
				}
				if err := do(s); err != nil {
					t.Fatalf("%s: %v", label, err)
				}
				checkRandom(t, label, rng, s, oracle)
			}
		})
	}
}

// raceData is the data of the entry at index with term: a reader checks
// that an entry's data, index and term agree (no entry mixed from two
// batches).
func raceData(index, term uint64) []byte {
	return []byte(fmt.Sprintf("%d/%d/%s", index, term, strings.Repeat("x", int(index%37))))
}

// TestGetLogRace runs random and sequential readers beside a writer that
// stores, deletes suffixes (rewriting the cut indexes with a new term) and
// prefixes. Every entry read must be whole (data, index and term of one
// entry); while no write overlaps a read, the entry must be exactly the
// one the log then holds, and a removed index must be raft.ErrLogNotFound.
func TestGetLogRace(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open("/raft", getLogOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const maxIndex = 3000
	// terms[i] is the term index i holds (0: absent), written by the
	// writer between writes; seq is odd while a write is under way.
	var terms [maxIndex + 64]atomic.Uint64
	var seq atomic.Uint64
	var stop atomic.Bool
	var wg sync.WaitGroup
	fail := make(chan string, 4)
	report := func(format string, args ...any) {
		select {
		case fail <- fmt.Sprintf(format, args...):
		default:
		}
		stop.Store(true)
	}
	reader := func(seed uint64, sequential bool) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 1))
		i := uint64(1)
		for !stop.Load() {
			if sequential {
				i++
				if i >= maxIndex || rng.IntN(200) == 0 {
					i = uint64(rng.IntN(maxIndex)) + 1
				}
			} else {
				i = uint64(rng.IntN(maxIndex)) + 1
			}
			q0 := seq.Load()
			want := terms[i].Load()
			var l raft.Log
			err := s.GetLog(i, &l)
			calm := q0%2 == 0 && seq.Load() == q0
			switch {
			case err == raft.ErrLogNotFound: //nolint:errorlint // identity is the contract
				if calm && want != 0 {
					report("GetLog(%d) = ErrLogNotFound, the log holds it with term %d", i, want)
				}
			case err != nil:
				report("GetLog(%d): %v", i, err)
			case l.Index != i || string(l.Data) != string(raceData(i, l.Term)):
				report("GetLog(%d) = index %d term %d data %q: a mixed entry", i, l.Index, l.Term, l.Data)
			case calm && l.Term != want:
				report("GetLog(%d) = term %d, the log holds term %d (0: removed)", i, l.Term, want)
			}
		}
	}
	for r := range 4 {
		wg.Add(1)
		go reader(uint64(r), r%2 == 1)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	term, next, first := uint64(1), uint64(1), uint64(1)
	write := func(do func() error, after func()) {
		seq.Add(1)
		if err := do(); err != nil {
			report("write: %v", err)
		}
		after()
		seq.Add(1)
	}
	for step := 0; step < 600 && !stop.Load(); step++ {
		switch k := rng.IntN(10); {
		case k < 6 || next-first < 10:
			if next+64 >= maxIndex {
				// Start over from the top: delete everything, restart low.
				from, to, restart := first, next-1, uint64(rng.IntN(100))+1
				write(func() error { return s.DeleteRange(from, to) }, func() {
					for i := from; i <= to; i++ {
						terms[i].Store(0)
					}
				})
				term++
				first, next = restart, restart
				continue
			}
			n := uint64(rng.IntN(40)) + 1
			var ls []*raft.Log
			for i := next; i < next+n; i++ {
				ls = append(ls, &raft.Log{Index: i, Term: term, Data: raceData(i, term)})
			}
			from, tm := next, term
			write(func() error { return s.StoreLogs(ls) }, func() {
				for i := from; i < from+n; i++ {
					terms[i].Store(tm)
				}
			})
			next += n
		case k < 9:
			cut := first + 1 + uint64(rng.IntN(int(next-first-1)))
			to := next - 1
			write(func() error { return s.DeleteRange(cut, to) }, func() {
				for i := cut; i <= to; i++ {
					terms[i].Store(0)
				}
			})
			next = cut
			term++
		default:
			upTo := first + uint64(rng.IntN(int(next-first-1)))
			from := first
			write(func() error { return s.DeleteRange(from, upTo) }, func() {
				for i := from; i <= upTo; i++ {
					terms[i].Store(0)
				}
			})
			first = upTo + 1
		}
	}
	stop.Store(true)
	wg.Wait()
	select {
	case msg := <-fail:
		t.Fatal(msg)
	default:
	}
}

// TestGetLogDamagedRecord damages records of a batch after its table was
// built: a read through the table must answer an error (ErrCorrupt, naming
// the file) where the damage is one a lone record can show (its length,
// its offset delta), never another entry and never a panic.
func TestGetLogDamagedRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(rec []byte) int // position in the record to damage
		val  byte
	}{
		{"offset delta", func([]byte) int { return 3 }, 0x7e}, // length (2 bytes), attributes, timestamp delta 0, offset delta
		{"length", func([]byte) int { return 0 }, 0x02},
		{"length past the record", func([]byte) int { return 0 }, 0x7e},
		{"header count", func(rec []byte) int { return len(rec) - 1 }, 0x7f},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			s, err := Open("/raft", getLogOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var ls []*raft.Log
			for i := uint64(1); i <= 10; i++ {
				ls = append(ls, &raft.Log{Index: i, Term: 1, Data: []byte(strings.Repeat("a", 20))})
			}
			if err := s.StoreLogs(ls); err != nil {
				t.Fatal(err)
			}
			var l raft.Log
			if err := s.GetLog(5, &l); err != nil { // random: builds the table
				t.Fatal(err)
			}
			b, err := s.readBatch(0)
			if err != nil {
				t.Fatal(err)
			}
			tbl := buildTable(b)
			if tbl == nil || s.cache.tables[0] == nil {
				t.Fatal("no table was built")
			}
			from, to := tbl.pos[7], tbl.pos[8]
			rec := append([]byte(nil), b[from:to]...)
			sl, err := s.Log().Read(0, 1, seglog.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			path, pos := sl.File(), sl.Position()
			sl.Close()
			f, err := fs.OpenReadWrite(path)
			if err != nil {
				t.Fatal(err)
			}
			p := tc.at(rec)
			if _, err := f.WriteAt([]byte{tc.val}, pos+int64(from)+int64(p)); err != nil {
				t.Fatal(err)
			}
			f.Close()
			err = s.GetLog(8, &l)
			if err == nil {
				t.Fatalf("GetLog(8) = %+v from a damaged record, no error", l)
			}
			if !errors.Is(err, seglog.ErrCorrupt) || !strings.Contains(err.Error(), filepath.Base(path)) {
				t.Fatalf("GetLog(8) = %v, want ErrCorrupt naming %s", err, path)
			}
			// The others still read through the table.
			if err := s.GetLog(3, &l); err != nil || l.Index != 3 {
				t.Fatalf("GetLog(3) = %+v, %v", l, err)
			}
		})
	}
}
