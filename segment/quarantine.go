package segment

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path/filepath"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// Quarantine describes bytes of a segment's .log that recovery set aside in
// a quarantine file (layout.QuarantineName) instead of deleting them: the
// rest of a .log after damage that valid batches follow, or a whole later
// segment that Kafka's rule (bytes lost in one segment make every later one
// unreachable) would delete. Neither Kafka nor seglog reads a quarantine
// file as part of the log; `seglog dump FILE` shows its batches and fsck
// lists it.
type Quarantine struct {
	// File is the quarantine file's path; Source is the .log the bytes came
	// from (the bytes begin at Remnant.Pos in it).
	File, Source string
	// Reason is the damage at Pos; nil for a whole later segment.
	Reason error
	// Remnant describes the bytes: where they began in Source, how many,
	// and the valid batches and records found in them.
	Remnant
}

// String describes q for log lines.
func (q *Quarantine) String() string {
	what := "a segment after a cut"
	if q.Reason != nil {
		what = fmt.Sprintf("damage (%v)", q.Reason)
	}
	return fmt.Sprintf("%s: %s from %s, kept after %s", q.File, q.Remnant, q.Source, what)
}

// QuarantineTail keeps what a recovery plan of the segment at base in dir
// would cut, when it is more than a torn tail: if the plan found damage
// followed by valid entries (RecoverResult.AfterDamage.HoldsValid), the
// .log's bytes from the damage to its end are copied, byte for byte, into a
// new quarantine file, which is synced, and so is dir's entry for it, before
// QuarantineTail returns: only then may ApplyRecovery truncate the .log. It
// returns nil when there is nothing to keep.
//
// An existing quarantine file is never overwritten. One that already holds
// exactly these bytes is reused (a crash came after the copy and before the
// truncation, and recovery runs again); one that holds a prefix of them (a
// crash during the copy) is completed; otherwise the next free name is
// taken.
func QuarantineTail(fsys vfs.FS, dir string, p *RecoveryPlan) (*Quarantine, error) {
	res := p.res
	if res.Reason == nil || !res.AfterDamage.HoldsValid() {
		return nil, nil
	}
	src, err := fsys.Open(p.path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if size, err := src.Size(); err != nil {
		return nil, err
	} else if size != p.fileSize {
		return nil, fmt.Errorf("segment: %s changed size (%d, planned at %d bytes) between recovery's scan and its quarantine", p.path, size, p.fileSize)
	}
	return quarantineCopy(fsys, dir, p.base, &Quarantine{Source: p.path, Reason: res.Reason, Remnant: res.AfterDamage}, src, p.fileSize)
}

// QuarantineFrom is QuarantineTail for a cut that is not recovery's own
// (fsck's repair cuts where its deeper check finds damage the engine
// accepts): if the bytes of the segment at base from pos to the end of its
// .log hold a valid entry (ScanRemnant), they are copied to a quarantine
// file as QuarantineTail copies them, and the quarantine is returned; nil
// when they hold none. reason is the damage at pos, for the report.
func QuarantineFrom(fsys vfs.FS, dir string, base, pos int64, reason error) (*Quarantine, error) {
	path := filepath.Join(dir, FileName(base, LogSuffix))
	src, err := fsys.Open(path)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	size, err := src.Size()
	if err != nil {
		return nil, err
	}
	rem, err := scanRemnant(src, path, pos, size)
	if err != nil || !rem.HoldsValid() {
		return nil, err
	}
	return quarantineCopy(fsys, dir, base, &Quarantine{Source: path, Reason: reason, Remnant: rem}, src, size)
}

// quarantineCopy copies q's bytes of src (whose size is size) to the first
// quarantine file name that is free or already holds a prefix of them,
// syncs it and dir, and returns q with File set.
func quarantineCopy(fsys vfs.FS, dir string, base int64, q *Quarantine, src io.ReaderAt, size int64) (*Quarantine, error) {
	want := io.NewSectionReader(src, q.Pos, size-q.Pos)
	for n := 0; ; n++ {
		path := filepath.Join(dir, layout.QuarantineName(base, q.Pos, n))
		done, err := copyQuarantine(fsys, path, want)
		if err != nil {
			return nil, err
		}
		if done {
			if err := fsys.SyncDir(dir); err != nil {
				return nil, err
			}
			q.File = path
			return q, nil
		}
	}
}

// copyQuarantine makes path hold exactly the bytes of want, durably
// (file data synced; the caller syncs the directory), and reports true; or
// reports false, changing nothing, when path holds something else that is
// not a prefix of want.
func copyQuarantine(fsys vfs.FS, path string, want *io.SectionReader) (bool, error) {
	var have int64
	f, err := fsys.OpenReadWrite(path)
	switch {
	case errors.Is(err, iofs.ErrNotExist):
		if f, err = fsys.Create(path); err != nil {
			return false, err
		}
	case err != nil:
		return false, err
	default:
		if have, err = f.Size(); err != nil {
			f.Close()
			return false, err
		}
		prefix := have <= want.Size()
		if prefix {
			prefix, err = sameBytes(f, want, have)
		}
		if err != nil || !prefix {
			f.Close()
			return false, err
		}
	}
	buf := make([]byte, min(want.Size()-have, 1<<20))
	for off := have; off < want.Size(); {
		n, err := want.ReadAt(buf[:min(int64(len(buf)), want.Size()-off)], off)
		if n > 0 {
			if _, werr := f.WriteAt(buf[:n], off); werr != nil {
				f.Close()
				return false, werr
			}
			off += int64(n)
		}
		if err != nil && !(errors.Is(err, io.EOF) && off == want.Size()) {
			f.Close()
			return false, err
		}
	}
	return true, errors.Join(f.Sync(), f.Close())
}

// sameBytes reports whether the first n bytes of f and want are equal.
func sameBytes(f io.ReaderAt, want io.ReaderAt, n int64) (bool, error) {
	const chunk = 1 << 20
	a, b := make([]byte, min(n, chunk)), make([]byte, min(n, chunk))
	for off := int64(0); off < n; {
		k := int(min(chunk, n-off))
		if _, err := f.ReadAt(a[:k], off); err != nil {
			return false, err
		}
		if _, err := want.ReadAt(b[:k], off); err != nil {
			return false, err
		}
		if !bytes.Equal(a[:k], b[:k]) {
			return false, nil
		}
		off += int64(k)
	}
	return true, nil
}

// SetAsideSegment removes the segment at base in dir from the log, as
// recovery does with every segment after one it cut (Kafka's rule), without
// deleting a valid byte: a .log holding any valid entry (ScanRemnant from
// byte 0) is renamed to a new quarantine file (position 0) and the
// quarantine is returned; a .log holding none is deleted, and nil is
// returned. Either way the segment's index files go (they are rebuilt from
// a .log, and the quarantined one is not a segment any more). The caller
// syncs dir.
func SetAsideSegment(fsys vfs.FS, dir string, base int64) (*Quarantine, error) {
	src := filepath.Join(dir, FileName(base, LogSuffix))
	rem, err := ScanRemnant(fsys, src, 0)
	if err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return nil, err
	}
	var q *Quarantine
	if err == nil && rem.HoldsValid() {
		for n := 0; ; n++ {
			path := filepath.Join(dir, layout.QuarantineName(base, 0, n))
			if _, err := fsys.Stat(path); err == nil {
				continue // never replace an existing quarantine file
			} else if !errors.Is(err, iofs.ErrNotExist) {
				return nil, err
			}
			if err := fsys.Rename(src, path); err != nil {
				return nil, err
			}
			q = &Quarantine{File: path, Source: src, Remnant: rem}
			break
		}
	}
	for _, name := range layout.SegmentFileNames(base) {
		if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return q, err
		}
	}
	return q, nil
}
