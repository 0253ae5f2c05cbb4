package cleaner

import "github.com/seglog/seglog"

// Wrap adapts an open *seglog.Log to the cleaner's Log. This file is the
// only one that knows *seglog.Log: the rest of the package works on the
// Log interface, which tests fake.
func Wrap(l *seglog.Log) Log { return seglogLog{l} }

type seglogLog struct{ *seglog.Log }

// Segments converts the Log's own view.
func (a seglogLog) Segments() []Segment {
	infos := a.Log.Segments()
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
