package seglog

import (
	"io"
	"sync"
	"time"

	"github.com/seglog/seglog/vfs"
)

// flushPool runs the background flushes of many Logs on a fixed number of
// goroutines, instead of one flusher goroutine per Log: an embedder with
// thousands of partitions (package store) shares one. It is
// embed.FlushPool: Logs use it through embed.Hooks; it must outlive them.
// Its methods are safe for concurrent use.
type flushPool struct {
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []*pooled
	logs    map[*Log]*pooled
	closed  bool
	workers sync.WaitGroup
	tickMu  sync.Mutex
	tickers map[*pooled]bool // logs with SyncPeriodic's interval
	quit    chan struct{}
}

// pooled is one Log's flusher state in a pool. run is held while a
// worker flushes the log, so removal can wait for a flush in flight.
type pooled struct {
	l        *Log
	run      sync.Mutex
	queued   bool // guarded by flushPool.mu
	stopped  bool // guarded by run
	interval time.Duration
	lastTick time.Time // guarded by flushPool.tickMu
}

// newFlushPool starts a pool of workers goroutines (at least 1) and one
// goroutine for SyncPeriodic's intervals, which checks every tick
// (default 100 ms when tick <= 0).
func newFlushPool(workers int, tick time.Duration) *flushPool {
	if workers < 1 {
		workers = 1
	}
	if tick <= 0 {
		tick = 100 * time.Millisecond
	}
	p := &flushPool{logs: make(map[*Log]*pooled), tickers: make(map[*pooled]bool), quit: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	for range workers {
		p.workers.Add(1)
		go p.work()
	}
	p.workers.Add(1)
	go p.ticks(tick)
	return p
}

// Close stops the pool's goroutines. Logs still using it flush only on
// Sync, roll's synchronous paths and Close afterwards.
func (p *flushPool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	close(p.quit)
	p.workers.Wait()
}

func (p *flushPool) add(l *Log) {
	e := &pooled{l: l}
	if l.opts.Sync == SyncPeriodic && l.opts.SyncInterval > 0 {
		e.interval = l.opts.SyncInterval
		e.lastTick = time.Now()
		p.tickMu.Lock()
		p.tickers[e] = true
		p.tickMu.Unlock()
	}
	p.mu.Lock()
	p.logs[l] = e
	p.mu.Unlock()
}

// remove takes l out of the pool, waiting for a flush of it in flight.
func (p *flushPool) remove(l *Log) {
	p.mu.Lock()
	e := p.logs[l]
	delete(p.logs, l)
	p.mu.Unlock()
	if e == nil {
		return
	}
	p.tickMu.Lock()
	delete(p.tickers, e)
	p.tickMu.Unlock()
	e.run.Lock()
	e.stopped = true
	e.run.Unlock()
}

// kick queues l for a flush unless it is queued already.
func (p *flushPool) kick(l *Log) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.logs[l]; e != nil && !e.queued && !p.closed {
		e.queued = true
		p.queue = append(p.queue, e)
		p.cond.Signal()
	}
}

func (p *flushPool) work() {
	defer p.workers.Done()
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.closed {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		e := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		e.queued = false
		p.mu.Unlock()

		e.run.Lock()
		if !e.stopped {
			l := e.l
			target := l.flushTarget.Swap(0)
			if target == 0 {
				target = l.end.Load()
			}
			if err := l.flushAll(target, true); err != nil {
				l.logger.Error("seglog: background flush failed; appends are refused until the log is reopened",
					"dir", l.dir, "err", err)
			}
		}
		e.run.Unlock()
	}
}

// ticks queues the SyncPeriodic logs whose interval has passed; a queued
// flush with no target flushes everything, as the interval does.
func (p *flushPool) ticks(tick time.Duration) {
	defer p.workers.Done()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case now := <-t.C:
			var due []*Log
			p.tickMu.Lock()
			for e := range p.tickers {
				if now.Sub(e.lastTick) >= e.interval {
					e.lastTick = now
					due = append(due, e.l)
				}
			}
			p.tickMu.Unlock()
			for _, l := range due {
				if l.end.Load() > l.RecoveryPoint() {
					l.kickFlusher(l.end.Load())
				}
			}
		}
	}
}

// lockDir takes the directory's lock, or stands in for it when the
// embedder holds one (embed.Hooks.LockHeld).
func lockDir(fs vfs.FS, dir string, held bool) (io.Closer, error) {
	if held {
		return nopCloser{}, nil
	}
	return fs.Lock(dir + "/" + LockFile)
}
