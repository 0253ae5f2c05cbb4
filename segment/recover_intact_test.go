package segment

import (
	"bytes"
	"slices"
	"sync"
	"testing"

	"github.com/seglog/seglog/vfs"
)

// opRecorder records the operations made through an injecting FS.
type opRecorder struct {
	mu  sync.Mutex
	ops []vfs.Op
}

func (r *opRecorder) Inject(op vfs.Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
	return nil
}

// since returns the operations of the given kinds recorded from index from.
func (r *opRecorder) since(from int, kinds ...vfs.OpKind) []vfs.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []vfs.Op
	for _, op := range r.ops[from:] {
		if slices.Contains(kinds, op.Kind) {
			out = append(out, op)
		}
	}
	return out
}

func (r *opRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// changing are the operations that change a file, a directory or make them
// durable.
var changing = []vfs.OpKind{vfs.OpCreate, vfs.OpRemove, vfs.OpRename, vfs.OpSyncDir, vfs.OpWrite,
	vfs.OpWriteAt, vfs.OpSync, vfs.OpTruncate, vfs.OpPreallocate, vfs.OpReserve, vfs.OpFlush}

// segmentFiles returns the bytes of the segment's three files.
func segmentFiles(t *testing.T, e env, base int64) [3][]byte {
	t.Helper()
	return [3][]byte{readFile(t, e.fs, e.path(base, LogSuffix)),
		readFile(t, e.fs, e.path(base, IndexSuffix)), readFile(t, e.fs, e.path(base, TimeIndexSuffix))}
}

func sameFiles(a, b [3][]byte) bool {
	return bytes.Equal(a[0], b[0]) && bytes.Equal(a[1], b[1]) && bytes.Equal(a[2], b[2])
}

// TestRecoverIntactSealedChangesNothing: recovering a sealed segment whose
// .log is valid to its end and whose indexes hold what a rebuild computes
// writes, truncates and syncs nothing; the next Flush syncs the index
// files once (the page cache may hold what the disk does not), and a
// segment whose index differs is still rebuilt and made durable.
func TestRecoverIntactSealedChangesNothing(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 400, MaxIndexBytes: smallIdx}
		const base = 40
		ref := buildSealed(t, e, base, opts, 21, 80)
		before := segmentFiles(t, e, base)
		rec := &opRecorder{}
		fsys := vfs.Inject(e.fs, rec)
		s, err := Open(fsys, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanRecovery(fsys, e.dir, base, opts, RecoverOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.ApplyRecovery(p)
		want := RecoverResult{ValidBytes: int64(len(ref.log)), Batches: len(ref.m.batches), NextOffset: ref.m.next()}
		if err != nil || res != want {
			t.Fatalf("ApplyRecovery = %+v, %v; want %+v", res, err, want)
		}
		if ops := rec.since(0, changing...); len(ops) > 0 {
			t.Fatalf("recovery of an intact sealed segment changed or synced: %v", ops)
		}
		if !s.IsSealed() {
			t.Fatal("not sealed after recovery")
		}
		checkState(t, s, ref.m)
		checkFind(t, s, ref.m)
		if !sameFiles(segmentFiles(t, e, base), before) {
			t.Fatal("recovery of an intact sealed segment changed its files")
		}
		from := rec.count()
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		var synced []string
		for _, op := range rec.since(from, vfs.OpSync) {
			synced = append(synced, op.Path)
		}
		slices.Sort(synced)
		if wantSynced := []string{e.path(base, IndexSuffix), e.path(base, LogSuffix), e.path(base, TimeIndexSuffix)}; !slices.Equal(synced, wantSynced) {
			t.Fatalf("Flush after recovery synced %v, want %v", synced, wantSynced)
		}
		from = rec.count()
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		if ops := rec.since(from, vfs.OpSync); len(ops) != 1 {
			t.Fatalf("a second Flush synced %v, want the .log only", ops)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}

		// One entry off: rebuilt, sealed, made durable.
		idx := append([]byte(nil), ref.idx...)
		idx[len(idx)-1] ^= 1
		writeFile(t, e.fs, e.path(base, IndexSuffix), idx)
		s, err = Open(fsys, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		from = rec.count()
		if res, err := s.Recover(RecoverOptions{}); err != nil || res != want {
			t.Fatalf("Recover = %+v, %v", res, err)
		}
		if ops := rec.since(from, vfs.OpSync); len(ops) != 2 {
			t.Fatalf("rebuilding the indexes synced %v, want both index files", ops)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !sameFiles(segmentFiles(t, e, base), before) {
			t.Fatal("rebuilt segment differs from the one appended")
		}
	})
}

// TestRecoverIntactActiveChangesNothing: the last segment of a log killed
// mid-write (its indexes untrimmed, at their preallocated size) recovers
// as the active segment without a write, a truncation or a sync: only its
// indexes are preallocated and mapped again, as any active open does. The
// appender then goes on where it stopped.
func TestRecoverIntactActiveChangesNothing(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 300, MaxIndexBytes: smallIdx}
		const base = 9
		old := mustCreate(t, e, base, opts)
		m := &model{base: base}
		g := newGen(22, base, 150)
		appendN(t, old, m, g, 60)
		// A SIGKILL: nothing is closed or trimmed, the page cache keeps
		// every store. The killed process's descriptors and mappings are
		// left to the test's end.
		before := segmentFiles(t, e, base)
		if int64(len(before[1])) != smallIdx {
			t.Fatalf("crashed .index of %d bytes, want its preallocated %d", len(before[1]), smallIdx)
		}

		rec := &opRecorder{}
		fsys := vfs.Inject(e.fs, rec)
		s, err := Open(fsys, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanRecovery(fsys, e.dir, base, opts, RecoverOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.ApplyRecoveryActive(p)
		if err != nil || res.TruncatedBytes != 0 || res.Reason != nil || res.NextOffset != m.next() {
			t.Fatalf("ApplyRecoveryActive = %+v, %v", res, err)
		}
		for _, op := range rec.since(0, changing...) {
			if op.Kind == vfs.OpPreallocate && (op.Path == e.path(base, IndexSuffix) || op.Path == e.path(base, TimeIndexSuffix)) {
				continue // the active segment's indexes, as an active open grows them
			}
			t.Fatalf("recovery of an intact active segment made %v", op)
		}
		if s.IsSealed() {
			t.Fatal("sealed after ApplyRecoveryActive")
		}
		if !sameFiles(segmentFiles(t, e, base), before) {
			t.Fatal("recovery of an intact active segment changed its files")
		}
		checkState(t, s, m)
		checkFind(t, s, m)

		appendN(t, s, m, g, 30)
		checkState(t, s, m)
		checkFind(t, s, m)
		if err := s.Seal(); err != nil {
			t.Fatal(err)
		}
		wantOff, wantTime := kafkaIndexes(m, int64(opts.IndexIntervalBytes))
		gotOff := decodeOffsetIndex(t, readFile(t, e.fs, e.path(base, IndexSuffix)), base)
		gotTime := decodeTimeIndex(t, readFile(t, e.fs, e.path(base, TimeIndexSuffix)), base)
		if !slices.Equal(gotOff, wantOff) || !slices.Equal(gotTime, wantTime) {
			t.Fatalf("indexes after recovery, appends and seal:\n%v\n%v\nwant\n%v\n%v", gotOff, gotTime, wantOff, wantTime)
		}
		if got := readFile(t, e.fs, e.path(base, LogSuffix)); !bytes.Equal(got[:len(before[0])], before[0]) {
			t.Fatal("the recovered batches changed")
		}
		s.Close()
	})
}

// TestRecoverKeepsCloseTimeEntries: a segment that was active across a
// clean restart holds, in its time index, the final entry its close
// appended; recovery checks it against the .log and keeps it, changing
// nothing, as the active segment and once sealed. An entry that is wrong
// is dropped: the index is rewritten.
func TestRecoverKeepsCloseTimeEntries(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 2000, MaxIndexBytes: smallIdx}
		const base = 5
		// Appended, closed (the close's final time entry), reopened
		// active, appended again: then killed.
		s := mustCreate(t, e, base, opts)
		m := &model{base: base}
		g := newGen(31, base, 150)
		appendN(t, s, m, g, 40)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s, err := Open(e.fs, e.dir, base, true, opts)
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, s, m, g, 40)
		before := segmentFiles(t, e, base)
		_, rule := kafkaIndexes(m, int64(opts.IndexIntervalBytes))
		stored := decodeTimeIndex(t, before[2][:len(before[2])/12*12], base)
		for len(stored) > 0 && stored[len(stored)-1] == (timeEntry{0, base}) {
			stored = stored[:len(stored)-1] // the zero tail
		}
		// The rule's entries end with the final one a seal adds, which the
		// killed segment lacks; the close added one the rule lacks.
		closeEntry := -1
		for i, te := range stored {
			if !slices.Contains(rule, te) {
				closeEntry = i
			}
		}
		if closeEntry < 0 {
			t.Fatalf("time index %v holds no entry the rule %v lacks: the workload misses the case", stored, rule)
		}

		rec := &opRecorder{}
		fsys := vfs.Inject(e.fs, rec)
		r, err := Open(fsys, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanRecovery(fsys, e.dir, base, opts, RecoverOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ApplyRecoveryActive(p); err != nil {
			t.Fatal(err)
		}
		for _, op := range rec.since(0, changing...) {
			if op.Kind != vfs.OpPreallocate {
				t.Fatalf("recovery of an active segment with a close's time entry made %v", op)
			}
		}
		if !sameFiles(segmentFiles(t, e, base), before) {
			t.Fatal("recovery changed the files")
		}
		checkState(t, r, m)
		checkFind(t, r, m)
		if err := r.Seal(); err != nil {
			t.Fatal(err)
		}
		sealed := segmentFiles(t, e, base)
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}

		// Sealed, with the close's entry among the others: left alone too.
		from := rec.count()
		r, err = Open(fsys, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		p, err = PlanRecovery(fsys, e.dir, base, opts, RecoverOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ApplyRecovery(p); err != nil {
			t.Fatal(err)
		}
		if ops := rec.since(from, changing...); len(ops) > 0 {
			t.Fatalf("recovery of a sealed segment with a close's time entry made %v", ops)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if !sameFiles(segmentFiles(t, e, base), sealed) {
			t.Fatal("recovery changed the sealed files")
		}

		// The close's entry made wrong: dropped, the rule's entries written.
		ts := append([]byte(nil), sealed[2]...)
		ts[closeEntry*12+7]++ // its timestamp, one more than the batch's
		writeFile(t, e.fs, e.path(base, TimeIndexSuffix), ts)
		r, err = Open(e.fs, e.dir, base, false, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Recover(RecoverOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		got := decodeTimeIndex(t, readFile(t, e.fs, e.path(base, TimeIndexSuffix)), base)
		if !slices.Equal(got, rule) {
			t.Fatalf("time index after recovering a wrong entry: %v, want the rule's %v", got, rule)
		}
	})
}
