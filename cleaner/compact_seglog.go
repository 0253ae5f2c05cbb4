package cleaner

import "github.com/seglog/seglog/compaction"

// Compact runs compaction.Clean on the wrapped log.
func (a seglogLog) Compact(m *compaction.OffsetMap, firstDirty, upper int64, o compaction.Options) (compaction.Result, error) {
	return compaction.Clean(a.Log, m, firstDirty, upper, o)
}

var _ Compactable = seglogLog{}
