package seglog

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// ErrNotALog: Open was given a directory that is neither absent, empty nor
// a log (a Kafka log.dir holding partition directories, a log with a
// directory inside, or a directory holding only files that are not a
// log's), or an absent one inside a log's directory, which a new log would
// make unopenable (a log's directory holds no directories). A log with a
// stray file beside its segments (notes.txt) is a log: the file is
// ignored, as Kafka ignores it.
// Open refuses it without writing anything; the error is a *NotALogError
// saying what was found.
var ErrNotALog = errors.New("seglog: not a log directory")

// NotALogError describes a directory Open refused to adopt: Dir, and
// what it holds instead. It matches ErrNotALog. store.NotAStoreError and
// raftlog.NotAStoreError follow the same pattern (the path, what was
// found, a sentinel for errors.Is).
type NotALogError struct {
	Dir string
	// Subdirs are the directories found inside (partition directories when
	// Dir is a Kafka log.dir); Files the files that are not a log's (with
	// Subdirs, or in a directory holding no segment file).
	Subdirs, Files []string
	// Misnamed are files named like a segment's that are not one
	// ("server.log", "123.log"): Kafka's loader would misread them.
	Misnamed []string
	// InLog is set instead when Dir is absent and its nearest existing
	// ancestor, InLog, is a log's directory (it holds segment files).
	InLog string
}

// Error names what was found and what to do.
func (e *NotALogError) Error() string {
	var b strings.Builder
	if e.InLog != "" {
		fmt.Fprintf(&b, "seglog: %s would be created inside the log in %s, which then could not be opened (a log's directory holds no directories); give a directory outside it", e.Dir, e.InLog)
		return b.String()
	}
	fmt.Fprintf(&b, "seglog: %s is not a log directory: it holds ", e.Dir)
	switch {
	case len(e.Subdirs) > 0:
		fmt.Fprintf(&b, "directories (%s); if it is a Kafka log.dir, open one partition directory inside it (a log's directory holds no directories)", sample(e.Subdirs))
		if len(e.Files) > 0 {
			fmt.Fprintf(&b, "; and files that are not log files (%s)", sample(e.Files))
		}
		if len(e.Misnamed) > 0 {
			fmt.Fprintf(&b, "; and files named like segment files that are not one (%s)", sample(e.Misnamed))
		}
	case len(e.Misnamed) > 0:
		fmt.Fprintf(&b, "files named like segment files that are not one (%s): the name of a segment file is its base offset in 20 digits, and Kafka's loader misreads or deletes the others; rename or move them", sample(e.Misnamed))
	default:
		fmt.Fprintf(&b, "no segment files, only files that are not a log's (%s); give a log's directory, or an absent or empty one to create a log", sample(e.Files))
	}
	return b.String()
}

// Is makes the error match ErrNotALog.
func (e *NotALogError) Is(target error) bool { return target == ErrNotALog }

func sample(names []string) string {
	const show = 5
	if len(names) <= show {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:show], ", "), len(names)-show)
}

// checkLogDir refuses a directory that is not absent, empty or a log, before
// anything is written to it (not even the lock file). It reports whether
// the directory exists. What a directory is comes from layout's one
// classification (layout.ReadContents), which fsck, dump and every command
// share: a log with a file that is not a log's beside it (notes.txt) is
// still a log, and the file is ignored, as Kafka's loader ignores it; a
// directory holding directories, or only files that are not a log's, is
// the wrong directory, and nothing adopts it.
func checkLogDir(fs vfs.FS, dir string) (exists bool, err error) {
	c, err := layout.ReadContents(fs, dir)
	if isNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if c.Kind() == layout.DirNotALog {
		return true, &NotALogError{Dir: dir, Subdirs: c.Subdirs, Files: c.Strays, Misnamed: c.Misnamed}
	}
	return true, nil
}

// checkNotInLog refuses to create dir (absent) inside a log's directory:
// its nearest existing ancestor must not hold segment files, or creating
// dir would turn that log into a directory Open refuses (it would hold a
// directory). A Kafka log.dir holds partition directories but no segment
// files, so partitions are still created inside one.
func checkNotInLog(fs vfs.FS, dir string) error {
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		names, err := fs.List(p)
		if err == nil {
			for _, n := range names {
				if _, _, ok := layout.ParseFileName(n); ok {
					return &NotALogError{Dir: dir, InLog: p}
				}
			}
			return nil
		}
		if !isNotExist(err) {
			return err
		}
		if up := filepath.Dir(p); up == p {
			return nil
		}
	}
}
