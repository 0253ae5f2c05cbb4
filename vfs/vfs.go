// Package vfs is the filesystem seam of seglog: every byte seglog reads from
// or writes to disk goes through an FS, so tests can swap the real filesystem
// for one that simulates power loss (MemFS) or injects errors (Inject).
//
// Nothing else in the module calls the os package's file functions; a lint
// test (internal/lint) enforces it.
//
// # Implementations
//
// Default (also OS()) is the real filesystem: Write appends with pwrite at a
// position the File tracks, so ReadAt and WriteAt never move it; Sync is
// fdatasync; SyncDir fsyncs the directory; Preallocate is fallocate mode 0
// and Reserve is fallocate with FALLOC_FL_KEEP_SIZE;
// Lock is flock(LOCK_EX|LOCK_NB) on a fresh open file description, so two
// Locks conflict even within one process; Map is a shared mmap and Flush is
// msync. Errors are *os.PathError values carrying the path.
//
// NewMem returns a MemFS, an in-memory filesystem for crash tests. Inject
// wraps any FS so that an Injector can fail chosen operations with
// identifiable errors (errors.Is(err, ErrInjected) and the chosen errno).
//
// # Crash model
//
// MemFS models the guarantees POSIX and Linux give, and no more:
//
//   - File data is durable only once File.Sync returns (or, for the mapped
//     range, Mapping.Flush). A crash keeps each file's contents as of its
//     last Sync: stores since then are lost, a file never synced comes
//     back empty, and an unsynced Truncate or Preallocate is undone.
//   - A directory entry (Create, Rename, Remove of a file) is durable only
//     once SyncDir of its directory returns. A crash keeps each directory's
//     entries as of its last SyncDir: a created file whose directory was not
//     synced disappears, even if its data was synced; an unsynced rename is
//     undone (the old name is back, and a replaced file with it); an
//     unsynced remove is undone.
//   - Data and entries are independent: syncing one says nothing about the
//     other. A file whose entry is durable but whose data is not comes back
//     with its last synced contents.
//   - Directories themselves (MkdirAll, and removing or renaming a
//     directory) are durable at once; see MemFS.
//
// CrashClone returns the strict result. CrashCloneWith can also keep, with a
// chosen probability and a seeded random source, part of what was not
// synced: a random prefix of each file's unsynced appended bytes (a torn
// tail, as when some pages reached the disk) or a directory's unsynced
// entries (as when the journal committed them). Recovery code must accept
// every one of these outcomes.
package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNoFd is returned by File.Fd implementations that are not backed by an
// operating-system descriptor (the in-memory FS). Callers that wanted a
// descriptor for mmap or sendfile fall back to ReadAt/WriteAt.
var ErrNoFd = errors.New("vfs: file has no OS descriptor")

// ErrClosed is the one "closed" error of seglog: whatever was used after
// its Close (a Log, a Store, a segment, an index, a read-only view)
// returns an error matching it. It lives here, in the package every layer
// imports, so that one errors.Is finds it whichever layer noticed;
// seglog, store, raftlog, segment and index re-export it under their own
// name (seglog.ErrClosed, …), the same value. A closed File of this
// package says os.ErrClosed, as the os package does.
var ErrClosed = errors.New("seglog: closed")

// ErrLocked is returned by FS.Lock when another process or another Lock call
// in this process holds the lock. It is the one "locked" error of seglog:
// a Log's Open (seglog.ErrLocked), a Store's (store.ErrLocked) and fsck's
// Repair (fsck.ErrLocked) refuse a held directory with an error wrapping
// it, each naming the holder its lock file records (layout.HolderOf).
var ErrLocked = errors.New("vfs: lock held by another owner")

// HeldError is the error inside FS.Lock's *os.PathError when the lock is
// held: it matches ErrLocked, and Owner is what the holder wrote into the
// lock file with Lock.SetOwner (empty when it wrote nothing), so that
// whoever is turned away can be told who holds it.
type HeldError struct {
	Owner []byte
	// Err is the system's error (EWOULDBLOCK), nil where there is none.
	Err error
}

