package vfs

import (
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
)

// Kinds returns a predicate matching operations of the given kinds; with no
// kinds it matches every operation.
func Kinds(kinds ...OpKind) func(Op) bool {
	kinds = slices.Clone(kinds)
	return func(op Op) bool { return len(kinds) == 0 || slices.Contains(kinds, op.Kind) }
}

// Counter is an Injector that fails nothing and counts the operations of
// the kinds in Kinds (all operations if Kinds is empty). A test runs a
// workload once through a Counter to learn how many operations there are,
// then once per index with OnIndex.
type Counter struct {
	Kinds []OpKind
	n     atomic.Int64
}

// Inject implements Injector.
func (c *Counter) Inject(op Op) error {
	if len(c.Kinds) == 0 || slices.Contains(c.Kinds, op.Kind) {
		c.n.Add(1)
	}
	return nil
}

// Count returns the number of operations counted so far.
func (c *Counter) Count() int64 { return c.n.Load() }

// IndexInjector fails one counted operation; see OnIndex.
type IndexInjector struct {
	i     int64
	err   error
	match func(Op) bool
	seen  atomic.Int64
	mu    sync.Mutex
	fired *Op
}

// OnIndex returns an injector that fails the i-th operation of the given
// kinds (of every kind if none are given) with err, or with syscall.EIO if
// err is nil. Counting starts at 1, matching Counter.Count: after a workload
// counted n operations, OnIndex(1, …) through OnIndex(n, …) each fail one
// of them. Only that one operation fails; wrap it in Sticky for a device
// that stays broken.
func OnIndex(i int64, err error, kinds ...OpKind) *IndexInjector {
	if err == nil {
		err = syscall.EIO
	}
	return &IndexInjector{i: i, err: err, match: Kinds(kinds...)}
}

// Inject implements Injector.
func (x *IndexInjector) Inject(op Op) error {
	if !x.match(op) {
		return nil
	}
	if x.seen.Add(1) != x.i {
		return nil
	}
	x.mu.Lock()
	x.fired = &op
	x.mu.Unlock()
	return x.err
}

// Seen returns how many matching operations have been counted.
func (x *IndexInjector) Seen() int64 { return x.seen.Load() }

// Fired returns the operation that was failed, if it has happened yet. A
// test uses it to tell "the workload ended before the i-th operation" from
// a failure that went unreported.
func (x *IndexInjector) Fired() (Op, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.fired == nil {
		return Op{}, false
	}
	return *x.fired, true
}

// If returns an injector that fails every operation pred accepts with err,
// or with syscall.EIO if err is nil.
func If(pred func(Op) bool, err error) Injector {
	if err == nil {
		err = syscall.EIO
	}
	return InjectorFunc(func(op Op) error {
		if pred(op) {
			return err
		}
		return nil
	})
}

// Sticky returns an injector that asks inj until it fails an operation and
// from then on fails every operation with the same error, like a disk that
// has gone away.
func Sticky(inj Injector) Injector {
	var (
		mu     sync.Mutex
		broken error
	)
	return InjectorFunc(func(op Op) error {
		mu.Lock()
		defer mu.Unlock()
		if broken != nil {
			return broken
		}
		broken = inj.Inject(op)
		return broken
	})
}
