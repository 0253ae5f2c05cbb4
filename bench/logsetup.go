package bench

import (
	"context"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// span is one batch as the engine stored it.
type span struct {
	first, last int64
}

// fillLog appends batches of batch records of size bytes to l until it
// holds at least logBytes, and returns the batches' offset spans in order.
// It is setup, not timed.
func fillLog(ctx context.Context, l *seglog.Log, size, batch int, logBytes int64, r *runner) ([]span, error) {
	pool := valuePool(size, 2)
	cur := &valueCursor{pool: pool, size: size}
	recs := make([]record.Record, batch)
	var spans []span
	for l.Size() < logBytes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := range recs {
			recs[i].Value = cur.next()
		}
		info, err := l.Append(recs...)
		if err != nil {
			return nil, err
		}
		spans = append(spans, span{info.FirstOffset, info.LastOffset})
		r.add(int64(batch), 0)
	}
	return spans, l.Sync()
}