// Error is ErrLocked's message with the system's error.
func (e *HeldError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v (%v)", ErrLocked, e.Err)
	}
	return ErrLocked.Error()
}

// Unwrap returns ErrLocked and the system's error.
func (e *HeldError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLocked}
	}
	return []error{ErrLocked, e.Err}
}

// Lock is a lock FS.Lock took. Close releases it.
type Lock interface {
	io.Closer
	// SetOwner replaces the lock file's contents with owner, a short
	// description of the holder that FS.Lock hands to those it turns
	// away (HeldError.Owner). It is not synced: it describes a process,
	// which a crash ends. Close empties the file again, so that a
	// released lock names nobody.
	SetOwner(owner []byte) error
}

// maxOwnerBytes bounds what FS.Lock reads of a lock file's contents for
// HeldError.Owner: a lock file is not trusted to be small.
const maxOwnerBytes = 4096

// ErrNotRegular is returned by Open and OpenReadWrite of the real
// filesystem for a name that is neither a regular file nor a directory (a
// FIFO, a socket, a device): a FIFO named like a segment would otherwise
// block the open until a writer came, and none of them is a log file.
var ErrNotRegular = errors.New("vfs: not a regular file")

// FS is a filesystem. Paths are ordinary slash-separated paths; dir arguments
// name directories.
type FS interface {
	// Create creates name, truncating it if it exists, open for reading and
	// writing. The new directory entry is not durable until SyncDir.
	Create(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and writing. Writes
	// through File.Write append at the file's current end.
	OpenReadWrite(name string) (File, error)
	// Remove removes a file (or an empty directory).
	Remove(name string) error
	// Rename atomically renames oldname to newname, replacing newname. The
	// change is not durable until SyncDir of the directories involved.
	Rename(oldname, newname string) error
	// MkdirAll creates dir and any missing parents.
	MkdirAll(dir string) error
	// List returns the names (not paths) of the entries of dir, sorted.
	List(dir string) ([]string, error)
	// Stat describes name.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory entries of dir durable (fsync of the
	// directory).
	SyncDir(dir string) error
	// Lock takes an exclusive advisory lock (flock) on the file name,
	// creating it if needed. It fails with an *os.PathError wrapping a
	// *HeldError (which matches ErrLocked) if the lock is held, by this
	// process or another. Close releases it.
	Lock(name string) (Lock, error)
}

// File is an open file.
type File interface {
	io.Closer
	io.ReaderAt
	io.WriterAt
	// Write appends p at the file's current write position, which starts at
	// the file's size when opened and advances with each Write.
	io.Writer
	// Name returns the path the file was opened with.
	Name() string
	// Size returns the current size of the file.
	Size() (int64, error)
	// Sync makes the file's data durable (fdatasync).
	Sync() error
	// Truncate sets the size of the file; the write position moves to size
	// if it was past it.
	Truncate(size int64) error
	// Preallocate reserves disk blocks for [off, off+length) and extends the
	// file size to cover it (fallocate mode 0), so a later store into that
	// range cannot fail for lack of space.
	Preallocate(off, length int64) error
	// Reserve reserves disk blocks for [off, off+length) without changing
	// the file's size (fallocate with FALLOC_FL_KEEP_SIZE). Appends into a
	// reserved range skip the filesystem's block allocation, which is a
	// large part of what a page-cache write costs; on ext4 a Truncate to
	// the size releases what was reserved past it. It is a hint: a filesystem that
	// cannot reserve makes it a no-op, and it never changes what reads see.
	Reserve(off, length int64) error
	// Map maps the first length bytes of the file into memory (length must
	// not exceed the file's size). Writes to the returned bytes reach the
	// file; they are durable after Mapping.Flush.
	Map(length int, writable bool) (Mapping, error)
	// Fd returns the operating-system descriptor, for sendfile, or an error
	// wrapping ErrNoFd.
	Fd() (uintptr, error)
}

// Mapping is a memory mapping of a file's prefix.
type Mapping interface {
	// Bytes returns the mapped memory. It must not be used after Unmap.
	Bytes() []byte
	// Flush makes stores into the mapping durable (msync).
	Flush() error
	// Unmap releases the mapping.
	Unmap() error
}
