package raftlog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestStableRoundTrip: every kind of key and value survives a reopen, and
// a Set after the first (which creates the file) writes it in place with
// one WriteAt and one fdatasync, its size never changing.
func TestStableRoundTrip(t *testing.T) {
	mem := vfs.NewMem()
	var mu sync.Mutex
	var ops []vfs.Op
	fs := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, op)
		return nil
	}))
	s := openT(t, fs, "/raft")
	want := newStableModel()
	steps := []stableStep{
		setU("CurrentTerm", 1), setB("LastVoteCand", "n1"), setU("LastVoteTerm", 1<<64-1),
		setB("\xff", "binary key"), setB("hex:ff", "looks like hex"), setB("", "empty key"),
		setB("empty", ""), setB("LastVoteCand", "n2\x00\xff"), setU("CurrentTerm", 2),
	}
	for i, st := range steps {
		mu.Lock()
		ops = nil
		mu.Unlock()
		if err := st.apply(s); err != nil {
			t.Fatal(err)
		}
		want = st.next(want)
		mu.Lock()
		got := ops
		mu.Unlock()
		if i > 0 {
			// Reopened before each Set: the first opens the file.
			if len(got) > 0 && got[0].Kind == vfs.OpOpenReadWrite {
				got = got[1:]
			}
			if len(got) != 2 || got[0].Kind != vfs.OpWriteAt || got[1].Kind != vfs.OpSync {
				t.Fatalf("Set %d: operations %v, want one writeat and one sync", i, got)
			}
			if slot := int64(i%2) * minSlot; got[0].Off != slot {
				t.Fatalf("Set %d: wrote at byte %d, want %d (slots in turn)", i, got[0].Off, slot)
			}
		}
		if fi, err := mem.Stat(stablePath); err != nil || fi.Size() != 2*minSlot {
			t.Fatalf("Set %d: %s is %v (%v), want %d bytes", i, StableFile, fi.Size(), err, 2*minSlot)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openT(t, fs, "/raft")
		if got := readStable(t, s); !got.equal(want) {
			t.Fatalf("Set %d, reopened: %v, want %v", i, got, want)
		}
	}
	s.Close()
}

// TestStableOldJSON: a quorum-state file in the JSON format raftlog wrote
// before issue 29 opens with every key, binary and hex-looking ones
// included, and the first Set replaces it with the slot format.
func TestStableOldJSON(t *testing.T) {
	mem := vfs.NewMem()
	writeOldJSON(t, mem, oldModel())
	s := openT(t, mem, "/raft")
	if got := readStable(t, s); !got.equal(oldModel()) {
		t.Fatalf("opened %v, want %v", got, oldModel())
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 8); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if data := vfstest.ReadFile(t, mem, stablePath); !bytes.HasPrefix(data, []byte(stableMagic)) {
		t.Fatalf("after a Set the file starts %q, want the slot format", data[:8])
	}
	s = openT(t, mem, "/raft")
	if got, want := readStable(t, s), setU("CurrentTerm", 8).next(oldModel()); !got.equal(want) {
		t.Fatalf("reopened %v, want %v", got, want)
	}
	s.Close()
}

// stableSlots writes terms 1, 2 and 3: slot 0 holds term 3 (the newest),
// slot 1 term 2.
func stableSlots(t testing.TB) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewMem()
	s := openT(t, mem, "/raft")
	for n := uint64(1); n <= 3; n++ {
		if err := s.SetUint64([]byte("CurrentTerm"), n); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	return mem
}

func damageStable(t testing.TB, mem *vfs.MemFS, f func(b []byte) []byte) {
	t.Helper()
	if err := vfs.WriteFileAtomic(mem, stablePath, f(vfstest.ReadFile(t, mem, stablePath))); err != nil {
		t.Fatal(err)
	}
}

