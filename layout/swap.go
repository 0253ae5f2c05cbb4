package layout

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/seglog/seglog/vfs"
)

// CommitCleaned is the swap protocol's commit point (see the package
// documentation): each named .cleaned file in dir is renamed to .swap and
// the directory is synced. Before it returns a crash rolls the compaction
// back (load deletes .cleaned files); after it, load completes the swap
// (Apply with the returned .swap names, or Resolve). The caller has
// flushed the .cleaned files' contents first.
func CommitCleaned(fs vfs.FS, dir string, cleaned []string) (swaps []string, err error) {
	for _, n := range cleaned {
		if _, suffix, ok := ParseFileName(n); !ok || !strings.HasSuffix(suffix, CleanedSuffix) {
			return swaps, fmt.Errorf("layout: commit %s in %s: not a %s file", n, dir, CleanedSuffix)
		}
	}
	for _, n := range cleaned {
		swap := strings.TrimSuffix(n, CleanedSuffix) + SwapSuffix
		if err := fs.Rename(filepath.Join(dir, n), filepath.Join(dir, swap)); err != nil {
			return swaps, err
		}
		swaps = append(swaps, swap)
	}
	return swaps, fs.SyncDir(dir)
}
