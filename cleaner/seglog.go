package cleaner

import (
	"encoding/binary"
	"math"
	"path/filepath"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// Wrap adapts an open *seglog.Log to the cleaner's Log; fsys is the FS the
// log was opened with (nil: the real one).
//
// This file is the only one that knows *seglog.Log. Until the Log offers
// a segment view of its own, Segments is built from the directory listing
// (names, sizes, modification times), each sealed segment's time index
// (whose last entry Seal makes the segment's largest timestamp) and, for
// the active segment, the batch headers read through Log.Read.
func Wrap(l *seglog.Log, fsys vfs.FS) Log {
	if fsys == nil {
		fsys = vfs.Default
	}
	return &seglogLog{Log: l, fs: fsys}
}

type seglogLog struct {
	*seglog.Log
	fs vfs.FS
}

// Segments lists the live segments. A segment whose files vanish while it
// is listed (a concurrent DeleteBefore) is left out.
func (a *seglogLog) Segments() []Segment {
	dir := a.Dir()
	names, err := a.fs.List(dir)
	if err != nil {
		return nil
	}
	end := a.EndOffset()
	var out []Segment
	for _, name := range names {
		base, suffix, ok := segment.ParseFileName(name)
		if !ok || suffix != segment.LogSuffix || base > end {
			continue
		}
		fi, err := a.fs.Stat(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		out = append(out, Segment{BaseOffset: base, Size: fi.Size(), Modified: fi.ModTime(), LargestTimestamp: -1})
	}
	for i := range out {
		s := &out[i]
		if i+1 < len(out) {
			s.NextOffset = out[i+1].BaseOffset
			s.LargestTimestamp = a.sealedMaxTimestamp(s.BaseOffset, s.NextOffset)
			continue
		}
		s.Active, s.NextOffset = true, end
		s.LargestTimestamp = a.headersMaxTimestamp(s.BaseOffset, end)
	}
	return out
}

// sealedMaxTimestamp reads the last entry of a sealed segment's time
// index; an index not trimmed (its last slot zero) or unreadable falls
// back to the batch headers.
func (a *seglogLog) sealedMaxTimestamp(base, next int64) int64 {
	f, err := a.fs.Open(filepath.Join(a.Dir(), segment.FileName(base, segment.TimeIndexSuffix)))
	if err == nil {
		defer f.Close()
		var e [12]byte
		if size, err := f.Size(); err == nil && size >= 12 && size%12 == 0 {
			if _, err := f.ReadAt(e[:], size-12); err == nil {
				if ts := int64(binary.BigEndian.Uint64(e[:8])); ts != 0 || binary.BigEndian.Uint32(e[8:]) != 0 {
					return ts
				}
			}
		}
	}
	return a.headersMaxTimestamp(base, next)
}

// headersMaxTimestamp is the largest batch max timestamp of the batches in
// [base, next), read header by header; -1 if none can be read.
func (a *seglogLog) headersMaxTimestamp(base, next int64) int64 {
	from := max(base, a.StartOffset())
	maxTS := int64(-1)
	for from < next {
		sl, err := a.Read(from, math.MaxInt32, seglog.ReadOptions{UpperBound: next, Bounded: true})
		if err != nil {
			return maxTS
		}
		var hdr [record.HeaderSize]byte
		for pos := int64(0); pos+record.HeaderSize <= sl.Len(); {
			if _, err := sl.ReadAt(hdr[:], pos); err != nil {
				break
			}
			b := record.Batch(hdr[:])
			maxTS = max(maxTS, b.MaxTimestamp())
			pos += int64(b.Size())
		}
		last := sl.LastOffset()
		sl.Close()
		if sl.Len() == 0 || last < from {
			break
		}
		from = last + 1
	}
	return maxTS
}