// TestStableDamagedSlot: a torn or damaged slot is passed over for the
// other one, and the next Set writes the damaged slot, leaving the good
// one as it was.
func TestStableDamagedSlot(t *testing.T) {
	garbage := func(b []byte) {
		for i := range b {
			b[i] = byte(i*7 + 3)
		}
	}
	for _, tc := range []struct {
		name   string
		damage func(b []byte)
		want   uint64
		good   int // the slot left valid
	}{
		{"newer payload bit", func(b []byte) { b[slotHeader+3] ^= 1 }, 2, 1},
		{"newer magic", func(b []byte) { b[0] = 'X' }, 2, 1},
		{"newer version", func(b []byte) { b[4] = 2 }, 2, 1},
		{"newer length huge", func(b []byte) { binary.BigEndian.PutUint32(b[24:], 1<<32-1) }, 2, 1},
		{"newer slot size", func(b []byte) { binary.BigEndian.PutUint32(b[12:], 2*minSlot) }, 2, 1},
		{"newer sequence", func(b []byte) { b[23]++ }, 2, 1},
		{"newer torn", func(b []byte) { clear(b[20:minSlot]) }, 2, 1},
		{"newer garbage", func(b []byte) { garbage(b[:minSlot]) }, 2, 1},
		{"newer zeros", func(b []byte) { clear(b[:minSlot]) }, 2, 1},
		{"older garbage", func(b []byte) { garbage(b[minSlot:]) }, 3, 0},
		{"older torn", func(b []byte) { clear(b[minSlot+9 : minSlot+30]) }, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := stableSlots(t)
			damageStable(t, mem, func(b []byte) []byte { tc.damage(b); return b })
			var logged bytes.Buffer
			opts := testOpts(mem)
			opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
			s, err := Open("/raft", opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := s.GetUint64([]byte("CurrentTerm")); got != tc.want {
				t.Fatalf("term %d, want %d", got, tc.want)
			}
			// A slot never written is not worth a word; any other is.
			blankSlot := tc.name == "newer zeros"
			if warned := strings.Contains(logged.String(), "quorum-state slot is unreadable"); warned == blankSlot {
				t.Fatalf("warned %v about a damaged slot (blank: %v); log:\n%s", warned, blankSlot, logged.String())
			}
			good := vfstest.ReadFile(t, mem, stablePath)[tc.good*minSlot : (tc.good+1)*minSlot]
			if err := s.SetUint64([]byte("CurrentTerm"), 10); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if now := vfstest.ReadFile(t, mem, stablePath)[tc.good*minSlot : (tc.good+1)*minSlot]; !bytes.Equal(now, good) {
				t.Fatalf("the Set wrote slot %d, the only good one", tc.good)
			}
			s = openT(t, mem, "/raft")
			if got, _ := s.GetUint64([]byte("CurrentTerm")); got != 10 {
				t.Fatalf("after a Set: term %d, want 10", got)
			}
			s.Close()
		})
	}
}

// TestStableNewFileBothSlots: the file a first Set creates (or a growth
// rewrites) holds the state in both slots, so damage to the first before
// the next Set still leaves the state, rather than a zero second slot.
func TestStableNewFileBothSlots(t *testing.T) {
	mem := vfs.NewMem()
	s := openT(t, mem, "/raft")
	if err := s.SetUint64([]byte("CurrentTerm"), 5); err != nil {
		t.Fatal(err)
	}
	s.Close()
	damageStable(t, mem, func(b []byte) []byte { b[slotHeader+1] ^= 0x40; return b })
	s = openT(t, mem, "/raft")
	defer s.Close()
	if got, err := s.GetUint64([]byte("CurrentTerm")); err != nil || got != 5 {
		t.Fatalf("term %d, %v; want 5 from the second slot", got, err)
	}
}

// TestStableUnreadable: a file with neither slot valid, or in neither
// format, is refused by Open with a *StableFileError naming the file and
// a byte inside it, never read as an empty state.
func TestStableUnreadable(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content func(old []byte) []byte
	}{
		{"both slots garbage", func(b []byte) []byte {
			for i := range b {
				b[i] = byte(i % 251)
			}
			return b
		}},
		{"newer torn, older bit flip", func(b []byte) []byte {
			clear(b[30:minSlot])
			b[minSlot+slotHeader] ^= 0x80
			return b
		}},
		{"both zeros", func(b []byte) []byte { return make([]byte, len(b)) }},
		{"truncated", func(b []byte) []byte { return b[:minSlot+100] }},
		{"grown", func(b []byte) []byte { return append(b, 0) }},
		{"empty", func([]byte) []byte { return nil }},
		{"not JSON", func([]byte) []byte { return []byte(`{"bytes": {"a": 3}}`) }},
		{"bad JSON hex key", func([]byte) []byte { return []byte(`{"uint64": {"hex:zz": 3}}`) }},
		{"JSON cut", func([]byte) []byte { return []byte(`{"uint64": {"CurrentTerm": 3`) }},
		{"text", func([]byte) []byte { return []byte("term=3\n") }},
		{"too large", func([]byte) []byte { return make([]byte, maxStableFile+1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := stableSlots(t)
			damageStable(t, mem, tc.content)
			size := int64(len(vfstest.ReadFile(t, mem, stablePath)))
			s, err := Open("/raft", testOpts(mem))
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			var se *StableFileError
			if !errors.As(err, &se) || !errors.Is(err, ErrBadStableFile) {
				t.Fatalf("error %T %v, want a *StableFileError", err, err)
			}
			if se.Path != stablePath || se.Pos < 0 || se.Pos > max(size, 0) || !strings.Contains(err.Error(), stablePath) || !strings.Contains(err.Error(), fmt.Sprintf("byte %d", se.Pos)) {
				t.Fatalf("error %q: path %q, byte %d of %d", err, se.Path, se.Pos, size)
			}
			if tc.name == "too large" && !errors.Is(err, vfs.ErrFileTooLarge) {
				t.Fatalf("error %v does not match vfs.ErrFileTooLarge", err)
			}
		})
	}
}

