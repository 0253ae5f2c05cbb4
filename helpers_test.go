package seglog

import (
	"fmt"

	"github.com/seglog/seglog/record"
)

// recordsAt returns n records meant for offsets base.., whose values are
// crashValue of those offsets.
func recordsAt(base int64, n int) []record.Record {
	recs := make([]record.Record, n)
	for j := range recs {
		off := base + int64(j)
		recs[j] = record.Record{
			Key:       []byte{byte('k'), byte('0' + off%10)},
			Value:     crashValue(off, 16+int(off*37%300)),
			Timestamp: 1_700_000_000_000 + off,
		}
	}
	return recs
}

// debugSegments describes the segment set, for failure messages.
func (l *Log) debugSegments() string {
	out := ""
	l.segs.RLock()
	defer l.segs.RUnlock()
	l.segs.tree.Ascend(func(it segItem) bool {
		out += fmt.Sprintf("[base %d size %d next %d sealed %v] ", it.base, it.seg.Size(), it.seg.NextOffset(), it.seg.IsSealed())
		return true
	})
	return out
}
