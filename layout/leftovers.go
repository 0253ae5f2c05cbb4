package layout

import (
	"errors"
	iofs "io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seglog/seglog/vfs"
)

// Files says which of a segment's files a directory holds.
type Files uint8

// Bits of Files.
const (
	HasLog Files = 1 << iota
	HasIndex
	HasTimeIndex
	HasTxnIndex
)

// segmentSuffixes pairs each Files bit with its suffix.
var segmentSuffixes = []struct {
	bit    Files
	suffix string
}{{HasLog, LogSuffix}, {HasIndex, IndexSuffix}, {HasTimeIndex, TimeIndexSuffix}, {HasTxnIndex, TxnIndexSuffix}}

// SegmentFiles parses a directory listing once: for each base offset which
// of a segment's files are there, and the bases that have a .log, sorted.
// Files with a temporary suffix are not counted.
func SegmentFiles(names []string) (map[int64]Files, []int64) {
	files := make(map[int64]Files, len(names)/3+1)
	var bases []int64
	for _, n := range names {
		base, suffix, ok := ParseFileName(n)
		if !ok {
			continue
		}
		for _, s := range segmentSuffixes {
			if suffix == s.suffix {
				files[base] |= s.bit
				if s.bit == HasLog {
					bases = append(bases, base)
				}
			}
		}
	}
	slices.Sort(bases)
	return files, bases
}

// SegmentFileNames returns the names of every file a segment at base may
// have (log, indexes), present or not.
func SegmentFileNames(base int64) []string {
	out := make([]string, len(segmentSuffixes))
	for i, s := range segmentSuffixes {
		out[i] = FileName(base, s.suffix)
	}
	return out
}

// Orphans returns the index files in names with no .log beside them; Kafka's
// loader deletes them.
func Orphans(names []string) []string {
	files, _ := SegmentFiles(names)
	var out []string
	for _, n := range names {
		base, suffix, ok := ParseFileName(n)
		if !ok || files[base]&HasLog != 0 {
			continue
		}
		if suffix == IndexSuffix || suffix == TimeIndexSuffix || suffix == TxnIndexSuffix {
			out = append(out, n)
		}
	}
	return out
}

// Plan is what resolving a directory's leftovers will do, decided from a
// listing before anything changes.
type Plan struct {
	// Remove are names to delete: .deleted files, every .cleaned file, a
	// .swap at or above the lowest .cleaned base, checkpoint .tmp files.
	Remove []string
	// Swaps are the .swap files to complete.
	Swaps []string
}

// Empty reports whether the plan changes nothing.
func (p Plan) Empty() bool { return len(p.Remove) == 0 && len(p.Swaps) == 0 }

// PlanLeftovers decides, as Kafka's LogLoader does, what to do with what a
// crash interrupted (see the package documentation for the swap
// protocol): .deleted files are deleted; a .swap at or above the lowest
// .cleaned base belongs to a compaction that had not committed and is
// deleted with all .cleaned files; the remaining .swap files replace the
// segments they cover; checkpoint .tmp files are deleted.
func PlanLeftovers(names []string) Plan {
	minCleaned := int64(math.MaxInt64)
	var p Plan
	var swaps []string
	for _, n := range names {
		if strings.HasSuffix(n, CheckpointTmpSuffix) {
			p.Remove = append(p.Remove, n)
			continue
		}
		base, suffix, ok := ParseFileName(n)
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(suffix, DeletedSuffix):
			p.Remove = append(p.Remove, n)
		case strings.HasSuffix(suffix, CleanedSuffix):
			minCleaned = min(minCleaned, base)
			p.Remove = append(p.Remove, n)
		case strings.HasSuffix(suffix, SwapSuffix):
			swaps = append(swaps, n)
		}
	}
	for _, n := range swaps {
		if base, _, _ := ParseFileName(n); base >= minCleaned {
			p.Remove = append(p.Remove, n)
			continue
		}
		p.Swaps = append(p.Swaps, n)
	}
	return p
}

// LogEnd returns the offset after the last whole entry of the .log at path,
// whose segment starts at base (segment.ScanNextOffset). The swap protocol
// needs it to know which segments a .swap replaces; layout knows no batches.
type LogEnd func(fs vfs.FS, path string, base int64) (next int64, err error)

// Apply carries out p in dir: deletions first, then the swaps (every
// segment file whose base lies in the range the .swap segments cover is
// deleted, then each .swap is renamed to its final name). names is the
// listing p was planned from. The caller makes the directory durable
// (SyncDir) before anything depends on the result.
func Apply(fs vfs.FS, dir string, names []string, p Plan, end LogEnd) error {
	for _, n := range p.Remove {
		if err := remove(fs, filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	if len(p.Swaps) == 0 {
		return nil
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, n := range p.Swaps {
		base, suffix, _ := ParseFileName(n)
		lo = min(lo, base)
		if strings.TrimSuffix(suffix, SwapSuffix) == LogSuffix {
			next, err := end(fs, filepath.Join(dir, n), base)
			if err != nil {
				return err
			}
			hi = max(hi, next)
		}
	}
	for _, n := range names {
		base, suffix, ok := ParseFileName(n)
		if !ok || strings.HasSuffix(suffix, DeletedSuffix) || strings.HasSuffix(suffix, SwapSuffix) || strings.HasSuffix(suffix, CleanedSuffix) {
			continue
		}
		if base >= lo && base < hi {
			if err := remove(fs, filepath.Join(dir, n)); err != nil {
				return err
			}
		}
	}
	for _, n := range p.Swaps {
		if err := fs.Rename(filepath.Join(dir, n), filepath.Join(dir, strings.TrimSuffix(n, SwapSuffix))); err != nil {
			return err
		}
	}
	return nil
}

// Resolve resolves every leftover in dir as Kafka's loader does
// (PlanLeftovers, Apply, then Orphans deleted), makes the changes durable
// and returns the listing afterwards and whether anything changed. It is
// what fsck's repair runs; Open runs the same steps, split so that its
// check of synced data comes before any of them.
func Resolve(fs vfs.FS, dir string, end LogEnd) (names []string, changed bool, err error) {
	if names, err = fs.List(dir); err != nil {
		return nil, false, err
	}
	p := PlanLeftovers(names)
	if !p.Empty() {
		if err := Apply(fs, dir, names, p, end); err != nil {
			return nil, true, err
		}
		changed = true
		if names, err = fs.List(dir); err != nil {
			return nil, true, err
		}
	}
	if orphans := Orphans(names); len(orphans) > 0 {
		for _, n := range orphans {
			if err := remove(fs, filepath.Join(dir, n)); err != nil {
				return nil, true, err
			}
		}
		changed = true
		if names, err = fs.List(dir); err != nil {
			return nil, true, err
		}
	}
	if changed {
		if err := fs.SyncDir(dir); err != nil {
			return nil, true, err
		}
	}
	return names, changed, nil
}

func remove(fs vfs.FS, path string) error {
	if err := fs.Remove(path); err != nil && !errors.Is(err, iofs.ErrNotExist) {
		return err
	}
	return nil
}