// TestStableTooLarge: a state no slot can hold is refused by the Set,
// which leaves the state as it was.
func TestStableTooLarge(t *testing.T) {
	s := openT(t, vfs.NewMem(), "/raft")
	defer s.Close()
	if err := s.SetUint64([]byte("CurrentTerm"), 4); err != nil {
		t.Fatal(err)
	}
	if err := s.Set([]byte("huge"), make([]byte, maxSlot)); err == nil {
		t.Fatal("a value larger than a slot was taken")
	}
	if v, _ := s.Get([]byte("huge")); v != nil {
		t.Fatal("the refused value is in memory")
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 5); err != nil {
		t.Fatal(err)
	}
}

// FuzzStableFile feeds arbitrary bytes to the quorum-state reader: it
// never panics, allocates in proportion to the file and not to what its
// lengths claim, refuses with a *StableFileError at a byte inside the
// file, and a state it accepts is written and read back the same.
func FuzzStableFile(f *testing.F) {
	mem := stableSlots(f)
	slots := vfstest.ReadFile(f, mem, stablePath)
	f.Add(slots)
	f.Add(slots[:minSlot])
	torn := bytes.Clone(slots)
	clear(torn[40:minSlot])
	f.Add(torn)
	var one [slotHeader + 64]byte
	p := appendState(one[:slotHeader], map[string][]byte{"LastVoteCand": []byte("n1")}, map[string]uint64{"CurrentTerm": 3})
	putSlotHeader(p, len(p), 9)
	f.Add(p)
	f.Add([]byte(`{"bytes":{"hex:ff":"YQ=="},"uint64":{"CurrentTerm":7}}`))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Add([]byte{0xff, 0xff, 0xff, 0x0f, 0x01, 0x41})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		// Every input three ways: as a whole file, as one slot of its own
		// length, and as a payload.
		fs := vfs.NewMem()
		vfstest.WriteFile(t, fs, stablePath, data)
		var st stableState
		err := st.load(fs, stablePath)
		_, _, _ = readSlot(data, len(data))
		_, _, _, _ = decodeState(data)
		runtime.ReadMemStats(&ms)
		// Maps of many tiny keys cost tens of bytes per payload byte.
		if grew := ms.TotalAlloc - before; grew > uint64(200*len(data))+1<<20 {
			t.Fatalf("reading %d bytes allocated %d", len(data), grew)
		}
		if err != nil {
			var se *StableFileError
			if !errors.As(err, &se) || se.Pos < 0 || se.Pos > int64(len(data)) {
				t.Fatalf("error %T %v for %d bytes", err, err, len(data))
			}
			return
		}
		got := stableModel{b: map[string]string{}, u: st.u64}
		for k, v := range st.bytes {
			got.b[k] = string(v)
		}
		st.slot, st.f = 0, nil
		if err := st.save(); err != nil {
			if len(st.buf) > maxSlot {
				return
			}
			t.Fatal(err)
		}
		var again stableState
		if err := again.load(fs, stablePath); err != nil {
			t.Fatalf("written back, it does not read: %v", err)
		}
		back := stableModel{b: map[string]string{}, u: again.u64}
		for k, v := range again.bytes {
			back.b[k] = string(v)
		}
		if !got.equal(back) {
			t.Fatalf("read %v, written and read back %v", got, back)
		}
	})
}

// BenchmarkSet is raft's vote (Set of LastVoteCand) on the real disk,
// durable: one WriteAt and one fdatasync.
func BenchmarkSet(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		b.Fatal(err)
	}
	val := []byte("node-00000")
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		binary.BigEndian.PutUint32(val[6:], uint32(i))
		if err := s.Set([]byte("LastVoteCand"), val); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSetUint64 is raft's term (SetUint64 of CurrentTerm) on the
// real disk, durable.
func BenchmarkSetUint64(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := uint64(1); b.Loop(); i++ {
		if err := s.SetUint64([]byte("CurrentTerm"), i); err != nil {
			b.Fatal(err)
		}
	}
}
