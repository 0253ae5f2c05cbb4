package raftlog

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

const stablePath = "/raft/" + StableFile

// stableModel is what a StableStore should hold: bytes keys and uint64
// keys (a uint64 of 0 reads as unset, so steps never store 0).
type stableModel struct {
	b map[string]string
	u map[string]uint64
}

func newStableModel() stableModel {
	return stableModel{b: map[string]string{}, u: map[string]uint64{}}
}

func (m stableModel) clone() stableModel {
	return stableModel{b: maps.Clone(m.b), u: maps.Clone(m.u)}
}

func (m stableModel) equal(o stableModel) bool {
	return maps.Equal(m.b, o.b) && maps.Equal(m.u, o.u)
}

func (m stableModel) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m.b)) {
		v := m.b[k]
		if len(v) > 16 {
			v = fmt.Sprintf("%.8q…(%d bytes)", v, len(v))
		}
		parts = append(parts, fmt.Sprintf("%q=%q", k, v))
	}
	for _, k := range slices.Sorted(maps.Keys(m.u)) {
		parts = append(parts, fmt.Sprintf("%q=%d", k, m.u[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// stableStep is one Set (u64 false) or SetUint64.
type stableStep struct {
	key string
	val string
	u64 bool
	n   uint64
}

func setB(k, v string) stableStep        { return stableStep{key: k, val: v} }
func setU(k string, n uint64) stableStep { return stableStep{key: k, u64: true, n: n} }

func (st stableStep) apply(s *Store) error {
	if st.u64 {
		return s.SetUint64([]byte(st.key), st.n)
	}
	return s.Set([]byte(st.key), []byte(st.val))
}

func (st stableStep) next(m stableModel) stableModel {
	m = m.clone()
	if st.u64 {
		m.u[st.key] = st.n
	} else {
		m.b[st.key] = st.val
	}
	return m
}

// stableKeys are every key the tests use, so readStable sees them all.
var stableKeys = []string{"CurrentTerm", "LastVoteTerm", "LastVoteCand", "vote", "after",
	"blob", "blob2", "\xff", "\xfe", "hex:ff", "", "empty"}

func readStable(t *testing.T, s *Store) stableModel {
	t.Helper()
	m := newStableModel()
	for _, k := range stableKeys {
		v, err := s.Get([]byte(k))
		if err != nil {
			t.Fatalf("Get(%q): %v", k, err)
		}
		if v != nil {
			m.b[k] = string(v)
		}
		n, err := s.GetUint64([]byte(k))
		if err != nil {
			t.Fatalf("GetUint64(%q): %v", k, err)
		}
		if n != 0 {
			m.u[k] = n
		}
	}
	return m
}

// oldStableJSON is quorum-state as raftlog wrote it before issue 29, with
// its key naming (a key that is not valid UTF-8, or starts with "hex:",
// in hex behind "hex:").
func oldStableJSON(t *testing.T, m stableModel) []byte {
	t.Helper()
	name := func(k string) string {
		if utf8.ValidString(k) && !strings.HasPrefix(k, "hex:") {
			return k
		}
		return "hex:" + hex.EncodeToString([]byte(k))
	}
	js := jsonState{Bytes: map[string][]byte{}, Uint64: map[string]uint64{}}
	for k, v := range m.b {
		js.Bytes[name(k)] = []byte(v)
	}
	for k, v := range m.u {
		js.Uint64[name(k)] = v
	}
	data, err := json.Marshal(&js)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeOldJSON puts m in the older JSON format in place, durably.
func writeOldJSON(t *testing.T, mem *vfs.MemFS, m stableModel) {
	t.Helper()
	if err := mem.MkdirAll("/raft"); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(mem, stablePath, oldStableJSON(t, m)); err != nil {
		t.Fatal(err)
	}
}

// oldModel is the state of the older JSON file the migration tests start
// from: binary keys and a UTF-8 key spelled like a hex one.
func oldModel() stableModel {
	m := newStableModel()
	m.b["LastVoteCand"] = "node-1"
	m.b["\xff"] = "a"
	m.b["hex:ff"] = "c"
	m.b["empty"] = ""
	m.u["CurrentTerm"] = 7
	m.u["LastVoteTerm"] = 6
	return m
}

// openStableOnly opens the StableStore of the Store in /raft on fs as
// Open does (loadStable), without its partition: a crash campaign reopens
// hundreds of images, and the partition is not what it checks. Only the
// StableStore's methods may be called on the result; its file is closed
// by s.stable.closeFile.
func openStableOnly(fs vfs.FS) (*Store, error) {
	s := &Store{fs: fs, dir: "/raft"}
	return s, s.loadStable()
}

// stablePoint is a power loss at one filesystem operation, and the states
// the StableStore may then hold.
type stablePoint struct {
	fs     *vfs.MemFS
	op     vfs.Op
	torn   bool
	accept []stableModel
}

// stableRig is an injector over a MemFS that, when cloning, records a
// plain and a torn power loss at every operation, and fails the failN-th
// operation it counts with EIO.
type stableRig struct {
	mem *vfs.MemFS
	rng *rand.Rand

	mu        sync.Mutex
	cloning   bool
	accept    []stableModel
	points    []stablePoint
	n, failN  int64
	failed    *vfs.Op
	lastWrite vfs.Op
}

func newStableRig(seed uint64) *stableRig {
	return &stableRig{mem: vfs.NewMem(), rng: rand.New(rand.NewPCG(seed, 29))}
}

func (r *stableRig) Inject(op vfs.Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.failN > 0 && r.n == r.failN {
		r.failed = &op
		return syscall.EIO
	}
	if op.Kind == vfs.OpWriteAt {
		r.lastWrite = op
	}
	if r.cloning {
		acc := slices.Clone(r.accept)
		r.points = append(r.points, stablePoint{r.mem.CrashClone(), op, false, acc})
		for range 3 {
			torn := r.mem.CrashCloneWith(vfs.CrashOptions{Rand: r.rng, KeepUnsynced: 0.7, KeepUnsyncedStores: 0.8, KeepUnsyncedEntries: 0.5, HoleUnsynced: 0.5})
			r.points = append(r.points, stablePoint{torn, op, true, acc})
		}
	}
	return nil
}

func (r *stableRig) fs() vfs.FS { return vfs.Inject(r.mem, r) }

// run applies steps from state from, recording a power loss at each
// operation, which may leave the state before the step or after it (or
// one of also, during the first step).
func (r *stableRig) run(t *testing.T, s *Store, from stableModel, steps []stableStep, also ...stableModel) stableModel {
	t.Helper()
	cur := from
	for i, st := range steps {
		next := st.next(cur)
		r.mu.Lock()
		r.cloning = true
		r.accept = []stableModel{cur, next}
		if i == 0 {
			r.accept = append(r.accept, also...)
		}
		r.mu.Unlock()
		if err := st.apply(s); err != nil {
			t.Fatalf("step %d %+v: %v", i, st, err)
		}
		if got := readStable(t, s); !got.equal(next) {
			t.Fatalf("step %d: memory holds %v, want %v", i, got, next)
		}
		cur = next
	}
	r.mu.Lock()
	r.cloning = false
	r.mu.Unlock()
	return cur
}

// check reopens every recorded power loss: the StableStore holds one of
// the states accepted there, and takes a Set after it that survives a
// reopen. It returns how many points showed the newer (in-flight) state.
func (r *stableRig) check(t *testing.T, label string) (points, newer int) {
	t.Helper()
	r.mu.Lock()
	pts := r.points
	r.points = nil
	r.mu.Unlock()
	for k, p := range pts {
		where := fmt.Sprintf("%s: power loss %d at %v %s (off %d len %d, torn %v)", label, k, p.op.Kind, p.op.Path, p.op.Off, p.op.Len, p.torn)
		s, err := openStableOnly(p.fs)
		if err != nil {
			t.Fatalf("%s: reopen: %v", where, err)
		}
		got := readStable(t, s)
		i := slices.IndexFunc(p.accept, got.equal)
		if i < 0 {
			t.Fatalf("%s: reopened %v, want one of %v", where, got, p.accept)
		}
		if i > 0 {
			newer++
		}
		want := setB("after", fmt.Sprint(k)).next(got)
		if err := s.Set([]byte("after"), []byte(fmt.Sprint(k))); err != nil {
			t.Fatalf("%s: Set after reopening: %v", where, err)
		}
		s.stable.closeFile()
		s, err = openStableOnly(p.fs.CrashClone())
		if err != nil {
			t.Fatalf("%s: then a Set and a power loss: %v", where, err)
		}
		if got := readStable(t, s); !got.equal(want) {
			t.Fatalf("%s: then a Set and a power loss: reopened %v, want %v", where, got, want)
		}
	}
	return len(pts), newer
}

var stableTermSteps = []stableStep{
	setU("CurrentTerm", 1), setB("LastVoteCand", "n1"), setU("LastVoteTerm", 1),
	setU("CurrentTerm", 2), setB("LastVoteCand", "n2"), setU("LastVoteTerm", 2),
	setB("\xff", "binary key"), setB("empty", ""), setU("CurrentTerm", 1<<63+5),
}

// TestStableCrashEveryOp: a power loss at every filesystem operation of a
// run of Sets (creating the file, writing its slots in turn, migrating the
// older JSON file, growing the slots) leaves, after reopening, the state
// of the last Set that returned or of the one in flight: never older,
// never garbage, never an error.
func TestStableCrashEveryOp(t *testing.T) {
	big := func(n int, c byte) string { return strings.Repeat(string(c), n) }
	for _, tc := range []struct {
		name  string
		json  bool
		steps []stableStep
		slot  int // the slot size at the end
	}{
		{"fresh", false, stableTermSteps, minSlot},
		{"migrate", true, stableTermSteps, minSlot},
		{"grow", false, []stableStep{
			setU("CurrentTerm", 3), setB("blob", big(3000, 'a')), setB("blob", big(6000, 'b')),
			setU("CurrentTerm", 4), setB("blob2", big(40000, 'c')), setU("CurrentTerm", 5),
			setB("blob", ""), setB("LastVoteCand", "n3"),
		}, 64 << 10},
		{"migrate and grow", true, []stableStep{setB("blob", big(5000, 'd')), setU("CurrentTerm", 9)}, 8 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newStableRig(uint64(len(tc.name)))
			from := newStableModel()
			if tc.json {
				from = oldModel()
				writeOldJSON(t, r.mem, from)
			}
			s := openT(t, r.fs(), "/raft")
			if got := readStable(t, s); !got.equal(from) {
				t.Fatalf("opened %v, want %v", got, from)
			}
			r.run(t, s, from, tc.steps)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			data := vfstest.ReadFile(t, r.mem, stablePath)
			if !strings.HasPrefix(string(data), stableMagic) || len(data) != 2*tc.slot {
				t.Fatalf("file is %d bytes starting %q, want two %d-byte slots", len(data), data[:min(8, len(data))], tc.slot)
			}
			points, newer := r.check(t, tc.name)
			if newer == 0 || newer == points {
				t.Fatalf("%d of %d power losses showed the Set in flight: the campaign does not cover both sides", newer, points)
			}
			t.Logf("%d power losses, %d with the Set in flight", points, newer)
		})
	}
}

// TestStableFaultEveryOp fails each filesystem operation of a Set in
// turn: the Set returns the error and memory keeps the value before it
// (the close of a replaced file's handle alone fails silently: the Set
// is durable without it). A power loss then, or at any operation of the
// Sets after it, leaves the state before the failed Set or (the write
// may have reached the disk) after it, or that of a later Set; the
// later Sets succeed. Where the failed operation was the slot's write or
// fdatasync, the test then puts garbage in that slot and syncs it, as a
// half-done write that reached the disk leaves it: the next Set must
// write that slot again, not the only good one.
func TestStableFaultEveryOp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		json    bool
		prepare []stableStep // before the Store is reopened
		step    stableStep
	}{
		{"create", false, nil, setU("CurrentTerm", 1)},
		{"in place", false, []stableStep{setU("CurrentTerm", 1)}, setB("LastVoteCand", "n1")},
		{"in place, second", false, []stableStep{setU("CurrentTerm", 1), setB("LastVoteCand", "n1"), setU("CurrentTerm", 2)}, setU("CurrentTerm", 3)},
		{"grow", false, []stableStep{setU("CurrentTerm", 1)}, setB("blob", strings.Repeat("g", 9000))},
		{"migrate", true, nil, setU("CurrentTerm", 8)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fired := 0
			for i := int64(1); ; i++ {
				r := newStableRig(uint64(i))
				from := newStableModel()
				if tc.json {
					from = oldModel()
					writeOldJSON(t, r.mem, from)
				}
				if len(tc.prepare) > 0 {
					s := openT(t, r.mem, "/raft")
					for _, st := range tc.prepare {
						if err := st.apply(s); err != nil {
							t.Fatal(err)
						}
						from = st.next(from)
					}
					s.Close()
				}
				s := openT(t, r.fs(), "/raft")
				if len(tc.prepare) > 1 {
					// The slot file open, and the newest state in its second slot.
					if err := tc.prepare[len(tc.prepare)-1].apply(s); err != nil {
						t.Fatal(err)
					}
				}
				r.mu.Lock()
				r.n, r.failN = 0, i
				r.mu.Unlock()
				err := tc.step.apply(s)
				r.mu.Lock()
				op := r.failed
				r.failN = 0
				lastWrite := r.lastWrite
				r.mu.Unlock()
				if op == nil {
					s.Close()
					if fired == 0 {
						t.Fatal("no operation failed")
					}
					t.Logf("%d operations failed in turn", fired)
					return
				}
				fired++
				label := fmt.Sprintf("EIO at op %d (%v %s)", i, op.Kind, op.Path)
				after := tc.step.next(from)
				mem := from
				switch {
				case err == nil && op.Kind == vfs.OpClose:
					mem = after
				case err == nil:
					t.Fatalf("%s: the Set returned nil", label)
				}
				if got := readStable(t, s); !got.equal(mem) {
					t.Fatalf("%s (Set: %v): memory holds %v, want %v", label, err, got, mem)
				}
				if op.Path == stablePath && (op.Kind == vfs.OpSync || op.Kind == vfs.OpWriteAt) {
					if op.Kind == vfs.OpWriteAt {
						lastWrite = *op
					}
					garbage := make([]byte, lastWrite.Len)
					for j := range garbage {
						garbage[j] = byte(r.rng.Uint32())
					}
					f, err := r.mem.OpenReadWrite(stablePath)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := f.WriteAt(garbage, lastWrite.Off); err != nil {
						t.Fatal(err)
					}
					if err := f.Sync(); err != nil {
						t.Fatal(err)
					}
					f.Close()
					after = mem // the failed state is gone
				}
				suspect := int64(-1)
				if op.Path == stablePath && (op.Kind == vfs.OpSync || op.Kind == vfs.OpWriteAt) {
					suspect = lastWrite.Off
				}
				next := r.run(t, s, mem, []stableStep{setU("CurrentTerm", 99)}, after)
				r.mu.Lock()
				wrote := r.lastWrite.Off
				r.mu.Unlock()
				if suspect >= 0 && wrote != suspect {
					t.Fatalf("%s: the Set after it wrote at byte %d, not into the slot the failed one left suspect (byte %d)", label, wrote, suspect)
				}
				end := r.run(t, s, next, []stableStep{setB("LastVoteCand", "n99")})
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				r.check(t, label)
				for _, fs := range []*vfs.MemFS{r.mem, r.mem.CrashClone()} {
					s := openT(t, fs, "/raft")
					if got := readStable(t, s); !got.equal(end) {
						t.Fatalf("%s: reopened %v, want %v", label, got, end)
					}
					s.Close()
				}
			}
		})
	}
}
