package layout

import (
	"errors"

	"github.com/seglog/seglog/vfs"
)

// HolderOf reads who holds a lock that FS.Lock refused: held reports that
// err is such a refusal (a *vfs.HeldError, matching vfs.ErrLocked), and h
// and named are what its lock file says (ParseHolder). The Log, a Store
// and fsck --repair name the holder in their refusals with it.
func HolderOf(err error) (h Holder, named, held bool) {
	var he *vfs.HeldError
	if !errors.As(err, &he) {
		return Holder{}, false, false
	}
	h, named = ParseHolder(he.Owner)
	return h, named, true
}
