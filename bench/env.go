package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/seglog/seglog/vfs"
)

// ErrInvalidConfig is wrapped by every error about a Config that cannot
// run (a negative size, no records and no duration, ...).
var ErrInvalidConfig = errors.New("bench: invalid config")

// ErrVerify is wrapped by errors from read-back verification: the engine
// (or the baseline) did not store or send what the workload wrote.
var ErrVerify = errors.New("bench: verification failed")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}

func verifyErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrVerify}, args...)...)
}

// Progress receives how far a run has got, a few times a second. The
// CLI draws it as a progress bar; nil means no reporting.
type Progress interface {
	// Start begins a phase of total units (records, or milliseconds for
	// a run bounded by time; unit says which).
	Start(phase string, total int64, unit string)
	// Set reports units done so far in the phase.
	Set(done int64)
	// Finish ends the phase.
	Finish()
}

// Env is where and how a workload runs.
type Env struct {
	// Dir is the parent of the run's temporary directory; empty means
	// os.TempDir(). Each run makes its own directory below it and removes
	// it at the end.
	Dir string
	// Progress, when set, is told how far the run has got.
	Progress Progress
	// SampleEvery is the period of the throughput samples kept for plots.
	// Default 100 ms.
	SampleEvery time.Duration
}

func (e Env) sampleEvery() time.Duration {
	if e.SampleEvery <= 0 {
		return 100 * time.Millisecond
	}
	return e.SampleEvery
}

// fs is the filesystem of every file the benchmarks touch. Real files are
// the point of a benchmark; going through vfs keeps the lint rule whole.
var fs = vfs.Default

// tempDir makes a fresh directory for one run below e.Dir.
func (e Env) tempDir(workload string) (string, error) { return MakeRunDir(e.Dir, workload) }

// MakeRunDir makes a run's own directory, seglog-bench-<workload>-<pid>-<random>,
// below parent (empty: os.TempDir()) and returns its path; the caller
// removes it when the run ends. parent must exist already: a mistyped
// mount point would otherwise be created on whatever disk holds its
// parent, and the run would measure that disk (and leave the directories
// behind).
func MakeRunDir(parent, workload string) (string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	fi, err := fs.Stat(parent)
	if err != nil {
		return "", fmt.Errorf("bench: the directory to run in: %w (create it first, on the disk to measure)", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("bench: the directory to run in, %s, is not a directory", parent)
	}
	dir := filepath.Join(parent, fmt.Sprintf("seglog-bench-%s-%d-%08x", workload, os.Getpid(), rand.Uint32()))
	if _, err := fs.Stat(dir); err == nil {
		return "", fmt.Errorf("bench: %s already exists", dir)
	}
	if err := fs.MkdirAll(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// discardLogger is the Log's logger unless a config sets one: recovery
// messages are not part of a benchmark's output.
var discardLogger = slog.New(slog.DiscardHandler)
