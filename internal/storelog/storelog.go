// Package storelog hands the seglog command the *seglog.Log of one
// partition of an open store.Store, which store's exported API does not:
// a store gives its users a read-only seglog.View (Store.Log,
// Store.AcquireLog) and a Writer that appends, and keeps retention,
// compaction, truncation and closing to itself.
//
// seglog clean pointed at one partition directory of a store runs a
// one-off cleaner pass over that partition with the policy its flags give
// (cleaner.Wrap of the Log), as it does over a standalone log; it is the
// one caller. Package store sets Acquire when it is initialized (it
// cannot be imported here: it imports this package).
package storelog

import "github.com/seglog/seglog"

// Acquire returns the Log of a partition of st, a *store.Store, opened if
// it was closed and pinned open until release (as Store.AcquireLog). The
// caller must not Close it.
var Acquire func(st any, topic string, partition int32) (l *seglog.Log, release func(), err error)
