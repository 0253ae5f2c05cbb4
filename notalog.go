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
// a log (a Kafka log.dir holding partition directories, or a directory
// with other files), or an absent one inside a log's directory, which a
// new log would make unopenable (a log's directory holds no directories).
// Open refuses it without writing anything; the error is a *NotALogError
// saying what was found.
var ErrNotALog = errors.New("seglog: not a log directory")

// NotALogError describes a directory Open refused to adopt.
type NotALogError struct {
	Dir string
	// Subdirs are the directories found inside (partition directories when
	// Dir is a Kafka log.dir); Files the files that are not log files.
	Subdirs, Files []string
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
		fmt.Fprintf(&b, "directories (%s); if it is a Kafka log.dir, open one partition directory inside it", sample(e.Subdirs))
		if len(e.Files) > 0 {
			fmt.Fprintf(&b, "; and files that are not log files (%s)", sample(e.Files))
		}
	default:
		fmt.Fprintf(&b, "files that are not log files (%s); give an absent or empty directory to create a log", sample(e.Files))
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
// the directory exists.
func checkLogDir(fs vfs.FS, dir string) (exists bool, err error) {
	names, err := fs.List(dir)
	if isNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var bad NotALogError
	for _, n := range names {
		if layout.IsLogFile(n) {
			continue // by name; only strangers are looked at, so a log of thousands of segments costs no stat calls
		}
		fi, err := fs.Stat(filepath.Join(dir, n))
		if err != nil {
			if isNotExist(err) {
				continue // gone since the listing
			}
			return true, err
		}
		if fi.IsDir() {
			bad.Subdirs = append(bad.Subdirs, n)
		} else {
			bad.Files = append(bad.Files, n)
		}
	}
	if len(bad.Subdirs) > 0 || len(bad.Files) > 0 {
		bad.Dir = dir
		return true, &bad
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
