package bench

import (
	"context"
	"path/filepath"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
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

// warmLog is a log written by openFilled, with the runner that showed
// its writing.
type warmLog struct {
	l     *seglog.Log
	r     *runner
	spans []span
	dir   string
}

// openFilled opens a log in a fresh temporary directory for workload and
// fills it with fillLog under a "<workload>: writing the log" progress
// bar. On error nothing is left behind; otherwise close undoes it all.
func openFilled(ctx context.Context, env Env, workload string, opts seglog.Options, size, batch int, logBytes int64) (*warmLog, error) {
	dir, err := env.tempDir(workload)
	if err != nil {
		return nil, err
	}
	l, err := seglog.Open(filepath.Join(dir, "log-0"), opts)
	if err != nil {
		vfs.RemoveAll(fs, dir)
		return nil, err
	}
	r := newRunner(env)
	r.begin(workload+": writing the log", logBytes/int64(size+10), false)
	spans, err := fillLog(ctx, l, size, batch, logBytes, r)
	r.end()
	if err != nil {
		l.Close()
		vfs.RemoveAll(fs, dir)
		return nil, err
	}
	return &warmLog{l: l, r: r, spans: spans, dir: dir}, nil
}

func (w *warmLog) close() {
	w.l.Close()
	vfs.RemoveAll(fs, w.dir)
}
