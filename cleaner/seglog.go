package cleaner

import "github.com/seglog/seglog"

// Wrap adapts an open *seglog.Log to the cleaner's Log. The adapter is
// also Compactable, so a compacting Policy compacts it. The Log must stay
// open until Remove of it has returned.
func Wrap(l *seglog.Log) Log { return seglogLog{l} }

type seglogLog struct{ *seglog.Log }

// Segments converts the Log's own view.
func (a seglogLog) Segments() []Segment { return SegmentsOf(a.Log.View()) }

// SegmentsOf returns the segments of a log as the cleaner sees them, from
// a read-only view of it: what Decide plans with, for a caller that
// previews a pass without running one.
func SegmentsOf(v seglog.View) []Segment {
	infos := v.Segments()
	out := make([]Segment, len(infos))
	for i, s := range infos {
		out[i] = Segment{
			BaseOffset:       s.BaseOffset,
			NextOffset:       s.NextOffset,
			Size:             s.Size,
			LargestTimestamp: s.LargestTimestamp,
			Modified:         s.Modified,
			Active:           s.Active,
		}
	}
	return out
}
